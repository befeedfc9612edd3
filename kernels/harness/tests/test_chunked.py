"""Chunked implementations (XLA and Pallas) against the protected oracle: chunk sizes, padding,
K != V, continuation from a state, L2-norm option, and strong / realistic / extreme gates."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from kernels.gdn import gdn
from kernels.harness import spec
from kernels.harness.oracle import jax_oracle_jit
from kernels.harness.testing import assert_close, make_inputs


def _oracle(x):
    f = x.as_f32()
    return jax_oracle_jit(*f.arrays(), scale=f.scale, initial_state=f.s0)


def _gdn(x, impl, case, **kw):
    return gdn(
        *x.arrays(),
        initial_state=x.s0,
        output_final_state=True,
        impl=impl,
        chunk_size=case.C,
        **kw,
    )


@pytest.mark.parametrize("case", spec.CHUNKED_XLA_CASES, ids=lambda c: c.id)
def test_chunked_xla_matches_oracle(case):
    x = make_inputs(case, with_state=True)
    ref_o, ref_s = _oracle(x)
    o, s = _gdn(x, "chunked_xla", case)
    tol = spec.TOL_FWD[case.dtype]
    assert_close("o", ref_o, o, tol=tol, dtype=case.dtype)
    assert_close("final_state", ref_s, s, tol=tol, dtype="float32")


CONT_IDS = [f"{impl}-{spec.CONTINUATION_CASE.id}" for impl in spec.CHUNKED_IMPLS]


@pytest.mark.parametrize("impl", spec.CHUNKED_IMPLS, ids=CONT_IDS)
def test_continuation_from_initial_state(impl):
    """One pass over T tokens == a pass over the prefix, then one over the rest from its state."""
    case = spec.CONTINUATION_CASE
    cut = spec.CONTINUATION_SPLIT
    x = make_inputs(case, with_state=True)
    o_full, s_full = _gdn(x, impl, case)
    kw = dict(output_final_state=True, impl=impl, chunk_size=case.C)
    head = [a[:, :cut] for a in x.arrays()]
    tail = [a[:, cut:] for a in x.arrays()]
    o1, s1 = gdn(*head, initial_state=x.s0, **kw)
    o2, s2 = gdn(*tail, initial_state=s1, **kw)
    tol = spec.TOL_FWD[case.dtype]
    assert_close("o (split vs one pass)", o_full, jnp.concatenate([o1, o2], axis=1), tol=tol)
    assert_close("final_state (split vs one pass)", s_full, s2, tol=tol)
    ref_o, ref_s = _oracle(x)
    assert_close("o vs oracle", ref_o, o_full, tol=tol)
    assert_close("final_state vs oracle", ref_s, s_full, tol=tol)


def test_use_qk_l2norm_normalises_q_and_k():
    case = spec.CHUNKED_XLA_CASES[0]
    x = make_inputs(case, with_state=True)
    q_raw, k_raw = 3.0 * x.q, 0.5 * x.k  # unit vectors scaled: l2norm must undo it
    o, s = gdn(
        q_raw,
        k_raw,
        x.v,
        x.g,
        x.beta,
        initial_state=x.s0,
        output_final_state=True,
        use_qk_l2norm=True,
        impl="chunked_xla",
        chunk_size=case.C,
    )
    ref_o, ref_s = _oracle(x)
    tol = spec.TOL_FWD[case.dtype]
    assert_close("o", ref_o, o, tol=tol)
    assert_close("final_state", ref_s, s, tol=tol)


GATE_PARAMS = [(impl, mode) for impl in spec.CHUNKED_IMPLS for mode in spec.GATE_MODES]


@pytest.mark.parametrize(
    ("impl", "gates"), GATE_PARAMS, ids=[f"{i}-{m}-{spec.GATE_CASE.id}" for i, m in GATE_PARAMS]
)
def test_gates_stay_finite_and_correct(impl, gates):
    """Strong, layer-realistic (cumulative g in the -100s) and extreme gates: finite and right."""
    case = spec.GATE_CASE
    x = make_inputs(case, gates=gates, with_state=True)
    o, s = _gdn(x, impl, case)
    assert bool(jnp.all(jnp.isfinite(o))), "non-finite o"
    assert bool(jnp.all(jnp.isfinite(s))), "non-finite final state"
    ref_o, ref_s = _oracle(x)
    tol = spec.TOL_FWD[case.dtype]
    assert_close("o", ref_o, o, tol=tol, dtype=case.dtype)
    assert_close("final_state", ref_s, s, tol=tol, dtype="float32")
