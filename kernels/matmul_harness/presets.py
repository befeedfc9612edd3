"""Problem sizes and tolerances of the ``matmul`` target (protected).

A preset is the problem only — ``M``, ``N``, ``K``, dtype and activation. The tiles (``bm``, ``bn``,
``bk``) are the kernel's own choice, the knob the agent tunes, so no preset fixes them.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Preset:
    """``y = act(x @ w + b)`` with ``x`` [M, K], ``w`` [K, N], ``b`` [N]; ``device`` is where the
    preset is meant to run (``cpu``: Pallas interpret mode, seconds; ``tpu``: Mosaic)."""

    name: str
    M: int
    N: int
    K: int
    dtype: str
    activation: str
    device: str

    @property
    def flops(self) -> int:
        """FLOPs of one call: ``2·M·N·K`` for the product plus ``EPILOGUE_FLOPS`` per output
        element for the bias and activation (a convention: the tanh counts as one)."""
        return 2 * self.M * self.N * self.K + EPILOGUE_FLOPS[self.activation] * self.M * self.N


# Per output element: the bias add, plus the activation's arithmetic. GELU (tanh approximation):
# y³ (2), ·0.044715, +y, ·√(2/π), tanh, +1, ·y, ·0.5 = 9. SiLU: neg, exp, +1, 1/·, ·y = 5.
EPILOGUE_FLOPS = {"gelu": 1 + 9, "silu": 1 + 5, "none": 1}

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        # CPU, interpret mode: the loop's default bench and the gate tests' size class.
        Preset("tiny", M=512, N=512, K=512, dtype="float32", activation="gelu", device="cpu"),
        Preset("tiny-bf16", M=256, N=256, K=512, dtype="bfloat16", activation="silu", device="cpu"),
        # TPU: a square bf16 matmul, and a transformer MLP up-projection (8k tokens, d=4096,
        # ffn=14336) with its GELU fused.
        Preset(
            "4k-bf16", M=4096, N=4096, K=4096, dtype="bfloat16", activation="gelu", device="tpu"
        ),
        Preset(
            "mlp-up-bf16",
            M=8192,
            N=14336,
            K=4096,
            dtype="bfloat16",
            activation="gelu",
            device="tpu",
        ),
    )
}

# Relative RMS error ||y - ref|| / ||ref|| against the float32 oracle. float32: accumulation order
# only (~1e-7 seen on CPU; the bound leaves room for the TPU's float32 MXU passes). bfloat16: the
# output's rounding to 8 bits of mantissa (~2e-3 seen).
REL_RMS_TOL = {"float32": 1e-5, "bfloat16": 1e-2}
