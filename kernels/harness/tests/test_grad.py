"""Gradients of every input (q, k, v, g, beta, S0) with random cotangents on o *and* the final
state, against autodiff of the protected fp32 oracle."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest

from kernels.gdn import gdn
from kernels.harness import spec
from kernels.harness.testing import GRAD_NAMES, check_gradients, make_inputs

# Every chunked impl at GRAD_CASES[0] in every gradient gate mode; Pallas bf16 (C = 32) with mild
# gates and with slow decay, where dropping the whole-chunk decay terms of a full chunk shows.
GRAD_PARAMS = [
    *(
        (impl, spec.GRAD_CASES[0], mode)
        for impl in spec.CHUNKED_IMPLS
        for mode in spec.GRAD_GATE_MODES
    ),
    ("pallas", spec.GRAD_CASES[1], "mild"),
    ("pallas", spec.GRAD_CASES[1], "slow"),
]


@functools.cache
def _impl_fn(impl: str, case: spec.Case, scale: float):
    def fn(q, k, v, g, beta, s0):
        return gdn(
            q,
            k,
            v,
            g,
            beta,
            scale=scale,
            initial_state=s0,
            output_final_state=True,
            impl=impl,
            chunk_size=case.C,
        )

    return fn


def _drop_final_state_cotangent(fn):
    """A deliberately broken backward: ``fn``'s gradient, computed as if dL/dS_T were zero."""

    @jax.custom_vjp
    def broken(*args):
        return fn(*args)

    def broken_fwd(*args):
        return jax.vjp(fn, *args)

    def broken_bwd(vjp, cotangents):
        do, ds = cotangents
        return vjp((do, jnp.zeros_like(ds)))

    broken.defvjp(broken_fwd, broken_bwd)
    return broken


@pytest.mark.parametrize(
    ("impl", "case", "gates"),
    GRAD_PARAMS,
    ids=[f"{impl}-{gates}-{case.id}" for impl, case, gates in GRAD_PARAMS],
)
def test_gradients_match_oracle(impl, case, gates):
    x = make_inputs(case, gates=gates, with_state=True)
    results = check_gradients(_impl_fn(impl, case, x.scale), x, dtype=case.dtype)
    assert set(results) == {"o", "final_state", *GRAD_NAMES}


# A test of the gradient check, not of the kernel: the candidate gates deselect it.
@pytest.mark.harness
def test_gradient_check_catches_a_dropped_final_state_cotangent():
    """Proof the check can fail: the Pallas gradient minus the dS_T term must be rejected."""
    case = spec.GRAD_CASES[0]
    x = make_inputs(case, with_state=True)
    broken = _drop_final_state_cotangent(_impl_fn("pallas", case, x.scale))
    with pytest.raises(AssertionError, match=r"^d(q|k|v|g|beta|s0): .*rel_rms="):
        check_gradients(broken, x, dtype=case.dtype)


# A test of the gradient check, not of the kernel: the candidate gates deselect it.
@pytest.mark.harness
def test_broken_variant_passes_when_only_o_has_a_cotangent():
    """Why the final-state cotangent must be random: with dS_T = 0 (loss = sum(o * dO), marin's
    gradient tests) the broken variant is indistinguishable from the real one."""
    case = spec.GRAD_CASES[0]
    x = make_inputs(case, with_state=True)
    real = _impl_fn("pallas", case, x.scale)
    broken = _drop_final_state_cotangent(real)
    args = (*x.arrays(), x.s0)
    cts = (jnp.ones(x.v.shape, x.v.dtype), jnp.zeros(x.s0.shape, jnp.float32))

    @jax.jit
    def both(args, cts):
        return jax.vjp(real, *args)[1](cts), jax.vjp(broken, *args)[1](cts)

    g_real, g_broken = both(args, cts)
    for name, a, b in zip(GRAD_NAMES, g_real, g_broken, strict=True):
        assert bool(jnp.array_equal(a, b)), f"{name} differs with a zero state cotangent"
