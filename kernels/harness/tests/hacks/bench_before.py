"""TEST DATA: the bench as it was before it verified every timed quantity (commit b82bcf1), kept so
the reward-hack tests can show what it let through. The hack tests copy it into a scratch copy of
the repository as ``kernels/harness/bench_before.py`` and run it there; it is never imported here.
Changed from b82bcf1 only here and where it reads its output tolerance, which was then
``TOL_BENCH = {"float32": Tol(1e-3, 1e-5), "bfloat16": Tol(1e-2, 1e-3)}`` (now tighter, in spec).

Benchmark one implementation of a target and write a metrics JSON (protected).

    python -m kernels.harness.bench --target gdn --impl pallas --preset tiny \\
        --repeats 10 --warmup 2 --out metrics.json [--trace DIR] [--measure fwd,fwd_bwd]

One process measures one implementation: compile (timed apart), warm up, then ``--repeats`` timed
calls per measurement (``perf_counter`` around the call and ``block_until_ready``), alternating
between two input sets. Before timing, the forward output is checked against the protected oracle
and for determinism, the traced program is scanned for host callbacks, and the timers and global
JAX options are checked for tampering. Prints one ``HILLCLIMB_BENCH`` line; ``--out`` gets the
metrics JSON (``schemas/metrics.schema.json``, documented in ``docs/metrics.md``). Exit codes:
0 ok, 1 the candidate failed a check, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from time import perf_counter  # bound before any kernel code is imported
from typing import Any

from . import presets as _presets
from . import spec

TARGETS = ("gdn",)
MEASUREMENTS = ("fwd", "fwd_bwd")
LINE_PREFIX = "HILLCLIMB_BENCH"
CLOCK = "perf_counter+block_until_ready"
REPO_ROOT = Path(__file__).resolve().parents[2]


class UsageError(Exception):
    """Bad command-line arguments (exit 2)."""


class CandidateError(Exception):
    """The candidate failed a check the bench makes before trusting its timings (exit 1)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _measure_list(text: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    bad = [s for s in items if s not in MEASUREMENTS]
    if not items or bad:
        raise argparse.ArgumentTypeError(
            f"expected a comma list of {', '.join(MEASUREMENTS)}, got {text!r}"
        )
    return items


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = _Parser(prog="python -m kernels.harness.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="gdn", choices=TARGETS)
    p.add_argument("--impl", required=True, choices=spec.IMPLS)
    p.add_argument("--preset", required=True, choices=sorted(_presets.PRESETS))
    p.add_argument("--repeats", type=_positive, default=10, help="timed calls per measurement")
    p.add_argument("--warmup", type=_non_negative, default=2, help="untimed calls after compile")
    p.add_argument("--out", type=Path, default=None, help="metrics JSON to write")
    p.add_argument("--trace", type=Path, default=None, help="jax.profiler trace directory")
    p.add_argument("--measure", type=_measure_list, default=MEASUREMENTS, help="fwd,fwd_bwd")
    p.add_argument("--seed", type=int, default=spec.SEED)
    p.add_argument(
        "--compile-cache",
        type=Path,
        default=None,
        help="persistent JAX compilation cache directory (compile time is excluded from samples; "
        "repeated runs of the same code then skip XLA compilation)",
    )
    p.add_argument(
        "--pin-cpu",
        action="store_true",
        help="pin the process to one CPU core before JAX starts, so XLA:CPU runs single-threaded "
        "(on a shared or oversubscribed machine its thread pool otherwise stalls parallel ops)",
    )
    p.add_argument(
        "--no-check", action="store_true", help="skip the oracle and determinism check (debug)"
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"bench: error: {e}", file=sys.stderr)
        return 2
    try:
        metrics = run(args)
    except CandidateError as e:
        print(f"bench: failed: {e}", file=sys.stderr)
        return 1
    print(summary_line(metrics, args.out))
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure, check and (with ``--out``) write the metrics; returns the metrics dict."""
    pinned = pin_to_one_cpu() if args.pin_cpu else None
    import jax

    if args.compile_cache is not None:
        jax.config.update("jax_compilation_cache_dir", str(args.compile_cache.resolve()))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    from . import guards_before as guards

    before = guards.snapshot()
    import numpy as np

    from kernels import gdn as gdn_pkg

    from . import flops, schema
    from .oracle import jax_oracle_jit
    from .testing import assert_close, make_inputs

    tampered = guards.changed(before)
    if tampered:
        raise CandidateError("importing the kernel changed global state: " + "; ".join(tampered))

    preset = _presets.PRESETS[args.preset]
    case = spec.Case(
        B=preset.B, T=preset.T, H=preset.H, K=preset.K, V=preset.V, C=None, dtype=preset.dtype
    )
    arg_sets = []
    for i in range(2):  # two input sets, alternated, so no call can reuse a previous result
        x = make_inputs(case, seed=args.seed + i, gates="mild", with_state=True)
        arg_sets.append((*x.arrays(), x.s0))
    inputs0 = make_inputs(case, seed=args.seed, gates="mild", with_state=True)
    rng = np.random.default_rng(args.seed + 7)
    cotangents = (
        jax.numpy.asarray(rng.standard_normal(arg_sets[0][2].shape), preset.dtype),
        jax.numpy.asarray(rng.standard_normal(arg_sets[0][5].shape), "float32"),
    )

    def fwd(q, k, v, g, beta, s0):
        return gdn_pkg.gdn(
            q, k, v, g, beta, initial_state=s0, output_final_state=True, impl=args.impl
        )

    def fwd_bwd(q, k, v, g, beta, s0, do, ds):
        _, vjp = jax.vjp(fwd, q, k, v, g, beta, s0)
        return vjp((do, ds))  # all six gradients are outputs: nothing can be dead-code eliminated

    fns = {"fwd": (fwd, arg_sets), "fwd_bwd": (fwd_bwd, [(*a, *cotangents) for a in arg_sets])}

    # What is really built: host callbacks are refused; pallas_calls tell interpret and chunk.
    interpret = False
    kernel_chunk = None
    for name in args.measure:
        fn, sets = fns[name]
        found_interpret, found_chunk = inspect_program(name, jax.make_jaxpr(fn)(*sets[0]))
        interpret = interpret or found_interpret
        kernel_chunk = kernel_chunk if kernel_chunk is not None else found_chunk
    chunk_size = (
        kernel_chunk
        if kernel_chunk is not None
        else gdn_pkg.resolve_chunk_size(args.impl, T=case.T, K=case.K, V=case.V)
    )

    compiled: dict[str, Any] = {}
    compile_ms: dict[str, float] = {}
    need = set(args.measure) | ({"fwd"} if not args.no_check else set())
    for name in MEASUREMENTS:
        if name not in need:
            continue
        fn, sets = fns[name]
        t0 = perf_counter()
        compiled[name] = jax.jit(fn).lower(*sets[0]).compile()
        compile_ms[name] = (perf_counter() - t0) * 1e3

    if not args.no_check:
        out_a = jax.block_until_ready(compiled["fwd"](*arg_sets[0]))
        out_b = jax.block_until_ready(compiled["fwd"](*arg_sets[0]))
        for a, b in zip(jax.tree.leaves(out_a), jax.tree.leaves(out_b), strict=True):
            if not np.array_equal(np.asarray(a), np.asarray(b)):
                raise CandidateError(
                    "fwd is not deterministic: two calls on the same inputs differ"
                )
        x = inputs0.as_f32()
        ref_o, ref_s = jax_oracle_jit(*x.arrays(), scale=x.scale, initial_state=x.s0)
        try:
            tol = {
                "float32": spec.Tol(rel_rms=1e-3, atol=1e-5),
                "bfloat16": spec.Tol(rel_rms=1e-2, atol=1e-3),
            }[preset.dtype]
            assert_close("check o", ref_o, out_a[0], tol=tol, dtype=preset.dtype, log=_err)
            assert_close("check final_state", ref_s, out_a[1], tol=tol, dtype="float32", log=_err)
        except AssertionError as e:
            raise CandidateError(f"output check against the oracle: {e}") from None

    measurements: dict[str, Any] = {}
    peak = None
    device = jax.devices()[0]
    peak = flops.peak_flops_per_device(device.device_kind)
    for name in args.measure:
        _, sets = fns[name]
        samples = _time(
            compiled[name],
            sets,
            repeats=args.repeats,
            warmup=args.warmup,
            block=jax.block_until_ready,
        )
        arr = np.asarray(samples)
        median = float(np.median(arr))
        model = flops.model_flops(
            B=case.B, T=case.T, H=case.H, K=case.K, V=case.V, measurement=name
        )
        measurements[name] = {
            "samples_ms": [round(s, 6) for s in samples],
            "median_ms": median,
            "p10_ms": float(np.percentile(arr, 10)),
            "p90_ms": float(np.percentile(arr, 90)),
            "flops": model,
            "executed_flops": flops.executed_flops(
                impl=args.impl,
                B=case.B,
                T=case.T,
                H=case.H,
                K=case.K,
                V=case.V,
                chunk_size=chunk_size,
                measurement=name,
            ),
            "tflops_per_s": model / (median / 1e3) / 1e12,
            "mfu": flops.mfu(model, median / 1e3, peak),
            "tokens_per_s": case.B * case.T / (median / 1e3),
        }

    trace_dir = None
    if args.trace is not None:
        trace_dir = _capture_trace(
            args.trace, {n: (compiled[n], fns[n][1][0]) for n in args.measure}
        )

    tampered = guards.changed(before)
    if tampered:
        raise CandidateError("global state changed while measuring: " + "; ".join(tampered))

    notes = [
        f"devices: {jax.device_count()} available, 1 used (single-device jit)",
        "inputs alternate between 2 seeded sets (mild gates: the output check then exercises "
        "the intra-chunk algebra; timing does not depend on values)",
    ]
    if pinned is not None:
        notes.append(f"process pinned to CPU core {pinned} (--pin-cpu): XLA:CPU single-threaded")
    if interpret:
        notes.append("Pallas ran in interpret mode: timings say nothing about TPU speed")
    if peak is None:
        notes.append(f"no peak entry for device kind {device.device_kind!r}: mfu is null")
    if trace_dir is not None:
        notes.append("the trace holds one extra, untimed call per measurement")
    metrics = {
        "schema": schema.SCHEMA_ID,
        "target": args.target,
        "impl": args.impl,
        "preset": preset.name,
        "created_at": _dt.datetime.now(_dt.UTC)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z"),
        "device": {
            "backend": jax.default_backend(),
            "kind": device.device_kind,
            "count": 1,
            "peak_flops_per_s": peak,
            "interpret": interpret,
        },
        "shapes": {
            "B": case.B,
            "T": case.T,
            "H": case.H,
            "K": case.K,
            "V": case.V,
            "chunk_size": int(chunk_size),
        },
        "dtype": preset.dtype,
        "timing": {
            "warmup": args.warmup,
            "repeats": args.repeats,
            "clock": CLOCK,
            "compile_ms": {k: round(v, 3) for k, v in compile_ms.items()},
        },
        "measurements": measurements,
        "versions": _versions(),
        "git": _git_state(),
        "trace_dir": None if trace_dir is None else str(trace_dir),
        "notes": notes,
    }
    errors = schema.validate(metrics)
    if errors:  # a harness bug, never the candidate's fault: fail loudly
        raise RuntimeError("metrics do not match schemas/metrics.schema.json: " + "; ".join(errors))
    if args.out is not None:
        _write_json(args.out, metrics)
    return metrics


def pin_to_one_cpu() -> int | None:
    """Restrict this process to one core (the highest-numbered it may use); must run before JAX
    creates its CPU client, which sizes its thread pool from the affinity mask. None if
    unsupported (not Linux)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return core


def _err(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr)


def inspect_program(name: str, closed_jaxpr: Any) -> tuple[bool, int | None]:
    """Refuse host callbacks anywhere in the measured program; report whether any pallas_call
    runs in interpret mode and the chunk (second-to-last dim of the first kernel's first block)."""
    from . import tpu_rules

    eqns = list(tpu_rules.iter_eqns(closed_jaxpr.jaxpr))
    bad = sorted({e.primitive.name for e in eqns} & spec.FORBIDDEN_BENCH_PRIMITIVES)
    if bad:
        raise CandidateError(f"{name}: the measured program contains host callbacks {bad}")
    interpret = False
    chunk = None
    for e in eqns:
        if e.primitive.name != "pallas_call":
            continue
        info = tpu_rules.describe(e)
        interpret = interpret or bool(info.interpret)
        if chunk is None and info.blocks and len(info.blocks[0][1]) >= 2:
            chunk = info.blocks[0][1][-2]
    return interpret, chunk


def _time(
    compiled: Any, sets: list[tuple[Any, ...]], *, repeats: int, warmup: int, block: Any
) -> list[float]:
    for i in range(warmup):
        block(compiled(*sets[i % len(sets)]))
    samples = []
    wall0 = time.monotonic_ns()
    for r in range(repeats):
        call_args = sets[r % len(sets)]
        t0 = perf_counter()
        block(compiled(*call_args))
        samples.append((perf_counter() - t0) * 1e3)
    wall_ms = (time.monotonic_ns() - wall0) / 1e6
    if sum(samples) > wall_ms * 1.01 + 0.5:
        raise CandidateError(
            f"timer mismatch: samples sum {sum(samples):.3f} ms > wall {wall_ms:.3f} ms"
        )
    return samples


def _capture_trace(trace: Path, calls: dict[str, tuple[Any, tuple[Any, ...]]]) -> Path:
    import jax

    trace_dir = trace.resolve()
    trace_dir.mkdir(parents=True, exist_ok=True)
    with jax.profiler.trace(str(trace_dir), create_perfetto_trace=True):
        for name, (compiled, call_args) in calls.items():
            with jax.profiler.TraceAnnotation(f"hillclimb_{name}"):
                jax.block_until_ready(compiled(*call_args))
    runs = sorted((trace_dir / "plugins" / "profile").glob("*"))
    if (
        not runs
        or not list(runs[-1].glob("*.xplane.pb"))
        or not list(runs[-1].glob("perfetto_trace.json.gz"))
    ):
        raise CandidateError(
            f"profiler wrote no xplane.pb / perfetto_trace.json.gz under {trace_dir}"
        )
    return trace_dir


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    import jax
    import jaxlib
    import numpy as np

    out = {
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
    }
    for dist in ("libtpu", "libtpu-nightly", "jax-cuda12-plugin"):
        with contextlib.suppress(md.PackageNotFoundError):
            out[dist] = md.version(dist)
    return out


def _git_state() -> dict[str, Any]:
    def git(*cmd: str) -> str | None:
        try:
            r = subprocess.run(
                ["git", "-C", str(REPO_ROOT), *cmd], capture_output=True, text=True, timeout=20
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return r.stdout if r.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    status = git("status", "--porcelain") if head is not None else None
    return {
        "commit": head.strip() if head else None,
        "dirty": None if status is None else bool(status.strip()),
    }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def summary_line(metrics: dict[str, Any], out: Path | None) -> str:
    """The one parseable line: ``HILLCLIMB_BENCH key=value ...``; mfu is empty when unknown."""
    m = metrics["measurements"]
    primary = m.get("fwd_bwd") or m.get("fwd")

    def num(x: float | None) -> str:
        return "" if x is None else f"{x:.6g}"

    fields = {
        "target": metrics["target"],
        "impl": metrics["impl"],
        "preset": metrics["preset"],
        "backend": metrics["device"]["backend"],
        "interpret": int(metrics["device"]["interpret"]),
        "chunk_size": metrics["shapes"]["chunk_size"],
        "fwd_ms": num(m["fwd"]["median_ms"]) if "fwd" in m else "",
        "fwd_bwd_ms": num(m["fwd_bwd"]["median_ms"]) if "fwd_bwd" in m else "",
        "tflops": num(primary["tflops_per_s"]),
        "mfu": num(primary["mfu"]),
        "metrics": "" if out is None else str(out),
    }
    return LINE_PREFIX + " " + " ".join(f"{k}={v}" for k, v in fields.items())


if __name__ == "__main__":
    sys.exit(main())
