"""Device peaks: hillclimb's ``schemas/device-peaks.json``, read (never copied), and a measured
matmul peak for devices or dtypes the table lacks (every CPU).

Matching is by the exact JAX ``device_kind`` string, as the engine's roofline matches it; chip
figures are divided by ``devicesPerChip``. Every reader takes an optional ``path`` (the gdn harness
passes its checkout's table); without one the table is found by :func:`peak_table_path`. The file
is read afresh on every call: no cached copy a kernel could edit in memory.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
from pathlib import Path
from time import perf_counter  # bound when the package loads, before any kernel code
from typing import Any

import numpy as np

TABLE_SCHEMA = "hillclimb.device-peaks/1"
# A dtype -> the peak table's key (and the metrics schema's peak dtypes).
PEAK_DTYPES = {"bfloat16": "bf16", "float32": "fp32"}
# Side of the square matmuls the measured peak times: large enough to run at the matrix unit's
# (or the CPU's vector units') full rate, small enough to take milliseconds.
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


@dataclasses.dataclass(frozen=True)
class DevicePeak:
    """Peaks of one JAX device (chip figures divided by ``devicesPerChip``)."""

    name: str
    bf16: float
    fp32: float | None  # null where the vendor publishes none (TPUs)
    bytes_per_s: float

    def flops(self, dtype: str) -> float | None:
        return self.bf16 if PEAK_DTYPES[dtype] == "bf16" else self.fp32


def device_peak_table(path: Path | None = None) -> tuple[dict[str, Any], ...]:
    """The table's entries, checked. Raises ``ValueError`` naming the file and the entry when it
    cannot be read or is malformed."""
    path = peak_table_path() if path is None else path
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read the device peak table {path}: {e}") from None
    where = Path(path).name
    if doc.get("schema") != TABLE_SCHEMA:
        raise ValueError(f"{where}: schema is {doc.get('schema')!r}, not {TABLE_SCHEMA!r}")
    seen: set[str] = set()
    for i, e in enumerate(doc["devices"]):
        kinds, peaks = e.get("deviceKinds"), e.get("peakFlopsPerSecond") or {}
        if not kinds or not e.get("sources") or not peaks.get("bf16", 0) > 0:
            raise ValueError(f"{where}: devices[{i}] needs deviceKinds, sources and a bf16 peak")
        if seen & set(kinds):
            raise ValueError(f"{where}: devices[{i}]: {sorted(seen & set(kinds))} listed twice")
        seen |= set(kinds)
    return tuple(doc["devices"])


def peak_for_device_kind(device_kind: str, path: Path | None = None) -> DevicePeak | None:
    """The table's peaks for this exact JAX ``device_kind`` (``None`` when it is not listed)."""
    for e in device_peak_table(path):
        if device_kind in e["deviceKinds"]:
            n = e["devicesPerChip"]
            fp32 = e["peakFlopsPerSecond"].get("fp32")
            return DevicePeak(
                name=e["name"],
                bf16=e["peakFlopsPerSecond"]["bf16"] / n,
                fp32=None if fp32 is None else fp32 / n,
                bytes_per_s=e["hbmBytesPerSecond"] / n,
            )
    return None


def device_peak(device_kind: str, dtype: str, path: Path | None = None) -> tuple[str, float] | None:
    """``(name, FLOP/s of one device)`` from the table for this exact ``device_kind`` at ``dtype``
    (``None``: kind not listed, or no figure for that dtype)."""
    if dtype not in PEAK_DTYPES:
        return None
    peak = peak_for_device_kind(device_kind, path)
    flops = None if peak is None else peak.flops(dtype)
    return None if peak is None or flops is None else (peak.name, flops)


def unknown_device_warning(device_kind: str, dtype: str, path: Path | None = None) -> str | None:
    """One line naming a device (or dtype) the table has no peak for; ``None`` when it has."""
    peak = peak_for_device_kind(device_kind, path)
    if peak is None:
        return f"device kind {device_kind!r} is not in schemas/device-peaks.json"
    if peak.flops(dtype) is None:
        return f"schemas/device-peaks.json has no {PEAK_DTYPES[dtype]} peak for {peak.name}"
    return None


def _jax() -> Any | None:
    if importlib.util.find_spec("jax") is None:
        return None
    import jax

    return jax


def measure_matmul_peak(
    dtype: str, *, n: int | None = None, repeats: int = MATMUL_REPEATS
) -> dict[str, Any]:
    """The best FLOP/s of ``repeats`` timed ``[n, n] @ [n, n]`` matmuls at ``dtype`` on the default
    device (JAX, compiled first; NumPy without JAX), after one untimed call: a peak this machine
    demonstrably reaches. In the metrics schema's ``device.peak.measured`` layout."""
    jax = _jax()
    if n is None:
        backend = "cpu" if jax is None else jax.default_backend()
        n = MATMUL_SIZE.get(backend, MATMUL_SIZE_DEFAULT)
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((n, n)).astype(np.float32)
    b_host = rng.standard_normal((n, n)).astype(np.float32)
    if jax is not None:
        a, b = jax.numpy.asarray(a_host, dtype), jax.numpy.asarray(b_host, dtype)
        matmul = jax.jit(jax.numpy.matmul).lower(a, b).compile()

        def run() -> Any:
            return jax.block_until_ready(matmul(a, b))
    else:
        a_np, b_np = a_host.astype(dtype), b_host.astype(dtype)

        def run() -> Any:
            return a_np @ b_np

    run()
    samples = []
    for _ in range(repeats):
        t0 = perf_counter()
        run()
        samples.append((perf_counter() - t0) * 1e3)
    return {
        "flops_per_s": 2.0 * n**3 / (min(samples) / 1e3),
        "n": n,
        "dtype": dtype,
        "repeats": repeats,
        "samples_ms": [round(s, 6) for s in samples],
    }


def peak_entry(device_kind: str, dtype: str, path: Path | None = None) -> dict[str, Any] | None:
    """``device.peak`` of the metrics: the table's peak for this device at ``dtype``, else a peak
    measured now and labelled so (``warning`` says why); ``None`` for a dtype the metrics schema
    has no peak for (MFU is then null)."""
    key = PEAK_DTYPES.get(dtype)
    if key is None:
        return None
    table = peak_for_device_kind(device_kind, path)
    flops = None if table is None else table.flops(dtype)
    if table is not None and flops is not None:
        return {
            "source": "table",
            "name": table.name,
            "dtype": key,
            "flops_per_s": flops,
            "warning": None,
            "measured": None,
        }
    measured = measure_matmul_peak(dtype)
    return {
        "source": "measured",
        "name": f"measured {measured['n']}^3 {dtype} matmul",
        "dtype": key,
        "flops_per_s": measured["flops_per_s"],
        "warning": unknown_device_warning(device_kind, dtype, path),
        "measured": measured,
    }


def mfu(flops: float, seconds: float, peak: float | None) -> float | None:
    """Model FLOPs utilisation as a fraction of one device's peak (``None`` without a peak)."""
    if peak is None or seconds <= 0:
        return None
    return flops / seconds / peak
