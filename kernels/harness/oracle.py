"""The oracles the harness trusts (protected): a NumPy float64 loop and a JAX fp32 ``lax.scan``.

Both implement the recurrent form exactly as written in ``kernels/gdn/README.md`` (decay, then
predict and correct, then read). They are deliberately independent of ``kernels/gdn``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def numpy_oracle(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    g: np.ndarray,
    beta: np.ndarray,
    *,
    scale: float,
    initial_state: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Gated delta rule in float64, one token at a time.

    Args:
        q, k: ``[B, T, H, K]``; v: ``[B, T, H, V]``; g, beta: ``[B, T, H]``;
        initial_state: ``[B, H, K, V]`` or ``None`` (zeros).

    Returns:
        ``o`` ``[B, T, H, V]`` and the final state ``[B, H, K, V]``, both float64.
    """
    q, k, v, g, beta = (np.asarray(x, dtype=np.float64) for x in (q, k, v, g, beta))
    B, T, H, K = q.shape
    V = v.shape[-1]
    state = (
        np.zeros((B, H, K, V))
        if initial_state is None
        else np.array(initial_state, dtype=np.float64)
    )
    o = np.zeros((B, T, H, V))
    for t in range(T):
        state = state * np.exp(g[:, t])[:, :, None, None]
        pred = np.einsum("bhk,bhkv->bhv", k[:, t], state)
        delta = beta[:, t, :, None] * (v[:, t] - pred)
        state = state + k[:, t, :, :, None] * delta[:, :, None, :]
        o[:, t] = np.einsum("bhk,bhkv->bhv", scale * q[:, t], state)
    return o, state


def jax_oracle(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    g: jax.Array,
    beta: jax.Array,
    *,
    scale: float,
    initial_state: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Gated delta rule in fp32 (``Precision.HIGHEST``), written in the Householder form
    ``S_t = alpha_t (I - beta_t k k^T) S_{t-1} + beta_t k v^T``; its autodiff is the gradient
    oracle.

    Inputs are upcast to float32; outputs are float32 ``o`` ``[B, T, H, V]`` and state
    ``[B, H, K, V]``.
    """
    f32 = jnp.float32
    B, _, H, K = q.shape
    V = v.shape[-1]
    hi = lax.Precision.HIGHEST
    state0 = jnp.zeros((B, H, K, V), f32) if initial_state is None else initial_state.astype(f32)

    def step(state, xs):
        q_t, k_t, v_t, g_t, b_t = xs
        alpha = jnp.exp(g_t)[..., None, None]  # [B, H, 1, 1]
        kts = jnp.einsum("bhk,bhkv->bhv", k_t, state, precision=hi)  # k^T S
        state = alpha * (state - b_t[..., None, None] * k_t[..., :, None] * kts[..., None, :])
        state = state + (b_t[..., None] * k_t)[..., :, None] * v_t[..., None, :]
        o_t = jnp.einsum("bhk,bhkv->bhv", q_t * scale, state, precision=hi)
        return state, o_t

    xs = tuple(jnp.swapaxes(x.astype(f32), 0, 1) for x in (q, k, v, g, beta))
    with jax.default_matmul_precision("highest"):
        state, o = lax.scan(step, state0, xs)
    return jnp.swapaxes(o, 0, 1), state


jax_oracle_jit = jax.jit(jax_oracle, static_argnames=("scale",))
