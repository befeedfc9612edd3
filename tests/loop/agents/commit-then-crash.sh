#!/bin/sh
# A command agent that makes a real improvement, commits it, and then exits non-zero.
set -e
cd "$HILLCLIMB_WORKDIR"
sed -i 's/DELAY_S = 0.02/DELAY_S = 0.008/' toy/kernel.py
git -c user.name=agent -c user.email=agent@example.invalid commit -q -am "Shorter delay"
printf '{"hypothesis":"less waiting","summary":"shorter delay","next_idea":"none"}' > "$HILLCLIMB_RESULT_FILE"
exit 1
