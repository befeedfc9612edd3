"""Protected harness of the gdn target: oracles, correctness suite, TPU-rules lint and bench.

An agent may not edit anything under ``kernels/harness`` (see ``hillclimb.yml``); every number the
loop acts on is computed here.
"""
