"""Shared test helpers (protected): seeded inputs, ``assert_close`` and the gradient check."""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from . import spec
from .oracle import jax_oracle

GRAD_NAMES = ("dq", "dk", "dv", "dg", "dbeta", "ds0")
GATE_MODES = (
    "mild",
    "strong",
    "layer",
    "slow",
    "extreme",
    "one",
    "repeated",
    "correlated",
)
# AR(1) coefficient of the keys along T in the ``correlated`` mode.
CORRELATION = 0.9


@dataclasses.dataclass(frozen=True)
class Inputs:
    """One problem instance in the public layout, already in the case's dtype."""

    q: jax.Array  # [B, T, H, K], L2-normalised
    k: jax.Array  # [B, T, H, K], L2-normalised
    v: jax.Array  # [B, T, H, V]
    g: jax.Array  # [B, T, H]
    beta: jax.Array  # [B, T, H]
    s0: jax.Array | None  # [B, H, K, V] float32
    scale: float

    def arrays(self) -> tuple[jax.Array, ...]:
        return (self.q, self.k, self.v, self.g, self.beta)

    def as_f32(self) -> Inputs:
        """The same values upcast to float32 (the oracle's view of low-precision inputs)."""
        f32 = jnp.float32
        return dataclasses.replace(
            self,
            q=self.q.astype(f32),
            k=self.k.astype(f32),
            v=self.v.astype(f32),
            g=self.g.astype(f32),
            beta=self.beta.astype(f32),
        )


def make_inputs(
    case: spec.Case,
    *,
    seed: int | Sequence[int] = spec.SEED,
    gates: str = "mild",
    with_state: bool = False,
) -> Inputs:
    """Seeded inputs like fla's tests: q, k normal then L2-normalised, v normal, beta sigmoid.

    ``gates``: ``mild`` (g = logsigmoid(U(0,1))), ``strong`` (x10), ``layer`` (the layer's
    ``-exp(A_log) softplus(a + 1)`` with ``A_log ~ log U(1, 16)``: per-token g near -16 and chunk
    cumulative g in the -100s), ``extreme`` (g ~ -U(2, 8), beta in {1e-4, 1 - 1e-6}), ``slow``
    (g ~ -U(0, 1e-3): alpha ~ 1, so the state and its cotangent carry across every chunk and the
    long-range decay terms of the gradients are as large as the local ones; under the other modes
    they vanish within a chunk), ``one`` (g = 0, beta = 1: alpha = beta = 1, the recall invariant),
    ``repeated`` (one key per sequence and head for every token, g = 0, beta = 1: the chunk's
    ``M`` is all ones below the diagonal) or ``correlated`` (keys an AR(1) process along T with
    coefficient ``CORRELATION`` before normalising, mild gates, beta ~ U(0.7, 1): large
    off-diagonal ``M``, as real keys have; an inverse that is right only for small ``M`` fails).

    ``seed`` is anything ``numpy.random.default_rng`` takes (an int or a list of ints).
    """
    rng = np.random.default_rng(seed)
    B, T, H, K, V = case.B, case.T, case.H, case.K, case.V

    def unit(shape: tuple[int, ...]) -> np.ndarray:
        x = rng.standard_normal(shape)
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    q = unit((B, T, H, K))
    k = unit((B, T, H, K))
    v = rng.standard_normal((B, T, H, V))
    beta = 1.0 / (1.0 + np.exp(-rng.standard_normal((B, T, H))))
    u = rng.uniform(size=(B, T, H))
    if gates == "mild":
        g = -np.log1p(np.exp(-u))
    elif gates == "strong":
        g = -10.0 * np.log1p(np.exp(-u))
    elif gates == "layer":
        a_log = np.log(rng.uniform(1.0, 16.0, size=(1, 1, H)))
        g = -np.exp(a_log) * np.log1p(np.exp(rng.standard_normal((B, T, H)) + 1.0))
    elif gates == "slow":
        g = -1e-3 * u
    elif gates == "extreme":
        g = -rng.uniform(2.0, 8.0, size=(B, T, H))
        beta = np.where(rng.uniform(size=(B, T, H)) < 0.5, 1e-4, 1.0 - 1e-6)
    elif gates in ("one", "repeated"):
        g = np.zeros((B, T, H))
        beta = np.ones((B, T, H))
        if gates == "repeated":
            k = np.broadcast_to(k[:, :1], k.shape).copy()
    elif gates == "correlated":
        g = -np.log1p(np.exp(-u))
        beta = rng.uniform(0.7, 1.0, size=(B, T, H))
        walk = rng.standard_normal((B, T, H, K))
        for t in range(1, T):
            walk[:, t] = CORRELATION * walk[:, t - 1] + np.sqrt(1 - CORRELATION**2) * walk[:, t]
        k = walk / np.linalg.norm(walk, axis=-1, keepdims=True)
    else:
        raise ValueError(f"{gates=} is not one of {', '.join(GATE_MODES)}")
    s0 = 0.5 * rng.standard_normal((B, H, K, V)) if with_state else None
    dtype = jnp.dtype(case.dtype)
    return Inputs(
        q=jnp.asarray(q, dtype),
        k=jnp.asarray(k, dtype),
        v=jnp.asarray(v, dtype),
        g=jnp.asarray(g, dtype),
        beta=jnp.asarray(beta, dtype),
        s0=None if s0 is None else jnp.asarray(s0, jnp.float32),
        scale=K**-0.5,
    )


