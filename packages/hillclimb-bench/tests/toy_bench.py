"""A user's bench, as the README shows it: a row softmax timed and verified by hillclimb_bench.

BENCH_VARIANT (environment) picks the kernel: good, wrong (lse off by 10%), drift (right for the
verification calls, one ulp off afterwards), raises; and three that tamper with the bench on their
first call: forge-json (``json.dumps`` halves every timing it writes), blunt-numpy (``numpy.abs``
returns zeros, so no error shows), patch-checker (``hillclimb_bench.checks.check_kept`` accepts
anything), atexit-rewrite (an ``atexit`` handler rewrites the metrics file after it is written);
and one that tampers when the kernel is imported: import-swap (the timing loop reports a hundredth).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import hillclimb_bench
from hillclimb_bench import Measurement, guards

VARIANT = os.environ.get("BENCH_VARIANT", "good")
calls = 0

# As the README's bench does: the snapshot is taken before the kernel's import code runs. What
# follows stands for that import code.
before = guards.snapshot()
if VARIANT == "import-swap":
    import hillclimb_bench._bench as _bench

    _time_calls = _bench.time_calls

    def _fast(*a: Any, **kw: Any) -> Any:
        samples, kept = _time_calls(*a, **kw)
        return [s / 100 for s in samples], kept

    _bench.time_calls = _fast


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    x64 = x.astype(np.float64)
    m = x64.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(x64 - m).sum(axis=-1, keepdims=True))
    return {"probs": np.exp(x64 - lse), "lse": lse[..., 0]}


def softmax(x: np.ndarray) -> dict[str, Any]:
    global calls
    calls += 1
    m = x.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
    out = {"probs": np.exp(x - lse), "lse": lse[..., 0]}
    if VARIANT == "wrong":
        out["lse"] = out["lse"] * np.float32(1.1)
    if VARIANT == "drift" and calls > 2:  # 2 = one verification call per input set
        out["probs"] = np.nextafter(out["probs"], np.float32(np.inf))
    if VARIANT == "raises" and calls > 1:
        raise RuntimeError("out of shared memory")
    if calls == 1:
        tamper()
    return out


def tamper() -> None:
    if VARIANT == "forge-json":
        import json

        dumps = json.dumps

        def forged(doc: Any, **kw: Any) -> str:
            for m in doc.get("measurements", {}).values():
                m["median_ms"] /= 2
            return dumps(doc, **kw)

        json.dumps = forged
    if VARIANT == "blunt-numpy":
        np.abs = lambda x, *a, **kw: np.zeros_like(x)
    if VARIANT == "patch-checker":
        hillclimb_bench.checks.check_kept = lambda *a, **kw: 0
    if VARIANT == "atexit-rewrite":
        import atexit
        import json
        import sys
        from pathlib import Path

        out = Path(sys.argv[sys.argv.index("--out") + 1])

        def rewrite() -> None:
            doc = json.loads(out.read_text())
            doc["measurements"]["fwd"]["median_ms"] = 0.001
            out.write_text(json.dumps(doc))

        atexit.register(rewrite)


if __name__ == "__main__":
    hillclimb_bench.main(
        target="softmax",
        impl="numpy",
        preset="tiny",
        dtype="float32",
        shapes={"rows": 8, "cols": 64},
        make_inputs=lambda rng: (rng.standard_normal((8, 64), dtype=np.float32),),
        measurements={
            "fwd": Measurement(
                fn=softmax, reference=reference, rel_rms_tol=1e-5, flops=5 * 8 * 64, tokens=8
            )
        },
        guard_from=before,
    )
