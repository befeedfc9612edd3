"""hillclimb kernel workspace: the targets' kernels (``gdn``, ``matmul``: agent-editable) and their
harnesses (``harness``, ``matmul_harness``: protected).

Both harnesses build on hillclimb-bench. ``hillclimb setup`` installs it into ``.venv``; a machine
it did not prepare (a TPU VM or a Ray worker, whose setup command installs JAX, not this
repository's packages) uses the copy in this tree, ``packages/hillclimb-bench/src`` -- protected
like the harness, so a candidate's tree holds the base's copy. An installed copy wins.
"""

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("hillclimb_bench") is None:
    _TREE_COPY = Path(__file__).resolve().parent.parent / "packages" / "hillclimb-bench" / "src"
    sys.path.append(str(_TREE_COPY))
