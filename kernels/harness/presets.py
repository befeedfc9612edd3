"""Benchmark shape registry (protected), kept apart from the correctness shapes in ``spec.py``.

A kernel preset fixes the problem (B, T, H, K, V, dtype); the chunk size is the kernel's own choice
(``kernels/gdn``), so tuning it is fair game while the FLOP convention stays fixed. A model preset
fixes the GDN hybrid language model whose training step the bench times beside the kernel
(``model.py``); each model's GDN layers have the shape of one kernel preset (``layer_preset``), so
the two levels measure the same layer.
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


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """One GDN hybrid model and its batch (``model.py``). ``heads`` and ``head_dim`` serve both
    layer kinds: a GDN layer has ``H = heads`` and ``K = V = head_dim``."""

    name: str
    vocab: int
    d_model: int
    n_layers: int
    heads: int
    head_dim: int
    mlp_dim: int
    seq_len: int
    batch: int
    dtype: str
    # The kernel preset with the shape of one of this model's GDN layers.
    layer_preset: str
    description: str
    # Layer i is attention when i % block == block - 1: three GDN layers to one attention layer.
    block: int = 4
    conv_width: int = 4
    # AdamW, constant learning rate (no schedule: the bench times steps, it does not train).
    learning_rate: float = 1e-3
    b1: float = 0.9
    b2: float = 0.95
    eps: float = 1e-8
    weight_decay: float = 0.1

    @property
    def layer_kinds(self) -> tuple[str, ...]:
        return tuple(
            "attention" if i % self.block == self.block - 1 else "gdn" for i in range(self.n_layers)
        )

    @property
    def gdn_layers(self) -> int:
        return self.layer_kinds.count("gdn")

    @property
    def stacks(self) -> tuple[tuple[str, int], ...]:
        """Runs of consecutive layers of one kind, ``(kind, count)``: each is one ``lax.scan``
        over stacked parameters (as Levanter stacks layers), so the kernel is traced and compiled
        once per run, not once per layer."""
        runs: list[tuple[str, int]] = []
        for kind in self.layer_kinds:
            if runs and runs[-1][0] == kind:
                runs[-1] = (kind, runs[-1][1] + 1)
            else:
                runs.append((kind, 1))
        return tuple(runs)

    @property
    def tokens_per_step(self) -> int:
        return self.batch * self.seq_len

    def as_dict(self) -> dict[str, object]:
        """The configuration as the metrics JSON records it."""
        out: dict[str, object] = dataclasses.asdict(self)
        out["layer_kinds"] = list(self.layer_kinds)
        return out


MODEL_PRESETS: dict[str, ModelConfig] = {
    m.name: m
    for m in (
        ModelConfig(
            "tiny",
            vocab=256,
            d_model=64,
            n_layers=4,
            heads=2,
            head_dim=32,
            mlp_dim=128,
            seq_len=256,
            batch=1,
            dtype="float32",
            layer_preset="tiny",
            description="CPU: one block of the hybrid (3 GDN + 1 attention layers), D = 64; a "
            "step takes tens of milliseconds in Pallas interpret mode",
        ),
        ModelConfig(
            "130m",
            vocab=128256,
            d_model=512,
            n_layers=6,
            heads=8,
            head_dim=64,
            mlp_dim=1792,
            seq_len=4096,
            batch=2,
            dtype="bfloat16",
            layer_preset="130m-layer",
            description="Accelerators: the seed loop's 130m hybrid (5 GDN + 1 attention layers, "
            "Llama 3 vocabulary), seq 4096; batch 2 per device = the seed loop's global batch 8 "
            "on v5p-8's 4 devices",
        ),
    )
}
