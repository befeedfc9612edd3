"""``y = act(x @ w + b)``: a blocked Pallas TPU matmul, fused epilogue (interpret mode on CPU).

Shapes: ``x`` [M, K], ``w`` [K, N], ``b`` [N] -> ``y`` [M, N] in ``x.dtype`` (float32 or bfloat16).

The grid is ``(M / bm, N / bn, K / bk)``. Step ``(i, j, k)`` multiplies the ``[bm, bk]`` block of
``x`` by the ``[bk, bn]`` block of ``w`` and adds the product into a float32 ``[bm, bn]``
accumulator in VMEM scratch. The accumulator is zeroed on the first K step; the epilogue (bias,
activation, cast to the output dtype) runs once, on the last K step, and writes the output block.
The K axis is innermost and ``arbitrary`` (the accumulator is carried across it); M and N are
``parallel``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# TPU vreg tile: a block's last dim must be a multiple of NUM_LANES, its second-to-last a multiple
# of the sublane count for its dtype (8 rows of 32-bit, 16 of bfloat16), or equal the array's dim.
NUM_LANES = 128
SUBLANES = {"float32": 8, "bfloat16": 16}

# Stable kernel name: profiles and trace diffs attribute time to it, so keep it across edits.
KERNEL_NAME = "matmul_bias_act"

ACTIVATIONS = ("gelu", "silu", "none")

_F32 = jnp.float32
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@dataclasses.dataclass(frozen=True)
class BlockSizes:
    """Tile sizes of the grid: ``bm`` rows of x, ``bn`` columns of w, ``bk`` of the contraction.

    Each must divide its dimension and follow the TPU tiling rule (see :func:`check_blocks`).
    Bigger tiles mean fewer grid steps and less re-reading of x and w from HBM, at the cost of
    VMEM: x, w and the output are double-buffered, plus the float32 accumulator.
    """

    bm: int = 128
    bn: int = 128
    bk: int = 128

    @classmethod
    def get_default(cls, *, M: int, N: int, K: int, dtype: Any = jnp.float32) -> BlockSizes:
        """The default tiles fitted to the problem: per dimension, the largest tile up to the
        default that divides it and follows the tiling rule, else the whole dimension."""
        d, sublanes = cls(), SUBLANES.get(jnp.dtype(dtype).name, 8)
        return cls(
            bm=_fit(d.bm, M, sublanes), bn=_fit(d.bn, N, NUM_LANES), bk=_fit(d.bk, K, NUM_LANES)
        )


def _fit(block: int, dim: int, multiple: int) -> int:
    """The largest multiple of ``multiple`` up to ``block`` that divides ``dim``; ``dim`` itself
    when it is no bigger than ``block`` or no such tile exists."""
    if dim <= block:
        return dim
    for tile in range(block - block % multiple, 0, -multiple):
        if dim % tile == 0:
            return tile
    return dim


def check_blocks(M: int, N: int, K: int, blocks: BlockSizes, dtype: Any) -> None:
    """Raise ``ValueError`` naming the block and the rule it breaks.

    ``bm`` must divide M, ``bn`` N and ``bk`` K. TPU tiling: ``bn`` and ``bk`` are the last dim of
    a block (of w and of x), so each is a multiple of 128 or the whole dim; ``bm`` (and ``bk`` as
    w's row count) a multiple of the dtype's sublane count (8 for float32, 16 for bfloat16) or the
    whole dim.
    """
    sublanes = SUBLANES.get(jnp.dtype(dtype).name)
    if sublanes is None:
        raise ValueError(f"dtype {jnp.dtype(dtype).name} is not supported: use {sorted(SUBLANES)}")
    for name, block, dim, dim_name in (
        ("bm", blocks.bm, M, "M"),
        ("bn", blocks.bn, N, "N"),
        ("bk", blocks.bk, K, "K"),
    ):
        if not isinstance(block, int) or block <= 0:
            raise ValueError(f"{name}={block!r} must be a positive int")
        if dim % block:
            raise ValueError(f"{name}={block} does not divide {dim_name}={dim}: pick a divisor")
    rules = (
        ("bm", blocks.bm, M, sublanes),
        ("bn", blocks.bn, N, NUM_LANES),
        ("bk", blocks.bk, K, NUM_LANES),
    )
    for name, block, dim, multiple in rules:
        if block != dim and block % multiple:
            raise ValueError(
                f"{name}={block} must be a multiple of {multiple} (TPU tiling for "
                f"{jnp.dtype(dtype).name}) or the whole dimension ({dim})"
            )


def _activation(y: jax.Array, activation: str) -> jax.Array:
    """The activation on a float32 tile. GELU is the tanh approximation."""
    if activation == "gelu":
        return 0.5 * y * (1.0 + jnp.tanh(_SQRT_2_OVER_PI * (y + 0.044715 * y * y * y)))
    if activation == "silu":
        return y * (1.0 / (1.0 + jnp.exp(-y)))
    return y


def matmul_bias_act_kernel(x_ref, w_ref, b_ref, o_ref, acc_ref, *, activation: str, precision):
    """One grid step ``(i, j, k)``.

    Refs: ``x_ref`` [bm, bk], ``w_ref`` [bk, bn], ``b_ref`` [1, bn] (float32), ``o_ref``
    [bm, bn]; scratch ``acc_ref`` [bm, bn] float32, carried across the K axis.
    """
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _zero():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(
        x_ref[...], w_ref[...], preferred_element_type=_F32, precision=precision
    )

    @pl.when(k == pl.num_programs(2) - 1)
    def _epilogue():  # once per output block: bias, activation, cast
        y = acc_ref[...] + b_ref[...]
        o_ref[...] = _activation(y, activation).astype(o_ref.dtype)


def _cost_estimate(M: int, N: int, K: int, itemsize: int, activation: str) -> pl.CostEstimate:
    return pl.CostEstimate(
        flops=2 * M * N * K + 2 * M * N,
        transcendentals=M * N if activation != "none" else 0,
        bytes_accessed=(M * K + K * N + M * N) * itemsize + 4 * N,
    )


@functools.partial(jax.jit, static_argnames=("activation", "block_sizes", "interpret"))
def matmul_bias_act(
    x: jax.Array,
    w: jax.Array,
    b: jax.Array,
    *,
    activation: str = "gelu",
    block_sizes: BlockSizes | None = None,
    interpret: Any = None,
) -> jax.Array:
    """``act(x @ w + b)`` with float32 accumulation.

    Args:
        x: [M, K], float32 or bfloat16.
        w: [K, N], the same dtype as ``x``.
        b: [N], any float dtype (added in float32).
        activation: ``"gelu"`` (tanh approximation), ``"silu"`` or ``"none"``.
        block_sizes: tiles; ``None`` picks :meth:`BlockSizes.get_default`.
        interpret: Pallas interpret mode. ``None`` chooses it: interpret unless the default
            backend is a TPU. ``False`` lowers with Mosaic (TPU only).

    Returns:
        y: [M, N] in ``x.dtype``.
    """
    if x.ndim != 2 or w.ndim != 2 or b.ndim != 1:
        raise ValueError(f"need x [M, K], w [K, N], b [N]; got {x.shape}, {w.shape}, {b.shape}")
    M, K = x.shape
    K_w, N = w.shape
    if K_w != K or b.shape[0] != N:
        raise ValueError(f"shapes do not chain: x {x.shape}, w {w.shape}, b {b.shape}")
    if x.dtype != w.dtype:
        raise ValueError(f"x and w must share a dtype, got {x.dtype} and {w.dtype}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation={activation!r}: use one of {ACTIVATIONS}")
    blocks = block_sizes or BlockSizes.get_default(M=M, N=N, K=K, dtype=x.dtype)
    check_blocks(M, N, K, blocks, x.dtype)
    if interpret is None:
        interpret = jax.default_backend() != "tpu"
    bm, bn, bk = blocks.bm, blocks.bn, blocks.bk
    # float32 inputs: a true float32 product on the MXU (bf16 passes would miss the tolerance).
    precision = lax.Precision.HIGHEST if x.dtype == _F32 else lax.Precision.DEFAULT
    kernel = functools.partial(matmul_bias_act_kernel, activation=activation, precision=precision)
    with jax.named_scope(KERNEL_NAME):
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((M, N), x.dtype),
            grid=(M // bm, N // bn, K // bk),
            in_specs=[
                pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),  # x
                pl.BlockSpec((bk, bn), lambda i, j, k: (k, j)),  # w
                pl.BlockSpec((1, bn), lambda i, j, k: (0, j)),  # b, one row
            ],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), _F32)],
            compiler_params=pltpu.CompilerParams(
                # K carries the accumulator from step to step, so it runs in order on one core.
                dimension_semantics=("parallel", "parallel", "arbitrary"),
            ),
            cost_estimate=_cost_estimate(M, N, K, x.dtype.itemsize, activation),
            name=KERNEL_NAME,
            interpret=interpret,
        )(x, w, b.astype(_F32).reshape(1, N))
