#!/bin/sh
# A command agent that decides no change is worth making.
printf '{"hypothesis":"nothing left","summary":"no change","next_idea":"profile again"}' > "$HILLCLIMB_RESULT_FILE"
