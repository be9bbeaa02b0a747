"""Real interpreters built here (issue 27): Lua 5.4 and 5.5 and LuaJIT 2.1 from
the sources in lupa's source distribution, with the lab's baseline check,
timing harness and crossing measurement applied to them.

source.py fetches and unpacks the sources, build.py builds the interpreters,
baseline.py reads their dispatch, bench.py times programs on them and
exits.py prices LuaJIT's trace exits against shimlab's crossings.
"""
