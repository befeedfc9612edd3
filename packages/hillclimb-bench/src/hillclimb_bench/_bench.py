"""The bench: verify, time, re-check, write metrics (see the package docstring)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from . import _peaks

SCHEMA_ID = "hillclimb.metrics/v1"
MAX_SEED = 2**53 - 1  # an exact JSON/JavaScript number
CLOCK_JAX = "perf_counter+block_until_ready"
CLOCK_HOST = "perf_counter"


class UsageError(Exception):
    """Bad arguments (exit 2)."""


class VerificationError(Exception):
    """A callable's output failed a check (exit 1). ``quantity`` names it, e.g. ``fwd.out``."""

    def __init__(self, quantity: str, detail: str) -> None:
        super().__init__(f"{quantity}: {detail}")
        self.quantity = quantity


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One timed program.

    ``fn(*inputs)`` is timed; ``reference(*inputs)`` is the trusted result it is checked against
    (same structure: an array, a tuple/list, or a dict of arrays). Every array must have the
    reference's shape and a relative RMS error ``||out - ref|| / ||ref||`` of at most
    ``rel_rms_tol``. ``flops``: FLOPs of one call by your convention (MFU needs it);
    ``tokens``: tokens one call processes (``tokens_per_s``; 0 when not given).
    """

    fn: Callable[..., Any]
    reference: Callable[..., Any]
    rel_rms_tol: float
    flops: float | None = None
    tokens: int | None = None


# --- outputs --------------------------------------------------------------------------------------


def _leaves(out: Any, name: str) -> list[tuple[str, Any]]:
    """``(quantity, array)`` of every array in ``out`` (an array, a tuple/list or dict of them)."""
    if isinstance(out, dict):
        return [leaf for k in sorted(out) for leaf in _leaves(out[k], f"{name}.{k}")]
    if isinstance(out, tuple | list):
        return [leaf for i, x in enumerate(out) for leaf in _leaves(x, f"{name}.{i}")]
    return [(name, out)]


def _host(x: Any) -> np.ndarray:
    return np.asarray(x)


def _compare(name: str, outs: Any, refs: Any, tol: float) -> dict[str, dict[str, float]]:
    """Errors of each output array against the reference; raises on the first one out of bounds."""
    got, want = _leaves(outs, name), _leaves(refs, name)
    if [q for q, _ in got] != [q for q, _ in want]:
        raise VerificationError(
            name, f"returns {[q for q, _ in got]}, the reference {[q for q, _ in want]}"
        )
    errors: dict[str, dict[str, float]] = {}
    for (q, a), (_, b) in zip(got, want, strict=True):
        x, y = _host(a), _host(b)
        if x.shape != y.shape:
            raise VerificationError(q, f"shape {x.shape}, the reference's is {y.shape}")
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        if not np.all(np.isfinite(x64)):
            raise VerificationError(q, "not finite (nan or inf)")
        diff = x64 - y64
        max_abs = float(np.max(np.abs(diff))) if diff.size else 0.0
        norm = math.sqrt(float(np.mean(y64**2))) if y64.size else 0.0
        rms = math.sqrt(float(np.mean(diff**2))) if diff.size else 0.0
        rel = rms / norm if norm > 0 else rms
        if not rel <= tol:
            raise VerificationError(q, f"rel_rms {rel:.3e} > tolerance {tol:.3e}")
        errors[q] = {"max_abs": max_abs, "rel_rms": rel}
    return errors


def _bits(out: Any, name: str) -> list[tuple[str, str, tuple[int, ...], bytes]]:
    return [
        (q, str(h.dtype), h.shape, h.tobytes())
        for q, a in _leaves(out, name)
        for h in [np.ascontiguousarray(_host(a))]
    ]


def _check_identical(name: str, out: Any, verified: list[Any], call: str) -> None:
    for (q, dt, shape, data), (_, vdt, vshape, vdata) in zip(
        _bits(out, name), verified, strict=True
    ):
        if (dt, shape, data) != (vdt, vshape, vdata):
            raise VerificationError(q, f"{call} output differs bit for bit from the verified one")


# --- environment ----------------------------------------------------------------------------------


def _load_jax() -> Any | None:
    if importlib.util.find_spec("jax") is None:
        return None
    import jax

    return jax


def _device(jax: Any | None) -> dict[str, Any]:
    if jax is None:
        return {"backend": "cpu", "kind": "cpu", "count": 1}
    return {
        "backend": jax.default_backend(),
        "kind": jax.devices()[0].device_kind,
        "count": jax.device_count(),
    }


def _versions(jax: Any | None) -> dict[str, str]:
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    if jax is None:
        return {**versions, "jax": "not installed", "jaxlib": "not installed"}
    import jaxlib

    return {**versions, "jax": jax.__version__, "jaxlib": jaxlib.__version__}


def _git() -> dict[str, Any]:
    def run(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = run("rev-parse", "HEAD")
    status = run("status", "--porcelain") if commit else None
    return {"commit": commit, "dirty": None if status is None else status != ""}


def _percentile(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


# --- the bench ------------------------------------------------------------------------------------


def measure(
    *,
    target: str,
    impl: str,
    make_inputs: Callable[[np.random.Generator], tuple[Any, ...]],
    measurements: dict[str, Measurement],
    dtype: str,
    preset: str = "default",
    shapes: dict[str, Any],
    seed: int | None = None,
    input_sets: int = 2,
    warmup: int = 2,
    repeats: int = 10,
    trace_dir: str | None = None,
    interpret: bool = False,
) -> dict[str, Any]:
    """Verify and time every measurement; return the metrics document (not yet written).

    ``make_inputs(rng)`` builds one input set from a NumPy generator; set ``i`` uses
    ``np.random.default_rng([seed, i])``, so ``seed`` reproduces every input. Raises
    :class:`UsageError` for bad arguments and :class:`VerificationError` for a failed check.
    """
    if not measurements:
        raise UsageError("no measurements given")
    if not shapes:
        raise UsageError('shapes: name at least one dimension of the problem, e.g. {"n": 4096}')
    if repeats < 1 or warmup < 0 or input_sets < 1:
        raise UsageError(f"need repeats >= 1, warmup >= 0, input_sets >= 1 ({repeats=} {warmup=})")
    for name, m in measurements.items():
        if not m.rel_rms_tol >= 0:
            raise UsageError(f"measurement {name}: rel_rms_tol must be >= 0")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise UsageError(f"--seed must be in [0, 2^53), got {seed}")
    jax = _load_jax()
    sync: Callable[[Any], Any] = jax.block_until_ready if jax is not None else (lambda x: x)

    seed_source = "argument" if seed is not None else "os.urandom"
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little") & MAX_SEED
    sets = [tuple(make_inputs(np.random.default_rng([seed, i]))) for i in range(input_sets)]

    def call(name: str, m: Measurement, args: tuple[Any, ...]) -> Any:
        try:
            return sync(m.fn(*args))
        except Exception as e:  # the kernel's own failure is a failed check, not a crash
            raise VerificationError(name, f"raised {type(e).__name__}: {e}") from e

    errors: dict[str, dict[str, float]] = {}
    results: dict[str, Any] = {}
    compared = 0
    traced = False
    for name, m in measurements.items():
        # Verify every set before any timing counts; keep the verified bits.
        verified = []
        for args in sets:
            out = call(name, m, args)
            for q, e in _compare(name, out, m.reference(*args), m.rel_rms_tol).items():
                worst = errors.get(q)
                if worst is None or e["rel_rms"] > worst["rel_rms"]:
                    errors[q] = e
            verified.append(_bits(out, name))
        for i in range(warmup):
            k = i % len(sets)
            _check_identical(name, call(name, m, sets[k]), verified[k], "a warm-up call's")
        samples: list[float] = []
        kept: list[tuple[int, Any]] = []
        for i in range(repeats):
            k = i % len(sets)
            t0 = perf_counter()
            try:
                out = sync(m.fn(*sets[k]))
            except Exception as e:
                raise VerificationError(name, f"raised {type(e).__name__}: {e}") from e
            samples.append((perf_counter() - t0) * 1e3)
            kept.append((k, out))
        for k, out in kept:
            _check_identical(name, out, verified[k], "a timed call's")
            compared += 1
        if trace_dir is not None and not traced:
            traced = True
            if jax is None:
                raise UsageError("--trace needs JAX (jax.profiler)")
            with jax.profiler.trace(trace_dir):
                out = call(name, m, sets[0])
            _check_identical(name, out, verified[0], "the traced call's")
        results[name] = _measurement(samples, m)

    device = _device(jax)
    peak = _peak(device, dtype, jax) if any(m.flops for m in measurements.values()) else None
    peak_flops = None if peak is None else peak["flops_per_s"]
    for r in results.values():
        secs = r["median_ms"] / 1e3
        r["mfu"] = None if peak_flops is None or not r["flops"] else r["flops"] / secs / peak_flops
    doc: dict[str, Any] = {
        "schema": SCHEMA_ID,
        "target": target,
        "impl": impl,
        "preset": preset,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z"),
        "device": {
            **device,
            "peak_flops_per_s": peak_flops,
            "interpret": interpret,
            **({"peak": peak} if peak is not None else {}),
        },
        "shapes": dict(shapes),
        "dtype": dtype,
        "timing": {
            "warmup": warmup,
            "repeats": repeats,
            "clock": CLOCK_JAX if jax is not None else CLOCK_HOST,
        },
        "measurements": results,
        "versions": _versions(jax),
        "git": _git(),
        "trace_dir": trace_dir,
        "verification": {
            "seed": seed,
            "seed_source": seed_source,
            "input_sets": [f"set{i}" for i in range(input_sets)],
            "verified": True,
            "timed_outputs_compared": compared,
            "errors": errors,
        },
    }
    return doc


def _measurement(samples: list[float], m: Measurement) -> dict[str, Any]:
    median = _percentile(samples, 50)
    flops = float(m.flops or 0.0)
    return {
        "samples_ms": [max(s, 1e-9) for s in samples],
        "median_ms": max(median, 1e-9),
        "p10_ms": max(_percentile(samples, 10), 1e-9),
        "p90_ms": max(_percentile(samples, 90), 1e-9),
        "flops": flops,
        "executed_flops": None,
        "tflops_per_s": flops / (max(median, 1e-9) / 1e3) / 1e12,
        "mfu": None,
        "tokens_per_s": (m.tokens or 0) / (max(median, 1e-9) / 1e3),
    }


def _peak(device: dict[str, Any], dtype: str, jax: Any | None) -> dict[str, Any] | None:
    """The table's peak for this device and dtype, else a measured matmul peak labelled as such;
    ``None`` for a dtype the metrics schema has no peak for (MFU is then null)."""
    key = _peaks.PEAK_DTYPES.get(dtype)
    if key is None:
        return None
    try:
        found = _peaks.device_peak(device["kind"], dtype)
    except ValueError as e:  # a broken install, not the kernel's fault: set HILLCLIMB_DEVICE_PEAKS
        raise UsageError(f"{e} (set HILLCLIMB_DEVICE_PEAKS to hillclimb's file)") from None
    if found is not None:
        name, flops = found
        return {
            "source": "table",
            "name": name,
            "dtype": key,
            "flops_per_s": flops,
            "warning": None,
            "measured": None,
        }
    measured = _peaks.measure_matmul_peak(dtype, device["backend"], jax)
    return {
        "source": "measured",
        "name": f"measured {measured['n']}^3 {dtype} matmul",
        "dtype": key,
        "flops_per_s": measured["flops_per_s"],
        "warning": f"device kind {device['kind']!r} has no {key} peak in device-peaks.json",
        "measured": measured,
    }


# --- command line ---------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = _Parser(prog=Path(sys.argv[0]).name, description="Verify and time a kernel; write metrics.")
    p.add_argument("--out", required=True, help="metrics JSON to write")
    p.add_argument("--seed", type=int, help="reproduce a run's inputs (verification.seed)")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--trace", metavar="DIR", help="jax.profiler trace of one extra call")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None, **bench: Any) -> None:
    """Parse ``--out``, ``--seed``, ``--repeats``, ``--warmup``, ``--trace`` from ``argv``
    (``sys.argv`` by default), run :func:`measure` with ``bench`` and write the metrics JSON.
    Exits 0, 1 (``bench: failed: <quantity>: …``, nothing written) or 2 (bad arguments)."""
    try:
        args = _parse(argv)
        doc = measure(
            **bench, seed=args.seed, repeats=args.repeats, warmup=args.warmup, trace_dir=args.trace
        )
    except UsageError as e:
        print(f"bench: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except VerificationError as e:
        print(f"bench: failed: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    m = ", ".join(f"{k} {v['median_ms']:.4g} ms" for k, v in doc["measurements"].items())
    seed = doc["verification"]["seed"]
    print(f"HILLCLIMB_BENCH {doc['target']}/{doc['impl']}: {m} (seed {seed})")
