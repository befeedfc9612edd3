"""Harness of the ``matmul`` target (protected): oracle, presets, bench and tests of
``kernels.matmul``. The agent may edit ``kernels/matmul/`` only."""
