"""Correctness of ``kernels.matmul`` (the ``matmul`` target's gate): oracle agreement over shapes,
dtypes, activations and tiles; the epilogue applied exactly once; clear block-size errors; and
the Mosaic lowering for TPU, which runs here without a TPU."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels.harness.tpu_rules import find_pallas_calls
from kernels.matmul import BlockSizes, matmul_bias_act
from kernels.matmul_harness.oracle import ACTIVATIONS, matmul_bias_act_ref
from kernels.matmul_harness.presets import PRESETS, REL_RMS_TOL


def _inputs(M: int, N: int, K: int, dtype: str, seed: int = 0):
    """x [M, K], w [K, N] (pre-activations of unit scale), b [N] float32."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, K), np.float32)
    w = rng.standard_normal((K, N), np.float32) / np.float32(np.sqrt(K))
    b = rng.standard_normal(N, np.float32) / np.float32(2.0)
    return jnp.asarray(x, dtype), jnp.asarray(w, dtype), jnp.asarray(b)


def _rel_rms(y, ref) -> float:
    y, ref = np.asarray(y, np.float64), np.asarray(ref, np.float64)
    return float(np.sqrt(np.mean((y - ref) ** 2)) / np.sqrt(np.mean(ref**2)))


# (M, N, K, dtype, activation, tiles or None for the kernel's default)
CASES = [
    (256, 256, 256, "float32", "gelu", None),
    (256, 256, 512, "bfloat16", "silu", None),
    (64, 384, 512, "float32", "silu", BlockSizes(bm=32, bn=128, bk=128)),
    (128, 256, 384, "bfloat16", "gelu", BlockSizes(bm=64, bn=256, bk=128)),
    (16, 128, 256, "float32", "none", BlockSizes(bm=8, bn=128, bk=256)),
    (48, 200, 72, "float32", "gelu", BlockSizes(bm=16, bn=200, bk=72)),  # whole-dim tiles
]


@pytest.mark.parametrize(
    ("M", "N", "K", "dtype", "activation", "blocks"),
    CASES,
    ids=[f"{m}x{n}x{k}-{d}-{a}-{b and (b.bm, b.bn, b.bk)}" for m, n, k, d, a, b in CASES],
)
def test_matches_oracle(M, N, K, dtype, activation, blocks):
    """Within ``REL_RMS_TOL[dtype]`` of the float32 oracle; output shape and dtype as documented."""
    x, w, b = _inputs(M, N, K, dtype)
    y = matmul_bias_act(x, w, b, activation=activation, block_sizes=blocks)
    assert y.shape == (M, N)
    assert y.dtype == jnp.dtype(dtype)
    assert np.all(np.isfinite(np.asarray(y, np.float32)))
    err = _rel_rms(y, matmul_bias_act_ref(x, w, b, activation))
    assert err <= REL_RMS_TOL[dtype], f"rel_rms {err:.2e} > {REL_RMS_TOL[dtype]:.0e}"


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_epilogue_applied_once(activation):
    """Four K steps: bias and activation must act on the full sum, once. The test computes what a
    kernel that ran the epilogue on every K step would return and checks it is far from the
    oracle, so this test can tell the two apart."""
    M, N, K, bk = 32, 128, 512, 128
    x, w, b = _inputs(M, N, K, "float32", seed=1)
    ref = matmul_bias_act_ref(x, w, b, activation)
    act = ACTIVATIONS[activation]
    acc = jnp.zeros((M, N), jnp.float32)
    for k in range(0, K, bk):  # the wrong kernel: act(acc + partial + b) on every step
        acc = act(acc + jnp.dot(x[:, k : k + bk], w[k : k + bk], precision="highest") + b)
    assert _rel_rms(acc, ref) > 0.05, "negative control: per-step epilogue must be detectable"

    y = matmul_bias_act(
        x, w, b, activation=activation, block_sizes=BlockSizes(bm=32, bn=128, bk=bk)
    )
    assert _rel_rms(y, ref) <= REL_RMS_TOL["float32"]


@pytest.mark.parametrize(("M", "N", "K"), [(8, 128, 128), (200, 384, 640), (1000, 1280, 768)])
def test_default_tiles_fit_any_shape(M, N, K):
    """The default tiles divide the problem and follow the tiling rule (else the whole dim)."""
    b = BlockSizes.get_default(M=M, N=N, K=K, dtype=jnp.bfloat16)
    for tile, dim, multiple in ((b.bm, M, 16), (b.bn, N, 128), (b.bk, K, 128)):
        assert dim % tile == 0, (tile, dim)
        assert tile == dim or tile % multiple == 0, (tile, dim, multiple)


