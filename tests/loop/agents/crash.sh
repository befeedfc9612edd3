#!/bin/sh
# A command agent that crashes at once, changing nothing.
echo "agent: something went wrong" >&2
exit 7
