#!/bin/sh
# Prints a line every 0.2 s for $1 lines: output keeps the idle timer from firing.
i=0
while [ "$i" -lt "$1" ]; do echo "tick $i"; i=$((i+1)); sleep 0.2; done
