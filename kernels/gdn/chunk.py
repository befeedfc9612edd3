"""Chunked Gated DeltaNet in pure JAX/XLA (WY representation with a triangular solve).

Named stages, as in fla's ``chunk.py``: chunk-local gate cumsum -> WY representation (``u``, ``w``)
and intra-chunk attention, all chunks at once -> a ``lax.scan`` over chunks carrying the state.
The derivation is in ``kernels/gdn/README.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

_HIGHEST = lax.Precision.HIGHEST


def chunk_gdn_xla(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    g: jax.Array,
    beta: jax.Array,
    *,
    chunk_size: int,
    scale: float,
    initial_state: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Chunked gated delta rule (``impl="chunked_xla"``), differentiable by JAX autodiff.

    Args:
        q: queries ``[B, T, H, K]``.
        k: keys ``[B, T, H, K]``.
        v: values ``[B, T, H, V]``.
        g: log-decay ``[B, T, H]``.
        beta: write strength ``[B, T, H]``.
        chunk_size: tokens per chunk ``C``; ``T`` is zero-padded to a multiple of it (padded
            tokens have ``g = 0`` and ``k = v = beta = 0``, so they leave the state unchanged).
        scale: query scale.
        initial_state: ``[B, H, K, V]``; zeros when ``None``.

    Returns:
        ``o`` ``[B, T, H, V]`` in ``v.dtype`` and the final state ``[B, H, K, V]`` in float32.
    """
    B, T, H, K = q.shape
    V = v.shape[-1]
    f32 = jnp.float32
    if initial_state is None:
        initial_state = jnp.zeros((B, H, K, V), f32)

    q_c = to_chunks(q.astype(f32) * scale, chunk_size=chunk_size)  # [B, H, NC, C, K]
    k_c = to_chunks(k.astype(f32), chunk_size=chunk_size)  # [B, H, NC, C, K]
    v_c = to_chunks(v.astype(f32), chunk_size=chunk_size)  # [B, H, NC, C, V]
    g_c = to_chunks(g.astype(f32), chunk_size=chunk_size)  # [B, H, NC, C]
    b_c = to_chunks(beta.astype(f32), chunk_size=chunk_size)  # [B, H, NC, C]

    gamma = chunk_local_cumsum(g=g_c)  # [B, H, NC, C]
    w, u = wy_representation(k=k_c, v=v_c, beta=b_c, gamma=gamma)
    attn = intra_chunk_attention(q=q_c, k=k_c, gamma=gamma)  # [B, H, NC, C, C]
    o, final_state = chunk_recurrence(
        q=q_c, k=k_c, w=w, u=u, attn=attn, gamma=gamma, initial_state=initial_state.astype(f32)
    )
    o = jnp.transpose(o, (0, 2, 3, 1, 4)).reshape(B, -1, H, V)[:, :T]  # [B, T, H, V]
    return o.astype(v.dtype), final_state


