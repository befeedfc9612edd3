"""Toy benchmark for the loop tests: times toy.kernel.run() and writes a hillclimb metrics JSON.

Stdlib only, so the loop tests need no JAX. With --trace DIR it also writes a small tsl-shaped
Chrome trace (one TPU device, XLA Modules + XLA Ops) whose op durations are the measured times.
"""

import argparse
import gzip
import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone

sys.path.insert(0, os.getcwd())
from toy import kernel  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--trace")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    # Faults a candidate can carry (flags in its own, editable kernel module).
    if getattr(kernel, "CRASH_BENCH", False):
        print("toy bench: the kernel asked to crash", file=sys.stderr)
        return 3
    kernel.run()  # warm-up
    samples = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        kernel.run()
        samples.append((time.perf_counter() - t0) * 1000.0)
    samples.sort()
    med = statistics.median(samples)
    measurement = {
        "samples_ms": samples,
        "median_ms": med,
        "p10_ms": samples[0],
        "p90_ms": samples[-1],
        "flops": 1.0e6,
        "tflops_per_s": 1.0e6 / (med / 1000.0) / 1e12,
        "mfu": None,
        "tokens_per_s": 1000.0 / (med / 1000.0),
    }
    metrics = {
        "schema": "hillclimb.metrics/v1",
        "target": "toy",
        "impl": "python",
        "preset": "tiny",
        "created_at": datetime.now(timezone.utc).isoformat(),
        "device": {"backend": "cpu", "kind": "cpu", "count": 1, "peak_flops_per_s": None, "interpret": False},
        "shapes": {"B": 1, "T": 10, "H": 1, "K": 1, "V": 1, "chunk_size": 1},
        "dtype": "float32",
        "timing": {"warmup": 1, "repeats": args.repeats, "clock": "perf_counter"},
        "measurements": {"fwd": measurement, "fwd_bwd": measurement},
        "versions": {"python": platform.python_version(), "jax": "none", "jaxlib": "none"},
        "git": {"commit": None, "dirty": None},
        "trace_dir": args.trace,
    }
    if getattr(kernel, "UNVERIFIED", False):
        # What the real bench writes with --no-check: its timings were not verified.
        metrics["verification"] = {
            "seed": 1,
            "seed_source": "argument",
            "input_sets": ["mild"],
            "verified": False,
            "timed_outputs_compared": 0,
            "errors": {},
        }
    if not getattr(kernel, "NO_METRICS", False):
        with open(args.out, "w") as f:
            json.dump(metrics, f)
    if args.trace:
        write_trace(args.trace, samples)
    print(f"TOY_BENCH median_ms={med:.3f}")
    return 0


def write_trace(trace_dir: str, samples: list) -> None:
    run_dir = os.path.join(trace_dir, "plugins", "profile", "2026_01_01_00_00_00")
    os.makedirs(run_dir, exist_ok=True)
    events = [
        {"ph": "M", "pid": 3, "name": "process_name", "args": {"name": "/device:TPU:0"}},
        {"ph": "M", "pid": 3, "tid": 2, "name": "thread_name", "args": {"name": "XLA Modules"}},
        {"ph": "M", "pid": 3, "tid": 3, "name": "thread_name", "args": {"name": "XLA Ops"}},
    ]
    ts = 10.0
    for s in samples:
        dur = s * 1000.0
        events.append({"ph": "X", "pid": 3, "tid": 2, "ts": ts, "dur": dur + 2.0, "name": "jit_step(123)", "args": {}})
        events.append(
            {
                "ph": "X",
                "pid": 3,
                "tid": 3,
                "ts": ts + 1.0,
                "dur": dur,
                "name": "toy_kernel.1",
                "args": {"hlo_category": "custom-call", "long_name": "custom_call_target=\"tpu_custom_call\""},
            }
        )
        ts += dur + 10.0
    if getattr(kernel, "CORRUPT_TRACE", False):
        with open(os.path.join(run_dir, "host.trace.json.gz"), "wb") as f:
            f.write(gzip.compress(b'{"traceEvents": [ {"ph": "X", "pid": 3, ')[:-4])
        return
    with gzip.open(os.path.join(run_dir, "host.trace.json.gz"), "wt") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events + [{}]}, f)


if __name__ == "__main__":
    sys.exit(main())
