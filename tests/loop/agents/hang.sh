#!/bin/sh
# A command agent that prints one line and then hangs (the loop's idle timeout must kill it).
echo "agent: thinking"
exec sleep 300
