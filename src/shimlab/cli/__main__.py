"""`python -m shimlab.cli ...`, the same as the `shimlab` command (whose
entry point is shimlab.console: here this package is imported already, so
only what console.main does after the imports applies)."""
import sys

from ..console import main

sys.exit(main())