def to_chunks(x: jax.Array, *, chunk_size: int) -> jax.Array:
    """``[B, T, H, ...]`` -> head-first chunks ``[B, H, NC, C, ...]``, zero-padding ``T``."""
    B, T, H = x.shape[:3]
    num_chunks = -(-T // chunk_size)
    pad = num_chunks * chunk_size - T
    x = jnp.pad(x, [(0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 2))
    x = x.reshape(B, num_chunks, chunk_size, H, *x.shape[3:])
    return jnp.moveaxis(x, 3, 1)


def chunk_local_cumsum(*, g: jax.Array) -> jax.Array:
    """``gamma_i = sum_{s <= i} g_s``, restarted in every chunk. ``g`` ``[..., C]``."""
    return jnp.cumsum(g, axis=-1)


def decay_matrix(gamma: jax.Array, *, include_diagonal: bool) -> jax.Array:
    """``Gamma_ij = exp(gamma_i - gamma_j)`` on the causal part, else 0. ``gamma`` ``[..., C]``.

    The difference is masked *before* ``exp``: above the diagonal it is positive and can overflow,
    and ``inf * 0`` would give NaN in the values or in the gradient.
    """
    C = gamma.shape[-1]
    i = jnp.arange(C)[:, None]
    j = jnp.arange(C)[None, :]
    mask = i >= j if include_diagonal else i > j
    diff = gamma[..., :, None] - gamma[..., None, :]  # [..., C, C]
    return jnp.where(mask, jnp.exp(jnp.where(mask, diff, 0.0)), 0.0)


def wy_representation(
    *, k: jax.Array, v: jax.Array, beta: jax.Array, gamma: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``w = T (beta * exp(gamma) * k)`` and ``u = T (beta * v)`` with ``T = (I + M)^-1``.

    ``M_ij = beta_i (k_i . k_j) exp(gamma_i - gamma_j)`` for ``i > j`` (strictly lower), so
    ``I + M`` is unit lower triangular and one triangular solve handles both right-hand sides.

    Args:
        k: ``[..., C, K]``; v: ``[..., C, V]``; beta, gamma: ``[..., C]``.

    Returns:
        ``w`` ``[..., C, K]`` and ``u`` ``[..., C, V]``.
    """
    V = v.shape[-1]
    kk = jnp.einsum("...ik,...jk->...ij", k, k, precision=_HIGHEST)  # [..., C, C]
    m = beta[..., :, None] * kk * decay_matrix(gamma, include_diagonal=False)  # [..., C, C]
    rhs = jnp.concatenate(
        [beta[..., None] * v, (beta * jnp.exp(gamma))[..., None] * k], axis=-1
    )  # [..., C, V + K]
    sol = lax.linalg.triangular_solve(m, rhs, left_side=True, lower=True, unit_diagonal=True)
    return sol[..., V:], sol[..., :V]


def intra_chunk_attention(*, q: jax.Array, k: jax.Array, gamma: jax.Array) -> jax.Array:
    """``(q k^T) * Gamma`` on the causal part including the diagonal. ``[..., C, C]``."""
    qk = jnp.einsum("...ik,...jk->...ij", q, k, precision=_HIGHEST)
    return qk * decay_matrix(gamma, include_diagonal=True)


def chunk_recurrence(
    *,
    q: jax.Array,
    k: jax.Array,
    w: jax.Array,
    u: jax.Array,
    attn: jax.Array,
    gamma: jax.Array,
    initial_state: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """The only sequential part: walk the chunks, carrying the ``[B, H, K, V]`` state.

    Per chunk with entering state ``S``: ``v_new = u - w S``;
    ``o = (q * e^gamma) S + attn v_new``;
    ``S' = e^{gamma_last} S + (k * e^{gamma_last - gamma})^T v_new``.

    Args:
        q, k, w: ``[B, H, NC, C, K]``; u: ``[B, H, NC, C, V]``; attn: ``[B, H, NC, C, C]``;
        gamma: ``[B, H, NC, C]``; initial_state: ``[B, H, K, V]`` float32.

    Returns:
        ``o`` ``[B, H, NC, C, V]`` and the final state ``[B, H, K, V]``.
    """

    @jax.checkpoint
    def step(state, xs):  # state [B, H, K, V]
        q_c, k_c, w_c, u_c, attn_c, g_c = xs  # [B, H, C, ...]
        g_last = g_c[..., -1]  # [B, H]
        v_new = u_c - jnp.einsum("bhck,bhkv->bhcv", w_c, state, precision=_HIGHEST)
        o_c = jnp.einsum(
            "bhck,bhkv->bhcv", q_c * jnp.exp(g_c)[..., None], state, precision=_HIGHEST
        ) + jnp.einsum("bhij,bhjv->bhiv", attn_c, v_new, precision=_HIGHEST)
        k_tail = k_c * jnp.exp(g_last[..., None] - g_c)[..., None]  # [B, H, C, K]
        state = jnp.exp(g_last)[..., None, None] * state + jnp.einsum(
            "bhck,bhcv->bhkv", k_tail, v_new, precision=_HIGHEST
        )
        return state, o_c

    xs = tuple(jnp.moveaxis(x, 2, 0) for x in (q, k, w, u, attn, gamma))
    final_state, o = lax.scan(step, initial_state, xs)
    return jnp.moveaxis(o, 0, 2), final_state