def assert_close(
    name: str,
    ref: jax.Array | np.ndarray,
    out: jax.Array | np.ndarray,
    *,
    tol: spec.Tol,
    dtype: str | jnp.dtype | None = None,
    log: Callable[[str], object] | None = print,
) -> tuple[float, float]:
    """Check ``out`` against ``ref``: shape, dtype (when given), no NaN/inf, then the tolerance.

    Reports through ``log`` (stdout by default; pytest shows it on failure) and returns
    ``(max_abs, rel_rms)``; the assertion message carries both and the limits.
    """
    out_dtype = jnp.dtype(out.dtype)
    if dtype is not None and out_dtype != jnp.dtype(dtype):
        raise AssertionError(f"{name}: dtype {out_dtype} != expected {jnp.dtype(dtype)}")
    ref64 = np.asarray(jnp.asarray(ref, jnp.float32) if _is_low(ref) else ref, np.float64)
    out64 = np.asarray(jnp.asarray(out, jnp.float32) if _is_low(out) else out, np.float64)
    if out64.shape != ref64.shape:
        raise AssertionError(f"{name}: shape {out64.shape} != reference {ref64.shape}")
    if not np.all(np.isfinite(ref64)):
        raise AssertionError(f"{name}: the reference has {np.sum(~np.isfinite(ref64))} NaN/inf")
    bad = int(np.sum(~np.isfinite(out64)))
    if bad:
        raise AssertionError(f"{name}: {bad} of {out64.size} values are NaN/inf")
    err = out64 - ref64
    max_abs = float(np.max(np.abs(err))) if err.size else 0.0
    ref_rms = float(np.sqrt(np.mean(ref64**2))) if err.size else 0.0
    err_rms = float(np.sqrt(np.mean(err**2))) if err.size else 0.0
    rel_rms = err_rms / ref_rms if ref_rms > 0 else (0.0 if err_rms == 0 else float("inf"))
    msg = (
        f"{name}: max_abs={max_abs:.3e} rel_rms={rel_rms:.3e} "
        f"(limit rel_rms<={tol.rel_rms:.1e} or max_abs<={tol.atol:.1e})"
    )
    if log is not None:
        log(msg)
    if not (rel_rms <= tol.rel_rms or max_abs <= tol.atol):
        raise AssertionError(msg)
    return max_abs, rel_rms


def _is_low(x: object) -> bool:
    return jnp.dtype(getattr(x, "dtype", np.float64)) in (jnp.bfloat16, jnp.float16)


GdnFn = Callable[..., tuple[jax.Array, jax.Array]]


