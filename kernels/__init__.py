"""hillclimb kernel workspace: ``gdn`` (the agent-editable kernel) and ``harness`` (protected)."""
