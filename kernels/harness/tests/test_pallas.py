"""The Pallas kernels (interpret mode on CPU, Mosaic on TPU) against the protected oracle."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels.gdn import gdn
from kernels.harness import spec
from kernels.harness.oracle import jax_oracle_jit
from kernels.harness.testing import assert_close, make_inputs


def _pallas(x, case):
    return gdn(
        *x.arrays(),
        initial_state=x.s0,
        output_final_state=True,
        impl="pallas",
        chunk_size=case.C,
    )


@pytest.mark.parametrize("case", spec.PALLAS_CASES, ids=lambda c: c.id)
def test_pallas_forward_matches_oracle(case):
    x = make_inputs(case, with_state=True)
    f = x.as_f32()
    ref_o, ref_s = jax_oracle_jit(*f.arrays(), scale=f.scale, initial_state=f.s0)
    o, s = _pallas(x, case)
    tol = spec.TOL_FWD[case.dtype]
    assert_close("o", ref_o, o, tol=tol, dtype=case.dtype)
    assert_close("final_state", ref_s, s, tol=tol, dtype="float32")


def test_pallas_is_deterministic():
    case = spec.PALLAS_CASES[0]
    x = make_inputs(case)
    a = _pallas(x, case)
    b = _pallas(x, case)
    for name, u, w in zip(("o", "final_state"), a, b, strict=True):
        assert np.array_equal(np.asarray(u), np.asarray(w)), f"{name} differs between two calls"


def test_pallas_without_final_state_returns_none():
    case = spec.PALLAS_CASES[0]
    x = make_inputs(case)
    o, s = gdn(*x.arrays(), impl="pallas", chunk_size=case.C)
    assert s is None
    assert o.shape == x.v.shape
    assert o.dtype == x.v.dtype


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(impl="cuda"), "impl="),
        (dict(impl="pallas", chunk_size=12), "chunk_size=12"),
        (dict(impl="chunked_xla", chunk_size=0), "chunk_size=0"),
    ],
    ids=["unknown-impl", "pallas-chunk-not-multiple-of-8", "chunk-zero"],
)
def test_bad_arguments_raise_with_values(kwargs, message):
    x = make_inputs(spec.ORACLE_CASE)
    with pytest.raises(ValueError, match=message):
        gdn(*x.arrays(), **kwargs)


def test_bad_shapes_raise_with_values():
    x = make_inputs(spec.ORACLE_CASE)
    with pytest.raises(ValueError, match=r"g must be \[B, T, H\]"):
        gdn(x.q, x.k, x.v, x.g[:, :-1], x.beta, impl="pallas")
    with pytest.raises(ValueError, match="initial_state"):
        gdn(*x.arrays(), initial_state=jnp.zeros((1, 1, 1, 1)), impl="pallas")


def test_tpu_interpret_mode_smoke():
    """The kernels under Pallas' TPU interpret mode (simulated VMEM and grid semantics)."""
    from jax.experimental.pallas import tpu as pltpu

    case = spec.Case(B=1, T=16, H=1, K=16, V=16, C=8)
    x = make_inputs(case, with_state=True)
    try:
        o, s = gdn(
            *x.arrays(),
            initial_state=x.s0,
            output_final_state=True,
            impl="pallas",
            chunk_size=case.C,
            interpret=pltpu.InterpretParams(),
        )
        o, s = jax.block_until_ready((o, s))
    finally:
        pltpu.reset_tpu_interpret_mode_state()
    ref_o, ref_s = jax_oracle_jit(*x.arrays(), scale=x.scale, initial_state=x.s0)
    assert_close("o", ref_o, o, tol=spec.TOL_FWD["float32"], dtype="float32")
    assert_close("final_state", ref_s, s, tol=spec.TOL_FWD["float32"], dtype="float32")
