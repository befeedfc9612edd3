"""The bench's verification pieces: its input sets, the segmented oracle at the measured shape, the
comparisons, the bitwise identity of timed outputs and the host round-trip scan."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels.harness import spec, verify
from kernels.harness.oracle import jax_oracle
from kernels.harness.presets import PRESETS
from kernels.harness.testing import assert_close

# Tests of the harness, not of the kernel (nothing here imports kernels.gdn): the candidate gates
# deselect them (-m 'not harness'); a candidate cannot change what they test.
pytestmark = pytest.mark.harness

TINY = PRESETS["tiny"]
TINY_CASE = spec.Case(B=TINY.B, T=TINY.T, H=TINY.H, K=TINY.K, V=TINY.V, dtype=TINY.dtype)
SMALL = spec.Case(B=1, T=37, H=2, K=8, V=16)  # T not a multiple of the oracle's segment


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("measurement", verify.MEASUREMENTS)
def test_abstract_args_describe_the_input_sets(measurement, dtype):
    """The programs are compiled from these shapes before any input exists: they must be exactly
    what the input sets hold."""
    case = spec.Case(B=2, T=24, H=3, K=8, V=16, dtype=dtype)
    (first, *_) = verify.input_sets(case, seed=1)
    abstract = verify.abstract_args(case, measurement)
    concrete = first.call_args(measurement)
    assert [(a.shape, a.dtype) for a in abstract] == [(x.shape, x.dtype) for x in concrete]


def test_input_sets_follow_the_gate_modes_and_the_seed():
    a = verify.input_sets(SMALL, seed=7)
    b = verify.input_sets(SMALL, seed=7)
    c = verify.input_sets(SMALL, seed=8)
    assert [s.gates for s in a] == list(spec.BENCH_GATES)
    for x, y in zip(a, b, strict=True):
        for u, w in zip((*x.args, *x.cotangents), (*y.args, *y.cotangents), strict=True):
            assert np.array_equal(np.asarray(u), np.asarray(w)), "a seed must reproduce its inputs"
    assert not np.array_equal(np.asarray(a[0].args[0]), np.asarray(c[0].args[0]))
    assert not np.array_equal(np.asarray(a[0].args[0]), np.asarray(a[1].args[0]))
    slow_g = np.asarray(a[1].args[3])
    assert a[1].gates == "slow"
    assert slow_g.min() >= -1e-3
    assert slow_g.max() <= 0.0


def test_slow_set_carries_the_state_across_a_bench_chunk():
    """At the tiny preset (C = 64 for pallas), mild gates shrink the state by ~1e-13 over a chunk,
    so cross-chunk terms are invisible there; the slow set keeps them O(1)."""
    mild, slow, *_ = verify.input_sets(TINY_CASE, seed=3)
    chunk_decay = {
        s.gates: np.exp(np.asarray(s.args[3], np.float64)[:, :64].sum(axis=1)) for s in (mild, slow)
    }
    assert chunk_decay["mild"].max() < 1e-8
    assert chunk_decay["slow"].min() > 0.9


def test_segmented_oracle_equals_the_oracle_forward_and_gradients():
    (x, *_) = verify.input_sets(SMALL, seed=5)
    q, k, v, g, beta, s0 = x.args

    def plain(*a):
        return jax_oracle(*a[:5], scale=x.scale, initial_state=a[5])

    def segmented(*a):
        return verify.segmented_oracle(*a, scale=x.scale, segment=16)

    with jax.default_matmul_precision("highest"):
        want, want_vjp = jax.vjp(plain, q, k, v, g, beta, s0)
        got, got_vjp = jax.vjp(segmented, q, k, v, g, beta, s0)
        want_grads = want_vjp(x.cotangents)
        got_grads = got_vjp(x.cotangents)
    for name, a, b in zip(("o", "final_state"), got, want, strict=True):
        assert_close(name, b, a, tol=spec.TOL_ORACLE, dtype="float32")
    for name, a, b in zip(verify.QUANTITIES["fwd_bwd"][2:], got_grads, want_grads, strict=True):
        assert_close(name, b, a, tol=spec.TOL_ORACLE, dtype="float32")


@pytest.fixture(scope="module")
def tiny_reference():
    """The oracle's fwd_bwd answer on the tiny preset's slow input set (compiled like the bench)."""
    sets = verify.input_sets(TINY_CASE, seed=11)
    oracle = verify.oracle_program(TINY_CASE, "fwd_bwd")
    return sets[1], tuple(oracle(*sets[1].call_args("fwd_bwd")))


def test_every_reference_quantity_is_far_above_the_absolute_tolerance(tiny_reference):
    """A check can only fail if the reference is not ~0: otherwise max_abs <= atol passes any small
    output, as the old beta = 0 state check did. On the slow set every quantity is far above it."""
    input_set, want = tiny_reference
    for name, ref in zip(verify.QUANTITIES["fwd_bwd"], want, strict=True):
        rms = float(np.sqrt(np.mean(np.asarray(ref, np.float64) ** 2)))
        atol = verify.tolerance(name, TINY.dtype).atol
        assert rms > 1e3 * atol, f"{name}: reference rms {rms:.2e} on {input_set.label}"


def test_compare_passes_the_oracle_and_names_a_wrong_quantity(tiny_reference):
    input_set, want = tiny_reference
    results = verify.compare("fwd_bwd", input_set, want, want, dtype="float32")
    assert set(results) == set(verify.QUANTITIES["fwd_bwd"])
    assert all(rel == 0.0 for _, rel in results.values())
    bad = list(want)
    bad[5] = want[5] * 1.01  # dg off by 1 %
    with pytest.raises(verify.MismatchError, match=r"^fwd_bwd dg \[input set 1, slow gates\]: "):
        verify.compare("fwd_bwd", input_set, tuple(bad), want, dtype="float32")
    bad = list(want[:2])
    bad[1] = jnp.zeros_like(want[1])  # a zero final state
    with pytest.raises(verify.MismatchError, match=r"^fwd final_state \[input set 1"):
        verify.compare("fwd", input_set, tuple(bad), want, dtype="float32")
    with pytest.raises(verify.MismatchError, match="returned 1 arrays, expected 2"):
        verify.compare("fwd", input_set, want[:1], want, dtype="float32")


def test_compare_checks_dtypes():
    """o in the input dtype, the state and its gradient in float32: a kernel may not return
    float32 gradients for bf16 inputs (or any other dtype the program does not promise)."""
    case = spec.Case(B=1, T=8, H=1, K=8, V=8, dtype="bfloat16")
    (x, *_) = verify.input_sets(case, seed=2)
    o = jnp.zeros((1, 8, 1, 8), jnp.float32)  # should be bf16
    s = jnp.zeros((1, 1, 8, 8), jnp.float32)
    with pytest.raises(verify.MismatchError, match=r"fwd o .*dtype float32 != expected bfloat16"):
        verify.compare("fwd", x, (o, s), (o, s), dtype="bfloat16")


def test_identity_program_compares_bits():
    a = (jnp.asarray([1.0, 0.0, 2.0], jnp.float32), jnp.asarray([1.5], jnp.bfloat16))
    same = verify.identity_program(a)
    assert np.asarray(same(a, a)).tolist() == [True, True]
    one_ulp = (jnp.nextafter(a[0], jnp.float32(3.0)), a[1])
    assert np.asarray(same(a, one_ulp)).tolist() == [False, True]
    negative_zero = (jnp.asarray([1.0, -0.0, 2.0], jnp.float32), a[1])
    assert np.asarray(same(a, negative_zero)).tolist() == [False, True]


def test_spot_check_indices_keep_all_calls_that_fit_else_an_unpredictable_subset():
    rng = np.random.default_rng(0)
    assert verify.spot_check_indices(10, 100, rng, budget=1000) == list(range(10))
    picked = verify.spot_check_indices(10, 300, rng, budget=1000)
    assert len(set(picked)) == len(picked) == 3
    assert all(0 <= i < 10 for i in picked)
    assert verify.spot_check_indices(10, 5000, rng, budget=1000) != []
    draws = {
        tuple(verify.spot_check_indices(50, 10, np.random.default_rng(s), budget=50))
        for s in range(5)
    }
    assert len(draws) > 1, "the subset depends on the seed"


def test_host_round_trips_are_found_in_the_compiled_program():
    """Checked on the compiled HLO, so a callback is found however it got there (a custom
    primitive can lower to one under a name no jaxpr check knows)."""
    x = jax.ShapeDtypeStruct((4,), jnp.float32)

    def cached(a):
        return jax.pure_callback(lambda b: b, x, a) * 2.0

    compiled = jax.jit(cached).lower(x).compile()
    found = verify.host_round_trips(compiled.as_text())
    assert len(found) == 1
    assert "xla_ffi_python_cpu_callback" in found[0]
    honest = jax.jit(lambda a: jnp.cumsum(a) * 2.0).lower(x).compile()
    assert verify.host_round_trips(honest.as_text()) == []
