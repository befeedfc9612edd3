#!/bin/sh
# Starts a child that would outlive us, prints once, then sleeps: tests the process-group kill.
sleep 300 &
echo "started $!"
sleep 300
