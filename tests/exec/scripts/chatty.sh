#!/bin/sh
# Prints to both streams, including a secret, then exits with the code given as $1.
echo "out line 1"
echo "err line 1" >&2
echo "token=$SECRET_VALUE"
printf 'partial'
exit "${1:-0}"
