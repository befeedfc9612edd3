"""Compare implementations over sequence lengths in one process, interleaved (protected).

    python -m kernels.harness.compare --impls recurrent,chunked_xla --T 256,1024,2048,4096

Shapes are those of the ``cpu-long`` preset except T. Each implementation is compiled first
(excluded), warmed up, then the implementations are timed in turns (A, B, A, B, ...) so machine
load hits them alike. Prints a markdown table with medians, p10-p90 and the ratio of each
implementation's median to the first one's; ``--out`` also writes the raw samples as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from time import perf_counter
from typing import Any

from . import presets, spec


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m kernels.harness.compare")
    p.add_argument("--impls", default="recurrent,chunked_xla")
    p.add_argument("--T", default="256,1024,2048,4096", help="comma list of sequence lengths")
    p.add_argument("--preset", default="cpu-long", choices=sorted(presets.PRESETS))
    p.add_argument("--measure", default="fwd", choices=("fwd", "fwd_bwd"))
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--pin-cpu", action="store_true", help="as in the bench: one core, one thread")
    args = p.parse_args(argv)
    args.impls = [s for s in args.impls.split(",") if s]
    bad = [s for s in args.impls if s not in spec.IMPLS]
    if bad or len(args.impls) < 2:
        p.error(f"--impls needs two or more of {', '.join(spec.IMPLS)}; got {args.impls}")
    args.T = [int(s) for s in args.T.split(",") if s]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.pin_cpu:
        from .bench import pin_to_one_cpu

        pin_to_one_cpu()
    import jax
    import numpy as np

    from kernels import gdn as gdn_pkg

    from .testing import make_inputs

    base = presets.PRESETS[args.preset]
    rows: list[dict[str, Any]] = []
    for T in args.T:
        case = spec.Case(B=base.B, T=T, H=base.H, K=base.K, V=base.V, dtype=base.dtype)
        x = make_inputs(case, gates="layer", with_state=True)
        call_args: tuple[Any, ...] = (*x.arrays(), x.s0)
        if args.measure == "fwd_bwd":
            call_args = (*call_args, jax.numpy.ones(x.v.shape, x.v.dtype), x.s0)
        compiled = {}
        for impl in args.impls:

            def fwd(q, k, v, g, beta, s0, impl=impl):
                return gdn_pkg.gdn(
                    q, k, v, g, beta, initial_state=s0, output_final_state=True, impl=impl
                )

            def fwd_bwd(q, k, v, g, beta, s0, do, ds, fwd=fwd):
                return jax.vjp(fwd, q, k, v, g, beta, s0)[1]((do, ds))

            fn = fwd if args.measure == "fwd" else fwd_bwd
            compiled[impl] = jax.jit(fn).lower(*call_args).compile()
            for _ in range(args.warmup):
                jax.block_until_ready(compiled[impl](*call_args))
        samples: dict[str, list[float]] = {impl: [] for impl in args.impls}
        for _ in range(args.repeats):
            for impl in args.impls:
                t0 = perf_counter()
                jax.block_until_ready(compiled[impl](*call_args))
                samples[impl].append((perf_counter() - t0) * 1e3)
        first = float(np.median(samples[args.impls[0]]))
        for impl in args.impls:
            arr = np.asarray(samples[impl])
            med = float(np.median(arr))
            rows.append(
                {
                    "T": T,
                    "impl": impl,
                    "median_ms": med,
                    "p10_ms": float(np.percentile(arr, 10)),
                    "p90_ms": float(np.percentile(arr, 90)),
                    "speedup_vs_first": first / med,
                    "samples_ms": [round(s, 4) for s in samples[impl]],
                }
            )
    print(
        f"{args.measure} on {jax.devices()[0].device_kind} ({jax.default_backend()}), "
        f"B={base.B} H={base.H} K={base.K} V={base.V} {base.dtype}, {args.repeats} interleaved "
        "repeats"
    )
    print("| T | impl | median ms | p10-p90 ms | speedup vs " + args.impls[0] + " |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['T']} | {r['impl']} | {r['median_ms']:.3f} | "
            f"{r['p10_ms']:.3f}-{r['p90_ms']:.3f} | {r['speedup_vs_first']:.2f}x |"
        )
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
