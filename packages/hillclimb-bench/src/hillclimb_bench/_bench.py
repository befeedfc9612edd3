"""The bench: verify, time, re-check, write metrics (see the package docstring)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from . import checks, guards, metrics, peaks
from .errors import UsageError, VerificationError
from .metrics import CLOCK_HOST, CLOCK_JAX, SCHEMA_ID
from .timing import time_calls

MAX_SEED = 2**53 - 1  # an exact JSON/JavaScript number


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


# --- verification ---------------------------------------------------------------------------------


def _compare(name: str, outs: Any, refs: Any, tol: float) -> dict[str, dict[str, float]]:
    """Errors of each output array against the reference; raises on the first one out of bounds."""
    got, want = checks.leaves(outs, name), checks.leaves(refs, name)
    if [q for q, _ in got] != [q for q, _ in want]:
        raise VerificationError(
            name, f"returns {[q for q, _ in got]}, the reference {[q for q, _ in want]}"
        )
    errors: dict[str, dict[str, float]] = {}
    for (q, a), (_, b) in zip(got, want, strict=True):
        x, y = np.asarray(a), np.asarray(b)
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


def _arrays(out: Any, name: str) -> list[Any]:
    return [a for _, a in checks.leaves(out, name)]


def _check_identical(name: str, out: Any, verified: list[Any], call: str) -> None:
    got = checks.leaves(out, name)
    for (q, _), same in zip(
        got, checks.identical_on_host([a for _, a in got], verified), strict=True
    ):
        if not same:
            raise VerificationError(q, f"{call} output differs bit for bit from the verified one")


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


def _call(name: str, m: Measurement, args: tuple[Any, ...], sync: Callable[[Any], Any]) -> Any:
    try:
        return sync(m.fn(*args))
    except Exception as e:  # the kernel's own failure is a failed check, not a crash
        raise VerificationError(name, f"raised {type(e).__name__}: {e}") from e


def _guard(before: dict[str, Any], when: str) -> None:
    tampered = guards.changed(before)
    if tampered:
        raise VerificationError("guards", f"global state changed {when}: " + "; ".join(tampered))


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
    guard_from: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Verify and time every measurement; return the metrics document (not yet written).

    ``make_inputs(rng)`` builds one input set from a NumPy generator; set ``i`` uses
    ``np.random.default_rng([seed, i])``, so ``seed`` reproduces every input. The guards
    (:mod:`hillclimb_bench.guards`) compare the process's state after verification, after timing
    and at the end with a snapshot taken when this starts, or with ``guard_from`` (a
    ``guards.snapshot()`` the bench took before importing its kernel). Raises
    :class:`UsageError` for bad arguments and :class:`VerificationError` for a failed check
    (``quantity`` ``guards`` when the state changed).
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
    before = guards.snapshot() if guard_from is None else guard_from
    sync: Callable[[Any], Any] = jax.block_until_ready if jax is not None else (lambda x: x)

    seed_source = "argument" if seed is not None else "os.urandom"
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little") & MAX_SEED
    sets = [tuple(make_inputs(np.random.default_rng([seed, i]))) for i in range(input_sets)]
    labels = [f"set{i}" for i in range(input_sets)]

    errors: dict[str, dict[str, float]] = {}
    timed: dict[str, list[float]] = {}
    compared = 0
    traced = False
    for name, m in measurements.items():
        # Verify every set before any timing counts; keep the verified arrays.
        verified: list[list[Any]] = []
        for args in sets:
            out = _call(name, m, args, sync)
            for q, e in _compare(name, out, m.reference(*args), m.rel_rms_tol).items():
                worst = errors.get(q)
                if worst is None or e["rel_rms"] > worst["rel_rms"]:
                    errors[q] = e
            verified.append([np.array(a) for a in _arrays(out, name)])
        _guard(before, "while verifying")

        def warm(k: int, out: Any, verified: list[list[Any]] = verified, name: str = name) -> None:
            _check_identical(name, out, verified[k], "a warm-up call's")

        samples, kept = time_calls(
            name, m.fn, sets, repeats=repeats, warmup=warmup, block=sync, on_warmup=warm
        )
        quantities = [q for q, _ in checks.leaves(kept[0], name)]
        compared += checks.check_kept(
            name,
            {r: _arrays(out, name) for r, out in kept.items()},
            verified,
            labels=labels,
            names=quantities,
            repeats=repeats,
        )
        if trace_dir is not None and not traced:
            traced = True
            if jax is None:
                raise UsageError("--trace needs JAX (jax.profiler)")
            with jax.profiler.trace(trace_dir):
                out = _call(name, m, sets[0], sync)
            _check_identical(name, out, verified[0], "the traced call's")
        timed[name] = samples
    _guard(before, "while timing")

    device = _device(jax)
    try:
        peak = (
            peaks.peak_entry(device["kind"], dtype)
            if any(m.flops for m in measurements.values())
            else None
        )
    except ValueError as e:  # a broken install, not the kernel's fault: set HILLCLIMB_DEVICE_PEAKS
        raise UsageError(f"{e} (set HILLCLIMB_DEVICE_PEAKS to hillclimb's file)") from None
    peak_flops = None if peak is None else peak["flops_per_s"]
    results = {
        name: metrics.measurement(
            samples,
            flops=float(measurements[name].flops or 0.0),
            tokens=measurements[name].tokens or 0,
            peak_flops_per_s=peak_flops,
        )
        for name, samples in timed.items()
    }
    doc: dict[str, Any] = {
        "schema": SCHEMA_ID,
        "target": target,
        "impl": impl,
        "preset": preset,
        "created_at": metrics.created_at(),
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
        "versions": metrics.versions(jax),
        "git": metrics.git_state(),
        "trace_dir": trace_dir,
        "verification": {
            "seed": seed,
            "seed_source": seed_source,
            "input_sets": labels,
            "verified": True,
            "timed_outputs_compared": compared,
            "errors": errors,
        },
    }
    _guard(before, "while measuring")
    return doc


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


def main(argv: Sequence[str] | None = None, **bench: Any) -> NoReturn:
    """Parse ``--out``, ``--seed``, ``--repeats``, ``--warmup``, ``--trace`` from ``argv``
    (``sys.argv`` by default), run :func:`measure` with ``bench``, write the metrics JSON and leave
    the process. Exits 0, 1 (``bench: failed: <quantity>: …``, nothing written) or 2 (bad
    arguments) through ``os._exit``: no ``atexit`` handler the kernel registered runs after the
    metrics are written (one could rewrite them, and the guards cannot list such handlers)."""
    code = _run_main(argv, bench)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _run_main(argv: Sequence[str] | None, bench: dict[str, Any]) -> int:
    try:
        args = _parse(argv)
        doc = measure(
            **bench, seed=args.seed, repeats=args.repeats, warmup=args.warmup, trace_dir=args.trace
        )
    except UsageError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    except VerificationError as e:
        print(f"bench: failed: {e}", file=sys.stderr)
        return 1
    metrics.write(args.out, doc)
    m = ", ".join(f"{k} {v['median_ms']:.4g} ms" for k, v in doc["measurements"].items())
    seed = doc["verification"]["seed"]
    print(f"HILLCLIMB_BENCH {doc['target']}/{doc['impl']}: {m} (seed {seed})")
    return 0
