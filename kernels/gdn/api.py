"""Public entry point: ``gdn(q, k, v, g, beta, ...)`` with a choice of implementation."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from .chunk import chunk_gdn_xla
from .naive import recurrent_gdn
from .pallas_tpu import BlockSizes, chunk_gdn_pallas

IMPLS = ("recurrent", "chunked_xla", "pallas")
DEFAULT_IMPL = "pallas"
# Default chunk of the XLA path per backend: CPU has no matrix unit, so a short chunk (less C^2
# work, still T/C sequential steps instead of T) is fastest there.
XLA_CHUNK_SIZE = {"cpu": 16}
XLA_CHUNK_SIZE_DEFAULT = 64


def resolve_chunk_size(impl: str, *, T: int, K: int, V: int) -> int:
    """The chunk size ``gdn`` uses when ``chunk_size=None`` (1 for the token recurrence)."""
    if impl == "recurrent":
        return 1
    if impl == "chunked_xla":
        return XLA_CHUNK_SIZE.get(jax.default_backend(), XLA_CHUNK_SIZE_DEFAULT)
    return BlockSizes.get_default(T=T, K=K, V=V).chunk_size


@functools.partial(
    jax.jit,
    static_argnames=(
        "chunk_size",
        "scale",
        "output_final_state",
        "use_qk_l2norm",
        "impl",
        "interpret",
    ),
)
def gdn(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    g: jax.Array,
    beta: jax.Array,
    *,
    chunk_size: int | None = None,
    scale: float | None = None,
    initial_state: jax.Array | None = None,
    output_final_state: bool = False,
    use_qk_l2norm: bool = False,
    impl: str = DEFAULT_IMPL,
    interpret: Any = None,
) -> tuple[jax.Array, jax.Array | None]:
    """Gated DeltaNet (gated delta rule) over a whole sequence.

    Per head and token: ``S = exp(g_t) S``; ``S = S + k_t (beta_t (v_t - S^T k_t))^T``;
    ``o_t = S^T (scale q_t)``. Differentiable in every array argument.

    Args:
        q: queries ``[B, T, H, K]``.
        k: keys ``[B, T, H, K]``; the delta rule expects them L2-normalised (see ``use_qk_l2norm``).
        v: values ``[B, T, H, V]``.
        g: log-decay ``[B, T, H]`` (``alpha = exp(g)``; usually ``g <= 0``).
        beta: write strength ``[B, T, H]``, usually in ``(0, 1)``.
        chunk_size: tokens per chunk for the chunked implementations. ``None``: the default of
            ``resolve_chunk_size`` (``BlockSizes.get_default`` for ``pallas``; 16 on CPU and 64
            elsewhere for ``chunked_xla``). Ignored by ``recurrent``. ``pallas`` needs a multiple
            of 8.
        scale: query scale; ``K ** -0.5`` when ``None``.
        initial_state: ``[B, H, K, V]`` state before the first token; zeros when ``None``.
        output_final_state: also return the state after the last token.
        use_qk_l2norm: L2-normalise q and k over ``K`` first (in XLA, outside the kernels).
        impl: ``"recurrent"`` (lax.scan over tokens), ``"chunked_xla"`` (chunked WY form in XLA)
            or ``"pallas"`` (chunked Pallas TPU kernels with a Pallas backward).
        interpret: Pallas interpret mode. ``None`` chooses it automatically: interpret unless the
            default backend is a TPU.

    Returns:
        ``(o, final_state)``: ``o`` ``[B, T, H, V]`` in ``v.dtype``; ``final_state``
        ``[B, H, K, V]`` float32 when ``output_final_state``, else ``None``.

    Examples:
        >>> o, s = gdn(q, k, v, g, beta, output_final_state=True, impl="chunked_xla")
    """
    _validate(q, k, v, g, beta, initial_state=initial_state, impl=impl, chunk_size=chunk_size)
    _, T, _, K = q.shape
    V = v.shape[-1]
    if scale is None:
        scale = K**-0.5
    if use_qk_l2norm:
        q, k = l2norm(q), l2norm(k)

    if impl == "recurrent":
        o, final_state = recurrent_gdn(q, k, v, g, beta, scale=scale, initial_state=initial_state)
    elif impl == "chunked_xla":
        o, final_state = chunk_gdn_xla(
            q,
            k,
            v,
            g,
            beta,
            chunk_size=(
                resolve_chunk_size(impl, T=T, K=K, V=V) if chunk_size is None else chunk_size
            ),
            scale=scale,
            initial_state=initial_state,
        )
    else:
        if interpret is None:
            interpret = jax.default_backend() != "tpu"
        block_sizes = (
            BlockSizes.get_default(T=T, K=K, V=V)
            if chunk_size is None
            else BlockSizes(chunk_size=chunk_size)
        )
        o, final_state = chunk_gdn_pallas(
            q,
            k,
            v,
            g,
            beta,
            scale=scale,
            initial_state=initial_state,
            block_sizes=block_sizes,
            output_final_state=output_final_state,
            interpret=interpret,
        )
    return o, (final_state if output_final_state else None)


def l2norm(x: jax.Array, eps: float = 1e-6) -> jax.Array:
    """``x * rsqrt(sum(x^2) + eps)`` over the last axis, computed in float32."""
    x32 = x.astype(jnp.float32)
    return (x32 * jax.lax.rsqrt(jnp.sum(x32 * x32, axis=-1, keepdims=True) + eps)).astype(x.dtype)


def _validate(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    g: jax.Array,
    beta: jax.Array,
    *,
    initial_state: jax.Array | None,
    impl: str,
    chunk_size: int | None,
) -> None:
    """Check shapes and arguments before anything is traced further; errors name the values."""
    if impl not in IMPLS:
        raise ValueError(f"{impl=} is not one of {IMPLS}")
    if q.ndim != 4:
        raise ValueError(f"q must be [B, T, H, K]; got {q.shape=}")
    B, T, H, K = q.shape
    if k.shape != q.shape:
        raise ValueError(f"k must match q [B, T, H, K]; got {k.shape=}, {q.shape=}")
    if v.ndim != 4 or v.shape[:3] != (B, T, H):
        raise ValueError(f"v must be [B, T, H, V] = [{B}, {T}, {H}, V]; got {v.shape=}")
    for name, x in (("g", g), ("beta", beta)):
        if x.shape != (B, T, H):
            raise ValueError(f"{name} must be [B, T, H] = {(B, T, H)}; got {name}.shape={x.shape}")
    if initial_state is not None and initial_state.shape != (B, H, K, v.shape[-1]):
        raise ValueError(
            f"initial_state must be [B, H, K, V] = {(B, H, K, v.shape[-1])}; "
            f"got {initial_state.shape=}"
        )
    for name, x in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)):
        if not jnp.issubdtype(x.dtype, jnp.floating):
            raise ValueError(f"{name} must be a floating dtype; got {name}.dtype={x.dtype}")
    if chunk_size is not None:
        if not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(f"{chunk_size=} must be a positive int")
        if impl == "pallas":
            BlockSizes(chunk_size=chunk_size)  # raises with the rule it breaks
