"""Chunked Gated DeltaNet in pure JAX/XLA (WY representation with a triangular solve).

Named stages, as in fla's ``chunk.py``: chunk-local gate cumsum -> decay matrix -> WY
representation (``u``, ``w``, one unit-lower triangular solve per chunk) and intra-chunk attention,
all chunks at once -> a ``lax.scan`` over chunks carrying the state. The derivation is in
``kernels/gdn/README.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def _precision() -> lax.Precision:
    """HIGHEST where DEFAULT would round f32 matmul inputs (TPU, GPU). On CPU DEFAULT is already
    exact f32, and XLA:CPU runs HIGHEST dots on a ~3x slower path."""
    return lax.Precision.DEFAULT if jax.default_backend() == "cpu" else lax.Precision.HIGHEST


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
    decay = decay_matrix(gamma)  # [B, H, NC, C, C]
    w, u = wy_representation(k=k_c, v=v_c, beta=b_c, gamma=gamma, decay=decay)
    attn = intra_chunk_attention(q=q_c, k=k_c, decay=decay)  # [B, H, NC, C, C]
    g_last = gamma[..., -1:]  # [B, H, NC, 1]
    o, final_state = chunk_recurrence(
        q_decay=q_c * jnp.exp(gamma)[..., None],
        k_tail=k_c * jnp.exp(g_last - gamma)[..., None],
        w=w,
        u=u,
        attn=attn,
        state_decay=jnp.exp(g_last[..., 0]),
        initial_state=initial_state.astype(f32),
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


def decay_matrix(gamma: jax.Array) -> jax.Array:
    """``Gamma_ij = exp(gamma_i - gamma_j)`` for ``i >= j``, else 0. ``gamma`` ``[..., C]``.

    The difference is masked *before* ``exp``: above the diagonal it is positive and can overflow,
    and ``inf * 0`` would give NaN in the values or in the gradient.
    """
    C = gamma.shape[-1]
    causal = jnp.arange(C)[:, None] >= jnp.arange(C)[None, :]
    diff = gamma[..., :, None] - gamma[..., None, :]  # [..., C, C]
    return jnp.where(causal, jnp.exp(jnp.where(causal, diff, 0.0)), 0.0)


def wy_representation(
    *, k: jax.Array, v: jax.Array, beta: jax.Array, gamma: jax.Array, decay: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``w = T (beta * exp(gamma) * k)`` and ``u = T (beta * v)`` with ``T = (I + M)^-1``.

    ``M_ij = beta_i (k_i . k_j) exp(gamma_i - gamma_j)`` for ``i > j`` (strictly lower), so
    ``I + M`` is unit lower triangular and one solve handles both right-hand sides.

    Args:
        k: ``[..., C, K]``; v: ``[..., C, V]``; beta, gamma: ``[..., C]``; decay: ``[..., C, C]``.

    Returns:
        ``w`` ``[..., C, K]`` and ``u`` ``[..., C, V]``.
    """
    C, V = k.shape[-2], v.shape[-1]
    strict = jnp.arange(C)[:, None] > jnp.arange(C)[None, :]
    kk = jnp.einsum("...ik,...jk->...ij", k, k, precision=_precision())  # [..., C, C]
    m = jnp.where(strict, beta[..., :, None] * kk * decay, 0.0)  # [..., C, C]
    rhs = jnp.concatenate(
        [beta[..., None] * v, (beta * jnp.exp(gamma))[..., None] * k], axis=-1
    )  # [..., C, V + K]
    sol = solve_unit_lower(m, rhs)
    return sol[..., V:], sol[..., :V]


def solve_unit_lower(m: jax.Array, rhs: jax.Array) -> jax.Array:
    """Solve ``(I + m) x = rhs`` for strictly lower ``m`` ``[..., C, C]``, ``rhs`` ``[..., C, R]``.

    Forward substitution, row by row, each step batched over every chunk and head:
    ``x_i = rhs_i - m_i x``. Same arithmetic as ``lax.linalg.triangular_solve(unit_diagonal=True)``,
    but XLA:CPU runs that primitive as one LAPACK call per chunk (measured 2-5x slower here).
    """
    C = m.shape[-1]

    def substitute_row(i, x):  # rows < i of x are final
        m_i = lax.dynamic_slice_in_dim(m, i, 1, axis=-2)  # [..., 1, C]
        r_i = lax.dynamic_slice_in_dim(rhs, i, 1, axis=-2)  # [..., 1, R]
        x_i = r_i - jnp.einsum("...ij,...jr->...ir", m_i, x, precision=_precision())
        return lax.dynamic_update_slice_in_dim(x, x_i, i, axis=-2)

    return lax.fori_loop(0, C, substitute_row, jnp.zeros_like(rhs))


def intra_chunk_attention(*, q: jax.Array, k: jax.Array, decay: jax.Array) -> jax.Array:
    """``(q k^T) * Gamma`` on the causal part including the diagonal. ``[..., C, C]``."""
    return jnp.einsum("...ik,...jk->...ij", q, k, precision=_precision()) * decay


def chunk_recurrence(
    *,
    q_decay: jax.Array,
    k_tail: jax.Array,
    w: jax.Array,
    u: jax.Array,
    attn: jax.Array,
    state_decay: jax.Array,
    initial_state: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """The only sequential part: walk the chunks, carrying the ``[B, H, K, V]`` state.

    Per chunk with entering state ``S``: ``v_new = u - w S``; ``o = q_decay S + attn v_new``;
    ``S' = state_decay S + k_tail^T v_new``, where ``q_decay = q e^gamma``,
    ``k_tail = k e^{gamma_last - gamma}`` and ``state_decay = e^{gamma_last}``.

    Args:
        q_decay, k_tail, w: ``[B, H, NC, C, K]``; u: ``[B, H, NC, C, V]``;
        attn: ``[B, H, NC, C, C]``; state_decay: ``[B, H, NC]``; initial_state: ``[B, H, K, V]``.

    Returns:
        ``o`` ``[B, H, NC, C, V]`` and the final state ``[B, H, K, V]``.
    """
    prec = _precision()
    C = w.shape[-2]

    @jax.checkpoint
    def step(state, xs):  # state [B, H, K, V]
        qw_c, k_c, u_c, attn_c, decay_c = xs  # [B, H, 2C | C, ...], decay_c [B, H]
        qw_s = jnp.einsum("bhck,bhkv->bhcv", qw_c, state, precision=prec)  # [B, H, 2C, V]
        v_new = u_c - qw_s[..., C:, :]  # [B, H, C, V]
        o_c = qw_s[..., :C, :] + jnp.einsum("bhij,bhjv->bhiv", attn_c, v_new, precision=prec)
        state = decay_c[..., None, None] * state + jnp.einsum(
            "bhck,bhcv->bhkv", k_c, v_new, precision=prec
        )
        return state, o_c

    # One product with the state per chunk for both q_decay S and w S.
    qw = jnp.concatenate([q_decay, w], axis=-2)  # [B, H, NC, 2C, K]
    xs = tuple(jnp.moveaxis(x, 2, 0) for x in (qw, k_tail, u, attn, state_decay))
    final_state, o = lax.scan(step, initial_state, xs)
    return jnp.moveaxis(o, 0, 2), final_state
