"""`python -m shimlab.cli ...`, the same as the `shimlab` command."""
import sys

from . import main

sys.exit(main())
