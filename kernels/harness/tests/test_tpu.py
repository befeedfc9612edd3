"""Checks that need a real TPU: Mosaic compilation and TPU numerics of the Pallas kernels.

On any other backend these are skipped with the reason (see ``kernels/conftest.py``); the CPU
suite covers the same math in interpret mode plus the lint and the Mosaic *lowering*.
"""

from __future__ import annotations

import jax
import pytest

from kernels.gdn import gdn
from kernels.harness import spec
from kernels.harness.oracle import jax_oracle_jit
from kernels.harness.testing import assert_close, check_gradients, make_inputs

pytestmark = pytest.mark.tpu


@pytest.mark.parametrize("case", spec.TPU_CASES, ids=lambda c: c.id)
def test_mosaic_forward_matches_oracle(case):
    x = make_inputs(case, gates="layer", with_state=True)
    o, s = gdn(
        *x.arrays(),
        initial_state=x.s0,
        output_final_state=True,
        impl="pallas",
        chunk_size=case.C,
        interpret=False,
    )
    f = x.as_f32()
    ref_o, ref_s = jax_oracle_jit(*f.arrays(), scale=f.scale, initial_state=f.s0)
    tol = spec.TOL_FWD[case.dtype]
    assert_close("o", ref_o, o, tol=tol, dtype=case.dtype)
    assert_close("final_state", ref_s, s, tol=tol, dtype="float32")


@pytest.mark.parametrize("case", spec.TPU_CASES, ids=lambda c: c.id)
def test_mosaic_gradients_match_oracle(case):
    x = make_inputs(case, with_state=True)

    def fn(q, k, v, g, beta, s0):
        return gdn(
            q,
            k,
            v,
            g,
            beta,
            scale=x.scale,
            initial_state=s0,
            output_final_state=True,
            impl="pallas",
            chunk_size=case.C,
            interpret=False,
        )

    check_gradients(fn, x, dtype=case.dtype)


def test_default_backend_is_tpu():
    assert jax.default_backend() == "tpu"
