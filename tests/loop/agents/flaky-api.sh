#!/bin/sh
# A command agent whose model API is the URL in $1: while the URL answers an error (or nothing), the
# agent reports an infrastructure failure (exit 75, EX_TEMPFAIL), as a CLI does after a 429 or a 5xx;
# once it answers, the agent makes a real improvement and commits it.
set -e
cd "$HILLCLIMB_WORKDIR"
if ! python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' "$1" 2>/dev/null; then
  echo "model API: $1 is not answering" >&2
  exit 75
fi
sed -i 's/DELAY_S = 0.02/DELAY_S = 0.008/' toy/kernel.py
git -c user.name=agent -c user.email=agent@example.invalid commit -q -am "Shorter delay"
printf '{"hypothesis":"less waiting","summary":"shorter delay","next_idea":"none"}' > "$HILLCLIMB_RESULT_FILE"
