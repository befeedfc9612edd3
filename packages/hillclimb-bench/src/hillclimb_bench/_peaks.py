"""Device peaks: hillclimb's ``schemas/device-peaks.json``, read (never copied), and a measured
matmul peak for devices or dtypes the table lacks (every CPU).

Matching is by the exact JAX ``device_kind`` string, as the engine and the gdn harness match it;
chip figures are divided by ``devicesPerChip``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

TABLE_SCHEMA = "hillclimb.device-peaks/1"
# The metrics schema's peak dtypes.
PEAK_DTYPES = {"bfloat16": "bf16", "float32": "fp32"}
MATMUL_SIZE = {"cpu": 512}
MATMUL_SIZE_DEFAULT = 8192
MATMUL_REPEATS = 10


def peak_table_path() -> Path:
    """Where the table is read from: ``$HILLCLIMB_DEVICE_PEAKS``; else the hillclimb checkout this
    package sits in (``packages/hillclimb-bench/src/hillclimb_bench`` -> ``schemas/``); else the
    copy built into the wheel from that same file."""
    env = os.environ.get("HILLCLIMB_DEVICE_PEAKS")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    if here.parent.name == "src" and here.parents[2].name == "packages":
        in_checkout = here.parents[3] / "schemas" / "device-peaks.json"
        if in_checkout.is_file():
            return in_checkout
    return here / "device-peaks.json"


def device_peak(device_kind: str, dtype: str) -> tuple[str, float] | None:
    """``(name, FLOP/s of one device)`` from the table for this exact ``device_kind`` at ``dtype``
    (``None``: kind not listed, or no figure for that dtype)."""
    path = peak_table_path()
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read the device peak table {path}: {e}") from None
    if doc.get("schema") != TABLE_SCHEMA:
        raise ValueError(f"{path}: schema is {doc.get('schema')!r}, not {TABLE_SCHEMA!r}")
    key = PEAK_DTYPES.get(dtype)
    if key is None:
        return None
    for entry in doc["devices"]:
        if device_kind in entry["deviceKinds"]:
            flops = entry["peakFlopsPerSecond"].get(key)
            return None if flops is None else (entry["name"], flops / entry["devicesPerChip"])
    return None


def measure_matmul_peak(dtype: str, backend: str, jax: Any | None) -> dict[str, Any]:
    """Best FLOP/s of a few timed ``[n, n] @ [n, n]`` matmuls at ``dtype`` on the default device
    (one untimed call first). In the metrics schema's ``device.peak.measured`` layout."""
    n = MATMUL_SIZE.get(backend, MATMUL_SIZE_DEFAULT)
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((n, n)).astype(np.float32)
    if jax is not None:
        a = jax.numpy.asarray(a_host, dtype)
        matmul = jax.jit(jax.numpy.matmul)

        def run() -> Any:
            return jax.block_until_ready(matmul(a, a))
    else:
        a_np = a_host.astype(dtype)

        def run() -> Any:
            return a_np @ a_np

    run()
    samples = []
    for _ in range(MATMUL_REPEATS):
        t0 = perf_counter()
        run()
        samples.append((perf_counter() - t0) * 1e3)
    return {
        "flops_per_s": 2.0 * n**3 / (min(samples) / 1e3),
        "n": n,
        "dtype": dtype,
        "repeats": MATMUL_REPEATS,
        "samples_ms": [round(s, 6) for s in samples],
    }