def oracle_outputs_and_grads(
    inputs: Inputs, do: jax.Array, ds: jax.Array
) -> tuple[tuple[jax.Array, jax.Array], tuple[jax.Array, ...]]:
    """``((o, S_T), grads)`` of the fp32 JAX oracle on ``inputs`` (upcast to float32): the
    gradients of ``sum(o * do) + sum(S_T * ds)``."""
    x = inputs.as_f32()
    s0 = x.s0 if x.s0 is not None else jnp.zeros(ds.shape, jnp.float32)
    return _oracle_vjp((*x.arrays(), s0), (do.astype(jnp.float32), ds), scale=x.scale)


@functools.partial(jax.jit, static_argnames=("scale",))
def _oracle_vjp(args, cotangents, *, scale):
    def fn(q, k, v, g, beta, s0):
        return jax_oracle(q, k, v, g, beta, scale=scale, initial_state=s0)

    out, vjp = jax.vjp(fn, *args)
    return out, vjp(cotangents)


_VJP_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _jitted_vjp(fn: GdnFn) -> Callable[..., tuple[tuple[jax.Array, ...], tuple[jax.Array, ...]]]:
    """One compiled program per ``fn`` (forward, residuals and backward together), reused when the
    same ``fn`` is checked on other values of the same shape. Returns ``(outputs, grads)``: the
    outputs are the ones ``jax.vjp`` computes, i.e. what a training step uses as its loss input."""
    if fn not in _VJP_CACHE:

        def outputs_and_grads(args, cts):
            out, vjp = jax.vjp(fn, *args)
            return out, vjp(cts)

        _VJP_CACHE[fn] = jax.jit(outputs_and_grads)
    return _VJP_CACHE[fn]


def random_cotangents(inputs: Inputs, *, seed: int | Sequence[int]) -> tuple[jax.Array, jax.Array]:
    """``do`` ``[B, T, H, V]`` in the output dtype and ``ds`` ``[B, H, K, V]`` float32, N(0, 1)."""
    rng = np.random.default_rng(seed)
    B, T, H, K = inputs.q.shape
    V = inputs.v.shape[-1]
    do = jnp.asarray(rng.standard_normal((B, T, H, V)), inputs.v.dtype)
    ds = jnp.asarray(rng.standard_normal((B, H, K, V)), jnp.float32)
    return do, ds


def check_gradients(
    fn: GdnFn,
    inputs: Inputs,
    *,
    dtype: str,
    seed: int = spec.SEED + 1,
) -> dict[str, tuple[float, float]]:
    """Compare all six gradients of ``fn(q, k, v, g, beta, s0) -> (o, S_T)`` with the oracle's,
    and the outputs ``jax.vjp`` returned with them (a forward rule used only under autodiff is
    another code path from the plain forward, and its ``o`` is the loss a training step sees).

    The loss is ``sum(o * do) + sum(S_T * ds)`` with random cotangents on *both* outputs, so an
    implementation that drops the final-state cotangent fails (on ds0 and on every input).
    Raises ``AssertionError`` naming the first output or gradient out of tolerance.
    """
    do, ds = random_cotangents(inputs, seed=seed)
    s0 = inputs.s0 if inputs.s0 is not None else jnp.zeros(ds.shape, jnp.float32)
    (o, s_t), got = _jitted_vjp(fn)((*inputs.arrays(), s0), (do, ds))
    (ref_o, ref_s), want = oracle_outputs_and_grads(inputs, do, ds)
    results = {
        "o": assert_close("o (under jax.vjp)", ref_o, o, tol=spec.TOL_FWD[dtype], dtype=dtype),
        "final_state": assert_close(
            "final_state (under jax.vjp)", ref_s, s_t, tol=spec.TOL_FWD[dtype], dtype="float32"
        ),
    }
    for name, x, out, ref in zip(GRAD_NAMES, (*inputs.arrays(), s0), got, want, strict=True):
        tol = (spec.TOL_GRAD_GATES if name in ("dg", "dbeta") else spec.TOL_GRAD)[dtype]
        results[name] = assert_close(name, ref, out, tol=tol, dtype=x.dtype)
    return results
