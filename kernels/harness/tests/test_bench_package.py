"""Where the benches find hillclimb-bench: the copy ``hillclimb setup`` installed, else (a TPU VM or
Ray worker that setup never prepared) this tree's ``packages/hillclimb-bench/src``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hillclimb_bench
import numpy as np
import pytest

pytestmark = pytest.mark.harness

REPO = Path(__file__).resolve().parents[3]
PROBE = "import kernels, hillclimb_bench; print(hillclimb_bench.__file__)"


def test_the_installed_copy_wins() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert Path(done.stdout.strip()) == Path(hillclimb_bench.__file__)
    assert "site-packages" in done.stdout


def test_without_an_installed_copy_the_tree_copy_is_used(tmp_path: Path) -> None:
    # An interpreter without site-packages (-S) that sees numpy and this repository only: no
    # installed hillclimb_bench, as on a machine `hillclimb setup` did not prepare.
    site = tmp_path / "site"
    site.mkdir()
    numpy_dir = Path(np.__file__).parent
    for name in ("numpy", "numpy.libs"):
        if (numpy_dir.parent / name).exists():
            (site / name).symlink_to(numpy_dir.parent / name)
    done = subprocess.run(
        [sys.executable, "-S", "-c", PROBE],
        cwd=REPO,
        env={"PYTHONPATH": f"{REPO}:{site}"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    tree_copy = REPO / "packages" / "hillclimb-bench" / "src" / "hillclimb_bench" / "__init__.py"
    assert Path(done.stdout.strip()) == tree_copy
