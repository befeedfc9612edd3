"""A small Gated DeltaNet hybrid language model and its AdamW training step (protected).

The bench's model-level measurement: the step a person training a GDN hybrid would time. It mirrors
the 130m "hackable transformer" of marin's seed loop (``tiny_profile.py``): pre-norm decoder layers,
three GDN layers in every block of four and one causal softmax-attention layer, SwiGLU MLPs, untied
embedding and LM head, next-token cross-entropy, AdamW. Only the GDN core (the chunked kernel) comes
from outside: ``forward`` takes it as ``core``, so the same model runs on the candidate's
``kernels.gdn`` and on the protected oracle, and everything else -- projections, the short
convolution, gates, norms, attention, MLPs, loss and optimizer -- is this file's, unchanged by any
candidate.

Shapes: tokens ``[B, T + 1]`` int32 (inputs are the first ``T``, targets the last ``T``); hidden
``[B, T, D]``; a GDN layer's core sees q, k ``[B, T, H, K]`` (L2-normalised here),
v ``[B, T, H, V]``, g, beta ``[B, T, H]``. No rotary embedding: the GDN layers and their
convolution carry position.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .presets import ModelConfig

Params = dict[str, Any]
# (q, k, v, g, beta) -> o: the GDN core; q, k L2-normalised, o in v's dtype.
Core = Callable[[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array], jax.Array]

GDN = "gdn"
ATTENTION = "attention"
NORM_EPS = 1e-6


# --- parameters ----------------------------------------------------------------------------------


def init_params(cfg: ModelConfig, rng: np.random.Generator) -> Params:
    """Float32 parameters drawn on the host from ``rng`` (no compile): normal(0, 0.02) matrices,
    unit norms, and the gates' ``A_log = log U(1, 16)`` and ``dt_bias`` = softplus^-1 of
    U(1e-3, 0.1), as in Qwen3-Next. ``stacks[j]`` holds the layers of ``cfg.stacks[j]``, each leaf
    with a leading layer axis."""
    D, I, H = cfg.d_model, cfg.mlp_dim, cfg.heads
    Kd = Vd = H * cfg.head_dim

    def normal(shape: tuple[int, ...], std: float = 0.02) -> np.ndarray:
        return std * rng.standard_normal(shape)

    def layer(kind: str) -> dict[str, np.ndarray]:
        p = {
            "mixer_norm": np.ones(D),
            "mlp_norm": np.ones(D),
            "w_gate": normal((D, I)),
            "w_up": normal((D, I)),
            "w_down": normal((I, D)),
        }
        if kind == GDN:
            dt = rng.uniform(1e-3, 0.1, H)
            p |= {
                "w_qkvz": normal((D, 2 * Kd + 2 * Vd)),
                "w_ba": normal((D, 2 * H)),
                "conv": normal((cfg.conv_width, 2 * Kd + Vd), cfg.conv_width**-0.5),
                "a_log": np.log(rng.uniform(1.0, 16.0, H)),
                "dt_bias": dt + np.log(-np.expm1(-dt)),
                "out_norm": np.ones(cfg.head_dim),
                "w_out": normal((Vd, D)),
            }
        else:
            p |= {"w_qkv": normal((D, 3 * Kd)), "w_o": normal((Kd, D))}
        return p

    def f32(x: np.ndarray) -> jax.Array:
        return jnp.asarray(x, jnp.float32)

    stacks = []
    for kind, count in cfg.stacks:
        layers = [layer(kind) for _ in range(count)]
        stacks.append({name: f32(np.stack([p[name] for p in layers])) for name in layers[0]})
    return {
        "embed": f32(normal((cfg.vocab, D))),
        "stacks": stacks,
        "final_norm": f32(np.ones(D)),
        "lm_head": f32(normal((D, cfg.vocab))),
    }


def param_count(params: Params) -> int:
    return sum(int(x.size) for x in jax.tree.leaves(params))


# --- the forward pass ----------------------------------------------------------------------------


def rms_norm(x: jax.Array, weight: jax.Array) -> jax.Array:
    """RMSNorm over the last axis in float32, returned in ``x``'s dtype."""
    x32 = x.astype(jnp.float32)
    y = x32 * lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + NORM_EPS)
    return (y * weight).astype(x.dtype)


