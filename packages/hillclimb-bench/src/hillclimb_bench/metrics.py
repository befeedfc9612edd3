"""The metrics document's common parts (hillclimb's ``schemas/metrics.schema.json``) and its
writing: one measurement's statistics, versions, git state, the timestamp, an atomic write."""

from __future__ import annotations

import contextlib
import datetime as _dt
import importlib.metadata as _md
import json
import os
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .peaks import mfu

SCHEMA_ID = "hillclimb.metrics/v1"
CLOCK_JAX = "perf_counter+block_until_ready"
CLOCK_HOST = "perf_counter"
# The process's CPU time on the one core it is pinned to (hillclimb_bench.timing says why).
CLOCK_CPU = "process_time+block_until_ready (one pinned core)"
# Accelerator runtimes whose versions are recorded when installed.
RUNTIME_DISTS = ("libtpu", "libtpu-nightly", "jax-cuda12-plugin")
# This package: the export's code is part of what the programs' bytes depend on.
OWN_DIST = "hillclimb-bench"
_TINY_MS = 1e-9  # the schema wants positive times; a sample below a picosecond is clamped to it


def created_at() -> str:
    """Now, UTC, to the second: ``2025-11-21T10:00:00Z``."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return now.replace("+00:00", "Z")


def clock_names(clock: str) -> dict[str, str]:
    """``timing.clock`` (the clock of ``samples_ms``) and, where that is CPU time,
    ``timing.wall_clock`` (the clock of ``wall_samples_ms`` beside it)."""
    if clock == "cpu":
        return {"clock": CLOCK_CPU, "wall_clock": CLOCK_JAX}
    return {"clock": CLOCK_JAX}


def measurement(
    samples_ms: Sequence[float],
    *,
    flops: float,
    peak_flops_per_s: float | None,
    tokens: int = 0,
    executed_flops: float | None = None,
    wall_samples_ms: Sequence[float] | None = None,
) -> dict[str, Any]:
    """One entry of ``measurements``: the samples, their median and p10/p90, throughput and MFU
    (``None`` without a peak or without FLOPs); and the same calls on the wall clock, when the
    samples are on another."""
    arr = np.asarray(samples_ms, dtype=np.float64)
    median = max(float(np.median(arr)), _TINY_MS)
    wall = (
        {}
        if wall_samples_ms is None
        else {
            "wall_samples_ms": [max(round(float(s), 6), _TINY_MS) for s in wall_samples_ms],
            "wall_median_ms": max(float(np.median(wall_samples_ms)), _TINY_MS),
        }
    )
    return {
        **wall,
        "samples_ms": [max(round(float(s), 6), _TINY_MS) for s in samples_ms],
        "median_ms": median,
        "p10_ms": max(float(np.percentile(arr, 10)), _TINY_MS),
        "p90_ms": max(float(np.percentile(arr, 90)), _TINY_MS),
        "flops": float(flops),
        "executed_flops": executed_flops,
        "tflops_per_s": flops / (median / 1e3) / 1e12,
        "mfu": mfu(flops, median / 1e3, peak_flops_per_s) if flops else None,
        "tokens_per_s": tokens / (median / 1e3),
    }


def versions(jax: Any | None) -> dict[str, str]:
    """Python, NumPy, JAX and jaxlib versions (``not installed`` without JAX), any installed
    accelerator runtime (``RUNTIME_DISTS``) and this package's own version."""
    out = {"python": platform.python_version(), "numpy": np.__version__}
    if jax is None:
        return {**out, "jax": "not installed", "jaxlib": "not installed"}
    import jaxlib

    out = {**out, "jax": jax.__version__, "jaxlib": jaxlib.__version__}
    for dist in (*RUNTIME_DISTS, OWN_DIST):
        with contextlib.suppress(_md.PackageNotFoundError):
            out[dist] = _md.version(dist)
    return out


def git_state(repo: Path | None = None) -> dict[str, Any]:
    """``{"commit", "dirty"}`` of the git checkout at ``repo`` (the working directory by default);
    ``None`` values outside one or without git."""

    def git(*args: str) -> str | None:
        where = [] if repo is None else ["-C", str(repo)]
        try:
            done = subprocess.run(
                ["git", *where, *args], capture_output=True, text=True, check=False, timeout=20
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain") if commit else None
    return {"commit": commit or None, "dirty": None if status is None else status != ""}


def write(path: Path | str, doc: dict[str, Any]) -> Path:
    """Write ``doc`` as indented JSON to ``path`` atomically (a temporary file beside it, then a
    rename): a reader never sees half a document. Returns the resolved path."""
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)
    return path
