"""FLOP conventions, device peaks and MFU (protected; see docs/metrics.md).

Kernel FLOPs use a *fixed* reference chunk size and the forward-substitution inverse
(``kernels/gdn/README.md``), so a different chunk size or a costlier inverse cannot raise the score.
Model FLOPs follow Levanter's ``flops_per_token`` for marin's GDN hybrid (forward per component,
training = 3x forward), so a model MFU here means what the seed loop's ``throughput/mfu`` meant.

Peaks come from ``schemas/device-peaks.json``, the one table the engine's roofline reads too
(``src/trace/peaks.ts``), matched by the exact JAX ``device_kind``, through
``hillclimb_bench.peaks``. A device that is not in it (every CPU) or has no figure for the dtype
gets a *measured* peak instead: the best of a few large matmuls at that dtype, timed in the bench's
own process -- labelled as such wherever it is shown, never mistaken for a datasheet number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hillclimb_bench import peaks as _peaks
from hillclimb_bench.peaks import PEAK_DTYPES as PEAK_DTYPES
from hillclimb_bench.peaks import DevicePeak
from hillclimb_bench.peaks import measure_matmul_peak as measure_matmul_peak
from hillclimb_bench.peaks import mfu as mfu

REFERENCE_CHUNK = 64
DEVICE_PEAKS_PATH = Path(__file__).resolve().parents[2] / "schemas" / "device-peaks.json"

# --- kernel FLOPs ---------------------------------------------------------------------------------


def fwd_flops_per_token_head(K: int, V: int, C: int = REFERENCE_CHUNK) -> float:
    """Chunked forward per token per head: ``6CK + 4CV + 6KV + C^2/3``.

    Per chunk: ``QK^T`` and ``KK^T`` ``4C^2K``; inverse by forward substitution ``C^3/3``;
    ``T [beta V | beta e^g K]`` ``2C^2(K+V)``; ``W S``, ``(Q e^g) S``, ``K~^T V_new`` ``6CKV``;
    ``attn V_new`` ``2C^2V``; divided by ``C`` tokens.
    """
    return 6 * C * K + 4 * C * V + 6 * K * V + C * C / 3


def model_flops(*, B: int, T: int, H: int, K: int, V: int, measurement: str) -> float:
    """FLOPs per call under the fixed convention: forward, and ``fwd_bwd = 3 x fwd``."""
    fwd = B * T * H * fwd_flops_per_token_head(K, V)
    if measurement == "fwd":
        return fwd
    if measurement == "fwd_bwd":
        return 3 * fwd
    raise ValueError(f"{measurement=} is not one of fwd, fwd_bwd")


def executed_flops(
    *, impl: str, B: int, T: int, H: int, K: int, V: int, chunk_size: int, measurement: str
) -> float:
    """An estimate of the work the implementation does: the chunked formula at the chunk size it
    actually used (still forward substitution), or ``7KV`` per token per head for the recurrence;
    padding included. ``fwd_bwd = 3 x fwd``."""
    if impl == "recurrent":
        fwd = B * T * H * 7.0 * K * V
    else:
        padded = -(-T // chunk_size) * chunk_size
        fwd = B * padded * H * fwd_flops_per_token_head(K, V, chunk_size)
    return fwd if measurement == "fwd" else 3 * fwd


# --- model FLOPs ----------------------------------------------------------------------------------

# The components of model_flops_per_token, in the order the metrics list them.
MODEL_COMPONENTS = (
    "lm_head",
    "mlp",
    "attention_proj",
    "attention_scores",
    "attention_softmax",
    "gdn_proj",
    "gdn_conv",
    "gdn_core",
)
# The components that are matrix products in the model (dot_generals in its jaxpr); the rest are
# elementwise (softmax, the depthwise convolution) or the GDN core's convention.
MATMUL_COMPONENTS = ("lm_head", "mlp", "attention_proj", "attention_scores", "gdn_proj")


def model_flops_per_token(cfg: Any) -> dict[str, float]:
    """Forward FLOPs per token of the GDN hybrid (``model.ModelConfig``), by component.

    Levanter's ``HackableTransformerConfig.flops_per_token`` convention, with ``D`` = d_model,
    ``I`` = mlp_dim, ``L`` = seq_len, ``H`` heads of size ``hd`` (GDN ``K = V = hd``):

    - ``lm_head``: ``2 D vocab`` (the embedding lookup is free)
    - ``mlp``: ``2 * 3 D I`` per layer (SwiGLU gate, up, down)
    - ``attention_proj``: ``2 D (3 H hd) + 2 (H hd) D`` per attention layer (QKV and out)
    - ``attention_scores``: ``2 L H hd + 2 L H hd`` per attention layer (``QK^T`` over all ``L``
      keys and ``PV``; the causal mask is not discounted)
    - ``attention_softmax``: ``3 L H`` per attention layer
    - ``gdn_proj``: ``2 D (2 Kd + 2 Vd) + 2 D (2 H) + 2 Vd D`` per GDN layer (qkvz, gates, out)
    - ``gdn_conv``: ``2 (2 Kd + Vd) W`` per GDN layer (the width-``W`` depthwise convolution)
    - ``gdn_core``: ``6 H K V`` per GDN layer: the recurrent minimum (three ``K x V`` mat-vecs per
      token and head), whatever the kernel executes -- as Levanter credits it, so the kernel's
      chunked overhead never counts as useful work at the model level.
    """
    D, I, L = cfg.d_model, cfg.mlp_dim, cfg.seq_len
    H, hd, W = cfg.heads, cfg.head_dim, cfg.conv_width
    Kd = Vd = H * hd
    n_gdn = cfg.gdn_layers
    n_attn = cfg.n_layers - n_gdn
    return {
        "lm_head": 2.0 * D * cfg.vocab,
        "mlp": cfg.n_layers * 2.0 * 3 * D * I,
        "attention_proj": n_attn * (2.0 * D * 3 * H * hd + 2.0 * H * hd * D),
        "attention_scores": n_attn * (2.0 * L * H * hd + 2.0 * L * H * hd),
        "attention_softmax": n_attn * 3.0 * L * H,
        "gdn_proj": n_gdn * (2.0 * D * (2 * Kd + 2 * Vd) + 2.0 * D * 2 * H + 2.0 * Vd * D),
        "gdn_conv": n_gdn * 2.0 * (2 * Kd + Vd) * W,
        "gdn_core": n_gdn * 6.0 * H * hd * hd,
    }


def train_step_flops(cfg: Any) -> float:
    """Model FLOPs of one training step: ``3 x`` the forward FLOPs of every token of the batch
    (backward = 2 x forward; the optimizer is not counted, as in Levanter)."""
    return 3.0 * sum(model_flops_per_token(cfg).values()) * cfg.tokens_per_step


# --- peaks ---------------------------------------------------------------------------------------
# The table, its reading and the measured peak are hillclimb_bench.peaks; the harness always reads
# its own checkout's table (protected, like the harness), never a copy installed with the package.


def device_peak_table() -> tuple[dict[str, Any], ...]:
    """The entries of ``schemas/device-peaks.json``, checked (``ValueError`` naming the entry)."""
    return _peaks.device_peak_table(DEVICE_PEAKS_PATH)


def peak_for_device_kind(device_kind: str) -> DevicePeak | None:
    """The table's peaks for this exact JAX ``device_kind`` (``None`` when it is not listed)."""
    return _peaks.peak_for_device_kind(device_kind, DEVICE_PEAKS_PATH)


def peak_flops_per_device(device_kind: str, dtype: str = "bfloat16") -> float | None:
    """The table's dense peak of one device at ``dtype`` (``None``: not in the table, or no
    figure for that dtype; the bench then measures one)."""
    peak = peak_for_device_kind(device_kind)
    return None if peak is None else peak.flops(dtype)


def unknown_device_warning(device_kind: str, dtype: str) -> str | None:
    """One line naming a device (or dtype) the table has no peak for; ``None`` when it has."""
    return _peaks.unknown_device_warning(device_kind, dtype, DEVICE_PEAKS_PATH)


def peak_entry(device_kind: str, dtype: str) -> dict[str, Any]:
    """``device.peak`` of the metrics: the table's peak at ``dtype``, or one measured now."""
    peak = _peaks.peak_entry(device_kind, dtype, DEVICE_PEAKS_PATH)
    assert peak is not None, f"{dtype} is not a preset dtype"  # presets are bfloat16 or float32
    return peak
