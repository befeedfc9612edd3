"""TPU rules for what is really built (interpret mode enforces none of them on CPU).

The lint traces the public API, forward and backward, and checks every pallas_call; the Mosaic
lowering test runs JAX's real TPU lowering (no TPU needed) on the same program. Negative controls
prove each rule can fail.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from kernels.gdn import gdn
from kernels.harness import spec, tpu_rules
from kernels.harness.testing import make_inputs


def _programs(case: spec.Case, *, interpret):
    """(fwd, fwd+bwd) of the public API for ``impl="pallas"`` and their example arguments."""
    x = make_inputs(case, with_state=True)

    def fwd(q, k, v, g, beta, s0):
        return gdn(
            q,
            k,
            v,
            g,
            beta,
            initial_state=s0,
            output_final_state=True,
            impl="pallas",
            chunk_size=case.C,
            interpret=interpret,
        )

    def fwd_bwd(q, k, v, g, beta, s0, do, ds):
        _, vjp = jax.vjp(fwd, q, k, v, g, beta, s0)
        return vjp((do, ds))

    args = (*x.arrays(), x.s0)
    cot = (jnp.zeros(x.v.shape, x.v.dtype), jnp.zeros(x.s0.shape, jnp.float32))
    return (fwd, args), (fwd_bwd, (*args, *cot))


@pytest.mark.parametrize("case", spec.LINT_CASES, ids=lambda c: c.id)
def test_pallas_calls_follow_tpu_rules(case):
    (fwd, fargs), (fwd_bwd, bargs) = _programs(case, interpret=False)
    violations = tpu_rules.lint(fwd, *fargs) + tpu_rules.lint(fwd_bwd, *bargs, min_calls=2)
    assert not violations, "\n".join(map(str, violations))


@pytest.mark.parametrize("case", spec.LINT_CASES, ids=lambda c: c.id)
def test_pallas_lowers_for_tpu(case):
    """``jax.export`` for platform tpu runs the Pallas -> Mosaic lowering on CPU. It catches
    primitives without a TPU lowering and bad block shapes; Mosaic's own compile (layouts, VMEM)
    still needs a TPU (see the ``tpu``-marked tests)."""
    _, (fwd_bwd, bargs) = _programs(case, interpret=False)
    exported = jax.export.export(jax.jit(fwd_bwd), platforms=["tpu"])(*bargs)
    text = exported.mlir_module()
    assert text.count("tpu_custom_call") >= 2, "expected the forward and backward Mosaic kernels"


# --- negative controls: each rule can fire --------------------------------------------------


def _copy_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def _cumsum_kernel(x_ref, o_ref):
    o_ref[...] = jnp.cumsum(x_ref[...], axis=0)


def _dynamic_slice_kernel(x_ref, o_ref):
    x = x_ref[...]
    i = pl.program_id(0)
    o_ref[...] = jnp.broadcast_to(jax.lax.dynamic_slice_in_dim(x, i, 1, axis=0), x.shape)


def _carry_kernel(x_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(1) == 0)
    def start():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += x_ref[...]
    o_ref[...] = acc_ref[...]


def _call(
    kernel,
    x,
    *,
    block,
    name="gdn_bad",
    scope=True,
    semantics=("parallel",),
    cost=True,
    scratch=(),
    grid_rank=1,
):
    grid = tuple(x.shape[i] // (block[i] or 1) for i in range(grid_rank))

    def index_map(*idx):
        return (*idx, *([0] * (x.ndim - len(idx))))

    call = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=grid,
        in_specs=[pl.BlockSpec(block, index_map)],
        out_specs=pl.BlockSpec(block, index_map),
        scratch_shapes=list(scratch),
        compiler_params=None
        if semantics is None
        else pltpu.CompilerParams(dimension_semantics=semantics),
        cost_estimate=COST if cost else None,
        name=name,
        interpret=True,
    )
    if not scope:
        return call(x)
    with jax.named_scope("gdn_negative_control"):
        return call(x)


COST = pl.CostEstimate(flops=1, transcendentals=0, bytes_accessed=1)
X = jnp.zeros((32, 256), jnp.float32)
X3 = jnp.zeros((2, 32, 256), jnp.float32)


def _rules(fn, x=X):
    return sorted({v.rule for v in tpu_rules.lint(fn, x)})


def test_lint_accepts_a_good_control():
    assert _rules(functools.partial(_call, _copy_kernel, block=(8, 128))) == []


@pytest.mark.parametrize(
    ("kwargs", "rule"),
    [
        (dict(kernel=_copy_kernel, block=(4, 128)), "block_shape"),
        (dict(kernel=_copy_kernel, block=(8, 100)), "block_shape"),
        (dict(kernel=_cumsum_kernel, block=(8, 128)), "forbidden_primitive"),
        (dict(kernel=_dynamic_slice_kernel, block=(8, 128)), "forbidden_primitive"),
        (dict(kernel=_copy_kernel, block=(8, 128), name=None), "name"),
        (dict(kernel=_copy_kernel, block=(8, 128), name="my_kernel"), "name"),
        (dict(kernel=_copy_kernel, block=(8, 128), scope=False), "named_scope"),
        (dict(kernel=_copy_kernel, block=(8, 128), semantics=None), "dimension_semantics"),
        (dict(kernel=_copy_kernel, block=(8, 128), cost=False), "cost_estimate"),
    ],
    ids=[
        "sublane-4",
        "lane-100",
        "cumsum",
        "dynamic_slice",
        "unnamed",
        "bad-name",
        "no-scope",
        "no-semantics",
        "no-cost",
    ],
)
def test_lint_rejects_a_bad_control(kwargs, rule):
    kernel = kwargs.pop("kernel")
    assert rule in _rules(functools.partial(_call, kernel, **kwargs))


def test_lint_rejects_parallel_axis_carrying_scratch():
    fn = functools.partial(
        _call,
        _carry_kernel,
        block=(None, 8, 256),
        semantics=("parallel", "parallel"),
        scratch=[pltpu.VMEM((8, 256), jnp.float32)],
        grid_rank=2,
    )
    assert "dimension_semantics" in _rules(fn, X3)
    ok = functools.partial(
        _call,
        _carry_kernel,
        block=(None, 8, 256),
        semantics=("parallel", "arbitrary"),
        scratch=[pltpu.VMEM((8, 256), jnp.float32)],
        grid_rank=2,
    )
    assert _rules(ok, X3) == []


def test_lint_counts_missing_kernels():
    violations = tpu_rules.lint(lambda x: x * 2, X)
    assert [v.rule for v in violations] == ["pallas_calls"]


def test_mosaic_lowering_rejects_cumsum():
    """The lowering check is a second, independent guard for unlowerable primitives."""

    def fn(x):
        return pl.pallas_call(
            _cumsum_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0] // 8,),
            in_specs=[pl.BlockSpec((8, 256), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((8, 256), lambda i: (i, 0)),
            name="gdn_bad",
        )(x)

    with pytest.raises(NotImplementedError, match="cumsum"):
        jax.export.export(jax.jit(fn), platforms=["tpu"])(X)