def l2_normalize(x: jax.Array) -> jax.Array:
    """``x / ||x||`` over the last axis in float32 (the delta rule's q, k), in ``x``'s dtype."""
    x32 = x.astype(jnp.float32)
    return (x32 * lax.rsqrt(jnp.sum(x32 * x32, axis=-1, keepdims=True) + NORM_EPS)).astype(x.dtype)


def causal_conv(x: jax.Array, w: jax.Array) -> jax.Array:
    """Depthwise causal convolution over time: ``x`` ``[B, T, C]``, ``w`` ``[W, C]``; output
    ``y_t = sum_j w_j x_{t - W + 1 + j}`` (zero before the start). Elementwise products, no
    matmul: its FLOPs are counted apart (``flops.model_flops_per_token``)."""
    W = w.shape[0]
    T = x.shape[1]
    padded = jnp.pad(x, ((0, 0), (W - 1, 0), (0, 0)))
    return sum(padded[:, j : j + T] * w[j] for j in range(W))


def _dot(x: jax.Array, w: jax.Array, dtype: Any) -> jax.Array:
    """``x @ w`` with the weight cast to the compute dtype."""
    return jnp.dot(x, w.astype(dtype))


def gdn_mixer(p: Params, x: jax.Array, cfg: ModelConfig, core: Core) -> jax.Array:
    """One GDN token mixer (Qwen3-Next style): ``x`` ``[B, T, D]`` -> ``[B, T, D]``."""
    B, T, _ = x.shape
    H, Kh = cfg.heads, cfg.head_dim
    Kd = Vd = H * Kh
    dt = x.dtype
    qkvz = _dot(x, p["w_qkvz"], dt)  # [B, T, 2 Kd + 2 Vd]
    qkv, z = qkvz[..., : 2 * Kd + Vd], qkvz[..., 2 * Kd + Vd :]
    qkv = jax.nn.silu(causal_conv(qkv, p["conv"].astype(dt)))
    q = l2_normalize(qkv[..., :Kd].reshape(B, T, H, Kh))
    k = l2_normalize(qkv[..., Kd : 2 * Kd].reshape(B, T, H, Kh))
    v = qkv[..., 2 * Kd :].reshape(B, T, H, Kh)
    ba = _dot(x, p["w_ba"], dt).astype(jnp.float32)  # [B, T, 2H]
    beta = jax.nn.sigmoid(ba[..., :H]).astype(dt)
    g = (-jnp.exp(p["a_log"]) * jax.nn.softplus(ba[..., H:] + p["dt_bias"])).astype(dt)
    o = core(q, k, v, g, beta)  # [B, T, H, V]
    o = rms_norm(o, p["out_norm"]) * jax.nn.silu(z.reshape(B, T, H, Kh))
    return _dot(o.reshape(B, T, Vd), p["w_out"], dt)


def attention_mixer(p: Params, x: jax.Array, cfg: ModelConfig) -> jax.Array:
    """Causal multi-head softmax attention: ``x`` ``[B, T, D]`` -> ``[B, T, D]``. Scores are the
    full ``[T, T]`` product, masked (as the FLOP count assumes)."""
    B, T, _ = x.shape
    H, hd = cfg.heads, cfg.head_dim
    dt = x.dtype
    qkv = _dot(x, p["w_qkv"], dt).reshape(B, T, 3, H, hd)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    scores = jnp.einsum("bthd,bshd->bhts", q, k).astype(jnp.float32) * hd**-0.5
    mask = jnp.tril(jnp.ones((T, T), bool))
    probs = jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1).astype(dt)
    out = jnp.einsum("bhts,bshd->bthd", probs, v)
    return _dot(out.reshape(B, T, H * hd), p["w_o"], dt)


def mlp(p: Params, x: jax.Array) -> jax.Array:
    """SwiGLU: ``(silu(x W_gate) * x W_up) W_down``."""
    dt = x.dtype
    return _dot(jax.nn.silu(_dot(x, p["w_gate"], dt)) * _dot(x, p["w_up"], dt), p["w_down"], dt)