def test_default_tiles_accumulate_over_k():
    """The kernel's default tiles on a K long enough to need several K steps (any default
    ``bk`` up to 1024)."""
    x, w, b = _inputs(16, 128, 2048, "float32", seed=2)
    y = matmul_bias_act(x, w, b, activation="gelu")
    assert _rel_rms(y, matmul_bias_act_ref(x, w, b, "gelu")) <= REL_RMS_TOL["float32"]


@pytest.mark.parametrize(
    ("shape", "dtype", "blocks", "message"),
    [
        ((256, 256, 256), "float32", BlockSizes(bm=96, bn=128, bk=128), "bm=96 does not divide M"),
        ((256, 256, 256), "float32", BlockSizes(bm=128, bn=64, bk=128), "bn=64 must be a multiple"),
        ((256, 256, 256), "float32", BlockSizes(bm=128, bn=128, bk=64), "bk=64 must be a multiple"),
        ((256, 256, 256), "bfloat16", BlockSizes(bm=8, bn=128, bk=128), "multiple of 16"),
        ((256, 256, 256), "float32", BlockSizes(bm=0, bn=128, bk=128), "bm=0 must be a positive"),
        ((256, 384, 256), "float32", BlockSizes(bm=128, bn=256, bk=128), "bn=256 does not divide"),
    ],
)
def test_bad_tiles_raise_a_clear_error(shape, dtype, blocks, message):
    M, N, K = shape
    x, w, b = _inputs(M, N, K, dtype)
    with pytest.raises(ValueError, match=message):
        matmul_bias_act(x, w, b, block_sizes=blocks)


def test_bad_arguments_raise_a_clear_error():
    x, w, b = _inputs(16, 128, 128, "float32")
    with pytest.raises(ValueError, match="share a dtype"):
        matmul_bias_act(x, w.astype(jnp.bfloat16), b)
    with pytest.raises(ValueError, match="do not chain"):
        matmul_bias_act(x, w[:64], b)
    with pytest.raises(ValueError, match="activation='relu'"):
        matmul_bias_act(x, w, b, activation="relu")


def test_interpret_mode_off_tpu():
    """The default picks interpret mode exactly when the backend is not a TPU."""
    x, w, b = _inputs(16, 128, 128, "float32")
    (call,) = find_pallas_calls(lambda *a: matmul_bias_act(*a), x, w, b)
    assert bool(call.interpret) == (jax.default_backend() != "tpu")
    assert call.dimension_semantics == ("parallel", "parallel", "arbitrary")


@pytest.mark.parametrize("preset", ["tiny", "tiny-bf16", "4k-bf16", "mlp-up-bf16"])
def test_lowers_to_mosaic_for_tpu(preset):
    """``jax.export`` for platform tpu runs the Pallas -> Mosaic lowering on CPU (no TPU needed)
    with the kernel's default tiles, on abstract inputs of every preset's size. It catches
    primitives without a TPU lowering and block shapes Mosaic refuses; Mosaic's own compile
    (VMEM, layouts) needs a TPU (``test_compiled_on_tpu``)."""
    p = PRESETS[preset]
    args = (
        jax.ShapeDtypeStruct((p.M, p.K), jnp.dtype(p.dtype)),
        jax.ShapeDtypeStruct((p.K, p.N), jnp.dtype(p.dtype)),
        jax.ShapeDtypeStruct((p.N,), jnp.float32),
    )

    def fn(x, w, b):
        return matmul_bias_act(x, w, b, activation=p.activation, interpret=False)

    text = jax.export.export(jax.jit(fn), platforms=["tpu"])(*args).mlir_module()
    assert text.count("tpu_custom_call") == 1


@pytest.mark.tpu
@pytest.mark.parametrize("preset", ["4k-bf16"])
def test_compiled_on_tpu(preset):
    """On a TPU: Mosaic-compiled kernel against the oracle on a realistic size."""
    p = PRESETS[preset]
    x, w, b = _inputs(p.M, p.N, p.K, p.dtype)
    y = matmul_bias_act(x, w, b, activation=p.activation)
    err = _rel_rms(y, matmul_bias_act_ref(x, w, b, p.activation))
    assert err <= REL_RMS_TOL[p.dtype], f"rel_rms {err:.2e}"
