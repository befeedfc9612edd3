"""Bench of the ``matmul`` target (protected), through hillclimb-bench.

    python -m kernels.matmul_harness.bench --preset tiny --out metrics.json
        [--repeats 10] [--warmup 2] [--seed N] [--trace DIR] [--pin-cpu] [--compile-cache DIR]

Times ``kernels.matmul.matmul_bias_act`` on the preset's problem with ``hillclimb_bench.measure``:
fresh inputs from a seed drawn per process, every output verified against the oracle before timing
and every timed output re-checked bit for bit after, FLOPs ``2·M·N·K`` plus the epilogue (see
``presets.Preset.flops``), MFU against the device's peak (or a measured matmul peak on CPU). The
metrics' ``shapes`` are the problem (``M``, ``N``, ``K``); the tiles the kernel chose are the
agent's knob, so they go to ``notes`` (two runs with other tiles still compare).

Exit codes: 0 metrics written; 1 the kernel failed a check (``bench: failed: …``, no metrics);
2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

# hillclimb setup installs hillclimb_bench into the venv (kernels/requirements.txt).
import hillclimb_bench
import numpy as np

from .presets import PRESETS, REL_RMS_TOL, Preset

TARGET = "matmul"
IMPL = "pallas"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m kernels.matmul_harness.bench", description=__doc__)
    p.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    p.add_argument("--out", type=Path, required=True, help="metrics JSON to write")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--seed", type=int, default=None, help="reproduce a run's inputs")
    p.add_argument("--trace", metavar="DIR", default=None, help="jax.profiler trace of one call")
    p.add_argument(
        "--pin-cpu",
        action="store_true",
        help="pin the process to one CPU core before JAX starts (steadier XLA:CPU timings on a "
        "shared machine)",
    )
    p.add_argument("--compile-cache", type=Path, default=None, help="JAX compilation cache dir")
    return p.parse_args(argv)


def make_inputs(preset: Preset, rng: np.random.Generator) -> tuple[Any, ...]:
    """x [M, K] ~ N(0, 1), w [K, N] ~ N(0, 1/K), b [N] ~ N(0, 1/4): pre-activations of unit
    scale, so the epilogue works in its nonlinear range."""
    import jax.numpy as jnp

    M, N, K = preset.M, preset.N, preset.K
    x = rng.standard_normal((M, K), np.float32)
    w = rng.standard_normal((K, N), np.float32) / np.float32(np.sqrt(K))
    b = rng.standard_normal(N, np.float32) / np.float32(2.0)
    return jnp.asarray(x, preset.dtype), jnp.asarray(w, preset.dtype), jnp.asarray(b)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure and verify; return the metrics document (raises hillclimb_bench's errors)."""
    pinned = None
    if args.pin_cpu and hasattr(os, "sched_setaffinity"):  # before JAX sizes its thread pool
        pinned = max(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {pinned})
    import jax
    import jax.numpy as jnp

    if args.compile_cache is not None:
        jax.config.update("jax_compilation_cache_dir", str(args.compile_cache.resolve()))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)

    from kernels.harness.tpu_rules import find_pallas_calls

    from .oracle import matmul_bias_act_ref

    # Every harness module is loaded: snapshot before the kernel's import code runs, so a kernel
    # that rebinds the bench's clock, checks or oracle on import is seen (measure() compares).
    before = hillclimb_bench.guards.snapshot()
    from kernels.matmul import matmul_bias_act

    preset = PRESETS[args.preset]

    def kernel(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
        return matmul_bias_act(x, w, b, activation=preset.activation)

    def reference(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
        return matmul_bias_act_ref(x, w, b, preset.activation)

    # What is really timed: the Pallas kernel (not a plain XLA stand-in), and whether it runs in
    # interpret mode, read from the traced program rather than taken from the kernel's word.
    example = (
        jax.ShapeDtypeStruct((preset.M, preset.K), jnp.dtype(preset.dtype)),
        jax.ShapeDtypeStruct((preset.K, preset.N), jnp.dtype(preset.dtype)),
        jax.ShapeDtypeStruct((preset.N,), jnp.float32),
    )
    calls = find_pallas_calls(kernel, *example)  # traced on abstract inputs: nothing allocated
    if not calls:
        raise hillclimb_bench.VerificationError("fwd", "the measured program has no pallas_call")
    interpret = any(bool(c.interpret) for c in calls)
    doc = hillclimb_bench.measure(
        target=TARGET,
        impl=IMPL,
        preset=preset.name,
        dtype=preset.dtype,
        shapes={"M": preset.M, "N": preset.N, "K": preset.K},
        make_inputs=lambda rng: make_inputs(preset, rng),
        measurements={
            "fwd": hillclimb_bench.Measurement(
                fn=jax.jit(kernel),
                reference=reference,
                rel_rms_tol=REL_RMS_TOL[preset.dtype],
                flops=preset.flops,
                tokens=preset.M,
            )
        },
        seed=args.seed,
        warmup=args.warmup,
        repeats=args.repeats,
        trace_dir=args.trace,
        interpret=interpret,
        guard_from=before,
    )
    notes = [
        f"activation {preset.activation}; "
        + "; ".join(f"{c.name}: grid {c.grid}, blocks {[b for _, b, _ in c.blocks]}" for c in calls)
    ]
    if interpret:
        notes.append("Pallas ran in interpret mode: timings say nothing about TPU speed")
    if pinned is not None:
        notes.append(f"process pinned to CPU core {pinned} (--pin-cpu): XLA:CPU single-threaded")
    doc["notes"] = notes
    return doc


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        doc = run(args)
    except hillclimb_bench.UsageError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    except hillclimb_bench.VerificationError as e:
        print(f"bench: failed: {e}", file=sys.stderr)
        return 1
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    fwd = doc["measurements"]["fwd"]
    print(
        f"HILLCLIMB_BENCH {TARGET}/{IMPL} {doc['preset']}: fwd {fwd['median_ms']:.4g} ms "
        f"(seed {doc['verification']['seed']}) -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    code = main()
    # Leave without running atexit handlers: a kernel could have registered one to rewrite the
    # metrics file after it was written (the guards cannot list them).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
