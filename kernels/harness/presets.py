"""Benchmark shape registry (protected), kept apart from the correctness shapes in ``spec.py``.

A preset fixes the problem (B, T, H, K, V, dtype); the chunk size is the kernel's own choice
(``kernels/gdn``), so tuning it is fair game while the FLOP convention stays fixed.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Preset:
    name: str
    B: int
    T: int
    H: int
    K: int
    V: int
    dtype: str
    description: str


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "tiny",
            B=1,
            T=256,
            H=2,
            K=32,
            V=32,
            dtype="float32",
            description="CPU smoke and the local demo; seconds in interpret mode",
        ),
        Preset(
            "cpu-long",
            B=1,
            T=2048,
            H=1,
            K=32,
            V=32,
            dtype="float32",
            description="CPU: long sequence, small state: the token recurrence is latency-bound "
            "(per-step overhead > its 7KV FLOPs), the regime chunking targets",
        ),
        Preset(
            "130m-layer",
            B=2,
            T=4096,
            H=8,
            K=64,
            V=64,
            dtype="bfloat16",
            description="TPU: one GDN layer of the 130m hybrid model (marin's profile runs)",
        ),
        Preset(
            "qwen3next-like",
            B=1,
            T=4096,
            H=32,
            K=128,
            V=128,
            dtype="bfloat16",
            description="TPU: Qwen3-Next-like heads (32 value heads, head dim 128)",
        ),
    )
}
