"""Recurrent (token-by-token) Gated DeltaNet: ``lax.scan`` over time with an fp32 state.

This is the product's own recurrent implementation (``impl="recurrent"``). The oracle the harness
trusts is a separate, protected copy in ``kernels/harness/oracle.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def _precision() -> lax.Precision:
    """HIGHEST where DEFAULT would round f32 inputs (TPU, GPU); on CPU DEFAULT is exact f32."""
    return lax.Precision.DEFAULT if jax.default_backend() == "cpu" else lax.Precision.HIGHEST


def recurrent_gdn(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    g: jax.Array,
    beta: jax.Array,
    *,
    scale: float,
    initial_state: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Gated delta rule, one token at a time.

    Per head and token: ``S = exp(g_t) S``; ``delta = beta_t (v_t - S^T k_t)``;
    ``S = S + k_t delta^T``; ``o_t = S^T (scale q_t)``.

    Args:
        q: queries ``[B, T, H, K]`` (normalised by the caller if wanted).
        k: keys ``[B, T, H, K]``.
        v: values ``[B, T, H, V]``.
        g: log-decay ``[B, T, H]`` (``alpha = exp(g)``, normally ``g <= 0``).
        beta: write strength ``[B, T, H]``.
        scale: query scale.
        initial_state: ``[B, H, K, V]`` state before the first token; zeros when ``None``.

    Returns:
        ``o`` ``[B, T, H, V]`` in ``v.dtype`` and the final state ``[B, H, K, V]`` in float32.
    """
    B, _, H, K = q.shape
    V = v.shape[-1]
    f32 = jnp.float32
    if initial_state is None:
        initial_state = jnp.zeros((B, H, K, V), f32)

    prec = _precision()

    def step(state, xs):  # state [B, H, K, V]
        q_t, k_t, v_t, g_t, b_t = xs  # [B, H, K], [B, H, K], [B, H, V], [B, H], [B, H]
        state = state * jnp.exp(g_t)[..., None, None]
        pred = jnp.einsum("bhk,bhkv->bhv", k_t, state, precision=prec)  # [B, H, V]
        delta = b_t[..., None] * (v_t - pred)  # [B, H, V]
        state = state + k_t[..., :, None] * delta[..., None, :]
        o_t = jnp.einsum("bhk,bhkv->bhv", q_t, state, precision=prec)  # [B, H, V]
        return state, o_t

    xs = (
        jnp.moveaxis(q.astype(f32) * scale, 1, 0),
        jnp.moveaxis(k.astype(f32), 1, 0),
        jnp.moveaxis(v.astype(f32), 1, 0),
        jnp.moveaxis(g.astype(f32), 1, 0),
        jnp.moveaxis(beta.astype(f32), 1, 0),
    )
    final_state, o = lax.scan(step, initial_state.astype(f32), xs)
    return jnp.moveaxis(o, 0, 1).astype(v.dtype), final_state
