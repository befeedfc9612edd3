"""FLOP conventions, device peak table and MFU (protected; see docs/metrics.md).

Model FLOPs use a *fixed* reference chunk size and the forward-substitution inverse
(``kernels/gdn/README.md``), so a different chunk size or a costlier inverse cannot raise the score.
"""

from __future__ import annotations

REFERENCE_CHUNK = 64

# Dense bf16 peak FLOP/s per JAX device, keyed by lower-cased ``device_kind``. TPU values follow
# Levanter's table (v5p/v4 per chip = per JAX device; v5e/v6e single-core chips).
PEAK_FLOPS_PER_DEVICE: dict[str, float] = {
    "tpu v4": 275e12,
    "tpu v5 lite": 197e12,
    "tpu v5e": 197e12,
    "tpu v5": 459e12,
    "tpu v5p": 459e12,
    "tpu v6 lite": 918e12,
    "tpu v6e": 918e12,
}
# GPUs by substring of the lower-cased device_kind, most specific first.
_GPU_PEAKS: tuple[tuple[str, float], ...] = (
    ("h100 pcie", 756e12),
    ("h100", 989e12),
    ("h200", 989e12),
)


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


def peak_flops_per_device(device_kind: str) -> float | None:
    """Dense bf16 peak of one device, or ``None`` (CPU and unknown devices: MFU is blank)."""
    kind = device_kind.strip().lower()
    if kind in PEAK_FLOPS_PER_DEVICE:
        return PEAK_FLOPS_PER_DEVICE[kind]
    for key, peak in _GPU_PEAKS:
        if key in kind:
            return peak
    return None


def mfu(flops: float, seconds: float, peak: float | None) -> float | None:
    """Model FLOPs utilisation as a fraction of one device's peak (``None`` without a peak)."""
    if peak is None or seconds <= 0:
        return None
    return flops / seconds / peak
