#!/bin/sh
# A command agent whose tool the sandbox does not show (a pyenv shim, a tool under the user's home):
# the shell says "not found" and exits 127.
cd "$HILLCLIMB_WORKDIR"
pyenv-shim-python3 -c 'print("never")'
