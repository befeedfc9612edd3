#!/bin/sh
# A command agent that runs the prompt's CPU test command the way Codex runs its commands: in a login
# shell, whose /etc/profile resets PATH (Debian's and Ubuntu's do), with nothing of the agent's own
# environment but HOME. It changes nothing and reports in its result how the command ended.
set -u
cmd=$(sed -n 's/.*Run the CPU tests yourself if you can (`\(.*\)`).*/\1/p')
env -i HOME="$HOME" /bin/sh -lc "$cmd" > "$(dirname "$HILLCLIMB_RESULT_FILE")/tests.log" 2>&1
status=$?
printf '{"hypothesis":"none","summary":"tests exit %s","next_idea":"none"}' "$status" > "$HILLCLIMB_RESULT_FILE"