def forward(params: Params, inputs: jax.Array, *, cfg: ModelConfig, core: Core) -> jax.Array:
    """Logits ``[B, T, vocab]`` (float32) of ``inputs`` ``[B, T]``."""
    dt = jnp.dtype(cfg.dtype)
    x = params["embed"][inputs].astype(dt)  # [B, T, D]
    for (kind, _), stack in zip(cfg.stacks, params["stacks"], strict=True):

        def layer(x: jax.Array, p: Params, kind: str = kind) -> tuple[jax.Array, None]:
            h = rms_norm(x, p["mixer_norm"])
            x = x + (gdn_mixer(p, h, cfg, core) if kind == GDN else attention_mixer(p, h, cfg))
            return x + mlp(p, rms_norm(x, p["mlp_norm"])), None

        x, _ = lax.scan(layer, x, stack)  # one layer per stacked slice
    x = rms_norm(x, params["final_norm"])
    return _dot(x, params["lm_head"], dt).astype(jnp.float32)


def loss_fn(params: Params, tokens: jax.Array, *, cfg: ModelConfig, core: Core) -> jax.Array:
    """Mean next-token cross-entropy of ``tokens`` ``[B, T + 1]``."""
    logits = forward(params, tokens[:, :-1], cfg=cfg, core=core)
    targets = tokens[:, 1:]
    picked = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - picked)


# --- AdamW and the training step -----------------------------------------------------------------


def adamw_init(params: Params) -> Params:
    """Optimizer state: step count and first and second moments (zeros)."""
    zeros = jax.tree.map(jnp.zeros_like, params)
    return {"count": jnp.zeros((), jnp.int32), "mu": zeros, "nu": zeros}


def adamw_moments(grads: Params, state: Params, cfg: ModelConfig) -> Params:
    """The optimizer state after one more step: count + 1 and the updated moments."""
    mu = jax.tree.map(lambda m, g: cfg.b1 * m + (1 - cfg.b1) * g, state["mu"], grads)
    nu = jax.tree.map(lambda n, g: cfg.b2 * n + (1 - cfg.b2) * g * g, state["nu"], grads)
    return {"count": state["count"] + 1, "mu": mu, "nu": nu}


def adamw_apply(params: Params, state: Params, cfg: ModelConfig) -> Params:
    """The parameters after the step whose moments ``state`` holds: bias-corrected Adam plus
    decoupled weight decay on every parameter, at a constant learning rate."""
    count = state["count"].astype(jnp.float32)
    c1 = 1 - cfg.b1**count
    c2 = 1 - cfg.b2**count

    def step(p: jax.Array, m: jax.Array, n: jax.Array) -> jax.Array:
        update = (m / c1) / (jnp.sqrt(n / c2) + cfg.eps) + cfg.weight_decay * p
        return p - cfg.learning_rate * update

    return jax.tree.map(step, params, state["mu"], state["nu"])


def adamw_update(
    params: Params, grads: Params, state: Params, cfg: ModelConfig
) -> tuple[Params, Params]:
    """One AdamW step: new parameters and optimizer state."""
    state = adamw_moments(grads, state, cfg)
    return adamw_apply(params, state, cfg), state


def make_train_step(
    cfg: ModelConfig, core: Core
) -> Callable[[Params, Params, jax.Array], tuple[Params, Params, jax.Array]]:
    """``step(params, opt_state, tokens) -> (params, opt_state, loss)``: loss, gradients by
    ``jax.value_and_grad`` through the model (and so through the core's backward), AdamW."""

    def train_step(
        params: Params, opt_state: Params, tokens: jax.Array
    ) -> tuple[Params, Params, jax.Array]:
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, cfg=cfg, core=core)
        params, opt_state = adamw_update(params, grads, opt_state, cfg)
        return params, opt_state, loss

    return train_step


def random_tokens(cfg: ModelConfig, rng: np.random.Generator) -> jax.Array:
    """A batch of uniform random tokens ``[B, T + 1]`` int32 (timing does not depend on text)."""
    return jnp.asarray(rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq_len + 1)), jnp.int32)
