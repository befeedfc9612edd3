"""The trusted reference for ``kernels.matmul``: plain ``jnp`` at the highest precision.

``matmul_bias_act_ref(x, w, b, activation)``: ``x`` [M, K], ``w`` [K, N], ``b`` [N] -> [M, N]
float32 (not rounded to the kernel's output dtype). The inputs are upcast to float32 and the
product runs at ``Precision.HIGHEST``; the activations are JAX's own (``jax.nn.gelu`` with
``approximate=True``, ``jax.nn.silu``), not the kernel's formulas.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

ACTIVATIONS = {
    "gelu": lambda y: jax.nn.gelu(y, approximate=True),
    "silu": jax.nn.silu,
    "none": lambda y: y,
}


@functools.partial(jax.jit, static_argnames=("activation",))
def matmul_bias_act_ref(x: jax.Array, w: jax.Array, b: jax.Array, activation: str) -> jax.Array:
    """``act(x @ w + b)`` in float32 at the highest precision."""
    f32 = jnp.float32
    y = jnp.dot(x.astype(f32), w.astype(f32), precision=lax.Precision.HIGHEST) + b.astype(f32)
    return ACTIVATIONS[activation](y)
