"""Chunked Gated DeltaNet forward and backward as Pallas TPU kernels (interpret mode on CPU)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# TPU vreg tile: the last two block dims map to (sublanes, lanes). A block dim must be a multiple of
# these or equal the whole array dim.
NUM_SUBLANES = 8
NUM_LANES = 128
MIN_CHUNK_SIZE = NUM_SUBLANES
DEFAULT_CHUNK_SIZE = 64

# Stable kernel names: profiles and trace diffs attribute time to these, so keep them across edits.
FWD_KERNEL_NAME = "gdn_chunk_fwd"
BWD_KERNEL_NAME = "gdn_chunk_bwd"

_F32 = jnp.float32
_HIGHEST = lax.Precision.HIGHEST


@dataclasses.dataclass(frozen=True)
class BlockSizes:
    """Tuning knobs of the chunked kernels.

    The chunk size changes numerics only at fp32 rounding level but dominates speed: the per-chunk
    work grows like ``C^2 (K + V) + C^3`` while the sequential chunk loop shrinks like ``T / C``.

    Attributes:
        chunk_size: tokens per chunk ``C`` (a grid step); a positive multiple of ``MIN_CHUNK_SIZE``
            so the ``(C, K)`` blocks satisfy the TPU sublane rule.
    """

    chunk_size: int = DEFAULT_CHUNK_SIZE

    def __post_init__(self) -> None:
        chunk_size = self.chunk_size
        if not isinstance(chunk_size, int) or chunk_size <= 0 or chunk_size % MIN_CHUNK_SIZE:
            raise ValueError(f"{chunk_size=} must be a positive multiple of {MIN_CHUNK_SIZE}")

    @classmethod
    def get_default(cls, *, T: int, K: int, V: int) -> BlockSizes:
        """Default block sizes for a problem: ``DEFAULT_CHUNK_SIZE``, shrunk for short sequences."""
        del K, V  # no tuned entries yet; see kernels/gdn/README.md before adding a table
        short = -(-T // MIN_CHUNK_SIZE) * MIN_CHUNK_SIZE
        return cls(chunk_size=min(DEFAULT_CHUNK_SIZE, short))


@functools.partial(
    jax.jit, static_argnames=("scale", "block_sizes", "output_final_state", "interpret")
)
def chunk_gdn_pallas(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    g: jax.Array,
    beta: jax.Array,
    *,
    scale: float,
    initial_state: jax.Array | None = None,
    block_sizes: BlockSizes | None = None,
    output_final_state: bool = True,
    interpret: Any = False,
) -> tuple[jax.Array, jax.Array | None]:
    """Chunked gated delta rule on Pallas TPU kernels (``impl="pallas"``), with a Pallas backward.

    Args:
        q: queries ``[B, T, H, K]``.
        k: keys ``[B, T, H, K]``.
        v: values ``[B, T, H, V]``.
        g: log-decay ``[B, T, H]``.
        beta: write strength ``[B, T, H]``.
        scale: query scale (applied inside the kernel).
        initial_state: ``[B, H, K, V]``; zeros when ``None``.
        block_sizes: tuning knobs; ``BlockSizes.get_default`` when ``None``.
        output_final_state: return the final state (otherwise ``None``).
        interpret: ``False`` compiles with Mosaic (TPU only); ``True`` or a
            ``pltpu.InterpretParams`` runs the kernels in interpret mode (CPU).

    Returns:
        ``o`` ``[B, T, H, V]`` in ``v.dtype`` and the final state ``[B, H, K, V]`` float32 (or
        ``None``).
    """
    B, T, H, K = q.shape
    V = v.shape[-1]
    if block_sizes is None:
        block_sizes = BlockSizes.get_default(T=T, K=K, V=V)
    C = block_sizes.chunk_size
    num_chunks = -(-T // C)
    pad = num_chunks * C - T
    if initial_state is None:
        initial_state = jnp.zeros((B, H, K, V), _F32)

    # Layout (XLA): head-first [BH, NT, ·]; gates lane-major [BH, NC, 1, C]; gamma is the
    # chunk-local cumsum of g (no cumsum lowering inside Pallas TPU kernels).
    def head_first(x: jax.Array) -> jax.Array:  # [B, T, H, D] -> [BH, NT, D]
        x = jnp.transpose(x, (0, 2, 1, 3)).reshape(B * H, T, x.shape[-1])
        return jnp.pad(x, ((0, 0), (0, pad), (0, 0)))

    def lane_major(x: jax.Array) -> jax.Array:  # [B, T, H] -> [BH, NC, 1, C]
        x = jnp.pad(jnp.transpose(x, (0, 2, 1)).reshape(B * H, T).astype(_F32), ((0, 0), (0, pad)))
        return x.reshape(B * H, num_chunks, 1, C)

    gamma = jnp.cumsum(lane_major(g), axis=-1)  # [BH, NC, 1, C], restarts in every chunk
    o, final_state = _gdn_chunked(
        head_first(q),
        head_first(k),
        head_first(v),
        gamma,
        lane_major(beta),
        initial_state.astype(_F32).reshape(B * H, K, V),
        C,
        scale,
        interpret,
    )
    o = jnp.transpose(o[:, :T].reshape(B, H, T, V), (0, 2, 1, 3))  # [B, T, H, V]
    final_state = final_state.reshape(B, H, K, V) if output_final_state else None
    return o, final_state


@functools.partial(jax.custom_vjp, nondiff_argnums=(6, 7, 8))
def _gdn_chunked(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    gamma: jax.Array,
    beta: jax.Array,
    s0: jax.Array,
    chunk_size: int,
    scale: float,
    interpret: Any,
) -> tuple[jax.Array, jax.Array]:
    """Kernel-layout core: q, k ``[BH, NT, K]``, v ``[BH, NT, V]``, gamma, beta ``[BH, NC, 1, C]``,
    s0 ``[BH, K, V]`` -> o ``[BH, NT, V]``, final state ``[BH, K, V]``."""
    o, final_state, _ = _fwd_impl(
        q,
        k,
        v,
        gamma,
        beta,
        s0,
        chunk_size=chunk_size,
        scale=scale,
        interpret=interpret,
        save_tape=False,
    )
    return o, final_state


def _gdn_chunked_fwd(q, k, v, gamma, beta, s0, chunk_size, scale, interpret):
    o, final_state, tape = _fwd_impl(
        q,
        k,
        v,
        gamma,
        beta,
        s0,
        chunk_size=chunk_size,
        scale=scale,
        interpret=interpret,
        save_tape=True,
    )
    return (o, final_state), (q, k, v, gamma, beta, tape)


def _gdn_chunked_bwd(chunk_size, scale, interpret, residuals, cotangents):
    q, k, v, gamma, beta, tape = residuals
    do, dsT = cotangents
    return _bwd_impl(
        q,
        k,
        v,
        gamma,
        beta,
        tape,
        do,
        dsT,
        chunk_size=chunk_size,
        scale=scale,
        interpret=interpret,
    )


_gdn_chunked.defvjp(_gdn_chunked_fwd, _gdn_chunked_bwd)


def _fwd_impl(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    gamma: jax.Array,
    beta: jax.Array,
    s0: jax.Array,
    *,
    chunk_size: int,
    scale: float,
    interpret: Any,
    save_tape: bool,
) -> tuple[jax.Array, jax.Array, jax.Array | None]:
    BH, NT, K = q.shape
    V = v.shape[-1]
    C = chunk_size
    num_chunks = NT // C
    grid = (BH, num_chunks)

    def qk_index_map(bh, c):
        return (bh, c, 0)

    def v_index_map(bh, c):
        return (bh, c, 0)

    def gate_index_map(bh, c):
        return (bh, c, 0, 0)

    def state_index_map(bh, c):  # the same block for every chunk: resident across the chunk axis
        del c
        return (bh, 0, 0)

    def tape_index_map(bh, c):
        return (bh, c, 0, 0)

    in_specs = [
        pl.BlockSpec((None, C, K), qk_index_map),  # q
        pl.BlockSpec((None, C, K), qk_index_map),  # k
        pl.BlockSpec((None, C, V), v_index_map),  # v
        pl.BlockSpec((None, None, 1, C), gate_index_map),  # gamma
        pl.BlockSpec((None, None, 1, C), gate_index_map),  # beta
        pl.BlockSpec((None, K, V), state_index_map),  # s0
    ]
    out_shape = [
        jax.ShapeDtypeStruct((BH, NT, V), v.dtype),  # o
        jax.ShapeDtypeStruct((BH, K, V), _F32),  # final state
    ]
    out_specs = [
        pl.BlockSpec((None, C, V), v_index_map),
        pl.BlockSpec((None, K, V), state_index_map),
    ]
    if save_tape:  # chunk-start states for the backward
        out_shape.append(jax.ShapeDtypeStruct((BH, num_chunks, K, V), _F32))
        out_specs.append(pl.BlockSpec((None, None, K, V), tape_index_map))

    kernel = functools.partial(
        gdn_chunk_fwd_kernel, scale=scale, num_chunks=num_chunks, save_tape=save_tape
    )
    with jax.named_scope(FWD_KERNEL_NAME):
        outs = pl.pallas_call(
            kernel,
            out_shape=out_shape,
            grid=grid,
            in_specs=in_specs,
            out_specs=out_specs,
            scratch_shapes=[pltpu.VMEM((K, V), _F32)],  # the running state
            compiler_params=pltpu.CompilerParams(
                # bh: independent sequences. c: "arbitrary" because the state in VMEM scratch
                # is carried from chunk c to c + 1, so chunks must run in order on one core.
                dimension_semantics=("parallel", "arbitrary"),
            ),
            cost_estimate=_cost_estimate(
                q, k, v, s0, chunk_size=C, num_chunks=num_chunks, backward=False
            ),
            name=FWD_KERNEL_NAME,
            interpret=interpret,
        )(q, k, v, gamma, beta, s0)
    if save_tape:
        return outs[0], outs[1], outs[2]
    return outs[0], outs[1], None


def _bwd_impl(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    gamma: jax.Array,
    beta: jax.Array,
    tape: jax.Array,
    do: jax.Array,
    dsT: jax.Array,
    *,
    chunk_size: int,
    scale: float,
    interpret: Any,
) -> tuple[jax.Array, ...]:
    BH, NT, K = q.shape
    V = v.shape[-1]
    C = chunk_size
    num_chunks = NT // C
    grid = (BH, num_chunks)

    # Grid step c visits chunk num_chunks - 1 - c: the state cotangent flows backwards in time.
    def qk_index_map(bh, c):
        return (bh, num_chunks - 1 - c, 0)

    def v_index_map(bh, c):
        return (bh, num_chunks - 1 - c, 0)

    def gate_index_map(bh, c):
        return (bh, num_chunks - 1 - c, 0, 0)

    def tape_index_map(bh, c):
        return (bh, num_chunks - 1 - c, 0, 0)

    def state_index_map(bh, c):
        del c
        return (bh, 0, 0)

    qk_spec = pl.BlockSpec((None, C, K), qk_index_map)
    v_spec = pl.BlockSpec((None, C, V), v_index_map)
    gate_spec = pl.BlockSpec((None, None, 1, C), gate_index_map)
    state_spec = pl.BlockSpec((None, K, V), state_index_map)
    in_specs = [
        qk_spec,  # q
        qk_spec,  # k
        v_spec,  # v
        gate_spec,  # gamma
        gate_spec,  # beta
        pl.BlockSpec((None, None, K, V), tape_index_map),  # chunk-start state
        v_spec,  # do
        state_spec,  # dsT
    ]
    out_shape = [
        jax.ShapeDtypeStruct(q.shape, q.dtype),  # dq
        jax.ShapeDtypeStruct(k.shape, k.dtype),  # dk
        jax.ShapeDtypeStruct(v.shape, v.dtype),  # dv
        jax.ShapeDtypeStruct(gamma.shape, _F32),  # dgamma
        jax.ShapeDtypeStruct(beta.shape, _F32),  # dbeta
        jax.ShapeDtypeStruct((BH, K, V), _F32),  # ds0
    ]
    out_specs = [qk_spec, qk_spec, v_spec, gate_spec, gate_spec, state_spec]
    kernel = functools.partial(gdn_chunk_bwd_kernel, scale=scale, num_chunks=num_chunks)
    with jax.named_scope(BWD_KERNEL_NAME):
        return tuple(
            pl.pallas_call(
                kernel,
                out_shape=out_shape,
                grid=grid,
                in_specs=in_specs,
                out_specs=out_specs,
                scratch_shapes=[pltpu.VMEM((K, V), _F32)],  # cotangent of the chunk-end state
                compiler_params=pltpu.CompilerParams(
                    # bh: independent sequences. c: "arbitrary" because the state cotangent in
                    # VMEM scratch is carried from each chunk to the one before it.
                    dimension_semantics=("parallel", "arbitrary"),
                ),
                cost_estimate=_cost_estimate(
                    q, k, v, tape, chunk_size=C, num_chunks=num_chunks, backward=True
                ),
                name=BWD_KERNEL_NAME,
                interpret=interpret,
            )(q, k, v, gamma, beta, tape, do.astype(v.dtype), dsT.astype(_F32))
        )


def _cost_estimate(
    *arrays: jax.Array, chunk_size: int, num_chunks: int, backward: bool
) -> pl.CostEstimate:
    """Executed work of the kernel as written: per chunk ``6C^2K + 4C^2V + 6CKV`` plus ``C^3`` for
    the row-by-row inverse; the backward does about twice the forward's matmuls and recomputes."""
    q, _, v = arrays[:3]
    BH, _, K = q.shape
    V = v.shape[-1]
    C = chunk_size
    per_chunk = 6 * C * C * K + 4 * C * C * V + 6 * C * K * V + C**3
    flops = BH * num_chunks * per_chunk * (3 if backward else 1)
    transcendentals = BH * num_chunks * (C * C + 3 * C)
    bytes_accessed = sum(x.size * x.dtype.itemsize for x in arrays) * (2 if backward else 1)
    return pl.CostEstimate(
        flops=int(flops), transcendentals=int(transcendentals), bytes_accessed=int(bytes_accessed)
    )


# --------------------------------------------------------------------------------------------------
# Kernel bodies. One grid step = one chunk of one (batch, head) sequence.


def gdn_chunk_fwd_kernel(
    q_tile_ref,  # [C, K]
    k_tile_ref,  # [C, K]
    v_tile_ref,  # [C, V]
    gamma_ref,  # [1, C] chunk-local cumsum of g
    beta_ref,  # [1, C]
    s0_ref,  # [K, V]
    o_tile_ref,  # [C, V]
    s_final_ref,  # [K, V]
    *rest,  # (tape_ref [K, V],)? then state_scratch_ref [K, V]
    scale: float,
    num_chunks: int,
    save_tape: bool,
):
    if save_tape:
        tape_ref, state_scratch_ref = rest
    else:
        (state_scratch_ref,) = rest
    c = pl.program_id(1)

    @pl.when(c == 0)
    def start_new_sequence():
        state_scratch_ref[...] = s0_ref[...].astype(_F32)

    # Every grid step: one chunk.
    s = state_scratch_ref[...]  # [K, V] state entering this chunk
    if save_tape:
        tape_ref[...] = s
    q = q_tile_ref[...].astype(_F32) * scale  # [C, K]
    k = k_tile_ref[...].astype(_F32)  # [C, K]
    v = v_tile_ref[...].astype(_F32)  # [C, V]
    ch = _chunk_prologue(q=q, k=k, v=v, gamma_row=gamma_ref[...], beta_row=beta_ref[...])

    v_new = ch.u - _dot(ch.w, s)  # [C, V] the chunk's delta-rule corrections
    o = _dot(q * ch.e_gamma, s) + _dot(ch.attn, v_new)  # [C, V]
    k_tail = k * jnp.exp(ch.g_last - ch.gamma_col)  # [C, K]
    state_scratch_ref[...] = jnp.exp(ch.g_last) * s + _dot_tn(k_tail, v_new)  # [K, V]
    o_tile_ref[...] = o.astype(o_tile_ref.dtype)

    @pl.when(c == num_chunks - 1)
    def store_final_state():
        s_final_ref[...] = state_scratch_ref[...]


def gdn_chunk_bwd_kernel(
    q_tile_ref,  # [C, K]
    k_tile_ref,  # [C, K]
    v_tile_ref,  # [C, V]
    gamma_ref,  # [1, C]
    beta_ref,  # [1, C]
    tape_ref,  # [K, V] state entering this chunk (from the forward)
    do_tile_ref,  # [C, V]
    dsT_ref,  # [K, V] cotangent of the final state
    dq_tile_ref,  # [C, K]
    dk_tile_ref,  # [C, K]
    dv_tile_ref,  # [C, V]
    dgamma_ref,  # [1, C]
    dbeta_ref,  # [1, C]
    ds0_ref,  # [K, V]
    dstate_scratch_ref,  # [K, V] cotangent of the state leaving this chunk
    *,
    scale: float,
    num_chunks: int,
):
    c = pl.program_id(1)  # chunk num_chunks - 1 - c

    @pl.when(c == 0)
    def start_new_sequence():
        dstate_scratch_ref[...] = dsT_ref[...]

    # Every grid step: one chunk, in reverse order.
    s = tape_ref[...]  # [K, V]
    ds_end = dstate_scratch_ref[...]  # [K, V]
    q = q_tile_ref[...].astype(_F32) * scale  # [C, K]
    k = k_tile_ref[...].astype(_F32)  # [C, K]
    v = v_tile_ref[...].astype(_F32)  # [C, V]
    do = do_tile_ref[...].astype(_F32)  # [C, V]
    ch = _chunk_prologue(q=q, k=k, v=v, gamma_row=gamma_ref[...], beta_row=beta_ref[...])
    v_new = ch.u - _dot(ch.w, s)  # [C, V]
    k_decay = jnp.exp(ch.g_last - ch.gamma_col)  # [C, 1]
    k_tail = k * k_decay  # [C, K]
    e_last = jnp.exp(ch.g_last)  # [1, 1]

    # S' = e_last S + k_tail^T v_new
    ds = e_last * ds_end  # [K, V]
    d_k_tail = _dot_nt(v_new, ds_end)  # [C, K]
    dv_new = _dot(k_tail, ds_end)  # [C, V]
    dk = d_k_tail * k_decay  # [C, K]
    tail_terms = jnp.sum(d_k_tail * k_tail, axis=1, keepdims=True)  # [C, 1]
    dg_last = e_last * jnp.sum(s * ds_end, keepdims=True) + jnp.sum(
        tail_terms, keepdims=True
    )  # [1, 1]
    dgamma_col = -tail_terms  # [C, 1]

    # o = (q e^gamma) S + attn v_new
    q_decay = q * ch.e_gamma  # [C, K]
    d_q_decay = _dot_nt(do, s)  # [C, K]
    dq = d_q_decay * ch.e_gamma  # [C, K]
    dgamma_col += jnp.sum(d_q_decay * q_decay, axis=1, keepdims=True)
    ds += _dot_tn(q_decay, do)
    d_attn = _dot_nt(do, v_new)  # [C, C]
    dv_new += _dot_tn(ch.attn, do)
    d_qk = d_attn * ch.decay  # [C, C]
    dq += _dot(d_qk, k)
    dk += _dot_tn(d_qk, q)
    d_decay_attn = d_attn * ch.attn  # [C, C] gradient through exp(gamma_i - gamma_j)
    dgamma_col += jnp.sum(d_decay_attn, axis=1, keepdims=True)
    dgamma_row = -jnp.sum(d_decay_attn, axis=0, keepdims=True)  # [1, C]

    # v_new = u - w S
    dw = -_dot_nt(dv_new, s)  # [C, K]
    ds -= _dot_tn(ch.w, dv_new)

    # u = T (beta v), w = T (beta e^gamma k), T = (I + M)^-1
    d_rhs_v = _dot_tn(ch.t, dv_new)  # [C, V]
    d_rhs_k = _dot_tn(ch.t, dw)  # [C, K]
    dm = -jnp.where(ch.strict, _dot_nt(d_rhs_v, ch.u) + _dot_nt(d_rhs_k, ch.w), 0.0)  # [C, C]
    rhs_k = ch.beta_col * ch.e_gamma * k  # [C, K]
    dv = ch.beta_col * d_rhs_v  # [C, V]
    dbeta_col = jnp.sum(d_rhs_v * v, axis=1, keepdims=True) + jnp.sum(
        d_rhs_k * ch.e_gamma * k, axis=1, keepdims=True
    )  # [C, 1]
    dk += ch.beta_col * ch.e_gamma * d_rhs_k
    dgamma_col += jnp.sum(d_rhs_k * rhs_k, axis=1, keepdims=True)

    # M = beta_i (k_i . k_j) exp(gamma_i - gamma_j), i > j
    dbeta_col += jnp.sum(dm * ch.kk * ch.decay, axis=1, keepdims=True)
    d_kk = dm * ch.beta_col * ch.decay  # [C, C]
    dk += _dot(d_kk, k) + _dot_tn(d_kk, k)
    d_decay_m = dm * ch.m  # [C, C]
    dgamma_col += jnp.sum(d_decay_m, axis=1, keepdims=True)
    dgamma_row -= jnp.sum(d_decay_m, axis=0, keepdims=True)

    is_last = ch.lane == ch.lane.shape[1] - 1  # [1, C]
    dgamma_row += _col_to_row(dgamma_col, eye=ch.eye) + jnp.where(is_last, dg_last, 0.0)
    dq_tile_ref[...] = (dq * scale).astype(dq_tile_ref.dtype)
    dk_tile_ref[...] = dk.astype(dk_tile_ref.dtype)
    dv_tile_ref[...] = dv.astype(dv_tile_ref.dtype)
    dgamma_ref[...] = dgamma_row
    dbeta_ref[...] = _col_to_row(dbeta_col, eye=ch.eye)
    dstate_scratch_ref[...] = ds

    @pl.when(c == num_chunks - 1)
    def store_initial_state_grad():
        ds0_ref[...] = dstate_scratch_ref[...]


# --------------------------------------------------------------------------------------------------
# In-kernel stages (values, not refs). No cumsum, flip, dynamic slicing or triangular_solve: they
# have no Pallas TPU lowering, so rows and columns are picked with iota masks and lane reductions.


@dataclasses.dataclass(frozen=True)
class _Chunk:
    """State-independent quantities of one chunk (shared by the forward and backward kernels)."""

    lane: jax.Array  # [1, C] int32 lane index
    eye: jax.Array  # [C, C] bool
    strict: jax.Array  # [C, C] bool, i > j
    gamma_col: jax.Array  # [C, 1]
    beta_col: jax.Array  # [C, 1]
    g_last: jax.Array  # [1, 1] gamma of the chunk's last token
    e_gamma: jax.Array  # [C, 1] exp(gamma)
    decay: jax.Array  # [C, C] exp(gamma_i - gamma_j) for i >= j, else 0
    kk: jax.Array  # [C, C] k k^T
    m: jax.Array  # [C, C] strictly lower beta_i (k_i . k_j) decay_ij
    t: jax.Array  # [C, C] (I + m)^-1
    u: jax.Array  # [C, V] t (beta v)
    w: jax.Array  # [C, K] t (beta e^gamma k)
    attn: jax.Array  # [C, C] (q k^T) * decay


def _chunk_prologue(
    *, q: jax.Array, k: jax.Array, v: jax.Array, gamma_row: jax.Array, beta_row: jax.Array
) -> _Chunk:
    C = q.shape[0]
    row = lax.broadcasted_iota(jnp.int32, (C, C), 0)
    col = lax.broadcasted_iota(jnp.int32, (C, C), 1)
    lane = lax.broadcasted_iota(jnp.int32, (1, C), 1)
    eye = row == col
    causal = row >= col
    strict = row > col
    gamma_col = _row_to_col(gamma_row, eye=eye)  # [C, 1]
    beta_col = _row_to_col(beta_row, eye=eye)  # [C, 1]
    g_last = jnp.sum(jnp.where(lane == C - 1, gamma_row, 0.0), axis=1, keepdims=True)  # [1, 1]
    # Mask the gate difference before exp: above the diagonal it is positive and may overflow.
    decay = jnp.where(causal, jnp.exp(jnp.where(causal, gamma_col - gamma_row, 0.0)), 0.0)
    kk = _dot_nt(k, k)  # [C, C]
    m = jnp.where(strict, beta_col * kk * decay, 0.0)  # [C, C]
    t = _invert_unit_lower(m, row=row, eye=eye)  # [C, C]
    e_gamma = jnp.exp(gamma_col)  # [C, 1]
    u = _dot(t, beta_col * v)  # [C, V]
    w = _dot(t, beta_col * e_gamma * k)  # [C, K]
    attn = _dot_nt(q, k) * decay  # [C, C]
    return _Chunk(
        lane=lane,
        eye=eye,
        strict=strict,
        gamma_col=gamma_col,
        beta_col=beta_col,
        g_last=g_last,
        e_gamma=e_gamma,
        decay=decay,
        kk=kk,
        m=m,
        t=t,
        u=u,
        w=w,
        attn=attn,
    )


def _invert_unit_lower(m: jax.Array, *, row: jax.Array, eye: jax.Array) -> jax.Array:
    """``(I + m)^-1`` for a strictly lower ``m`` ``[C, C]``, by forward substitution.

    Row ``i`` of the inverse is ``e_i - m_i T``, where only rows above ``i`` of ``T`` are used and
    they are already final. One row per loop step: ``C - 1`` dependent steps of a
    ``[1, C] x [C, C]`` product, about ``C^3`` FLOPs in all.
    """
    C = m.shape[0]
    eye_f = eye.astype(_F32)

    def substitute_row(i, t):  # t [C, C]: rows < i final
        is_row = row == i  # [C, C]
        m_i = jnp.sum(jnp.where(is_row, m, 0.0), axis=0, keepdims=True)  # [1, C] row i of m
        return jnp.where(is_row, eye_f - _dot(m_i, t), t)

    return lax.fori_loop(1, C, substitute_row, eye_f)


def _row_to_col(x_row: jax.Array, *, eye: jax.Array) -> jax.Array:
    """``[1, C]`` -> ``[C, 1]`` by a masked lane reduction (no transpose)."""
    return jnp.sum(jnp.where(eye, x_row, 0.0), axis=1, keepdims=True)


def _col_to_row(x_col: jax.Array, *, eye: jax.Array) -> jax.Array:
    """``[C, 1]`` -> ``[1, C]`` by a masked sublane reduction (no transpose)."""
    return jnp.sum(jnp.where(eye, x_col, 0.0), axis=0, keepdims=True)


def _dot(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a @ b`` for ``[M, N] x [N, P]``, fp32 accumulation."""
    return lax.dot_general(
        a, b, (((1,), (0,)), ((), ())), precision=_HIGHEST, preferred_element_type=_F32
    )


def _dot_nt(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a @ b^T`` for ``[M, N] x [P, N]``, contracting the feature axes (no transpose)."""
    return lax.dot_general(
        a, b, (((1,), (1,)), ((), ())), precision=_HIGHEST, preferred_element_type=_F32
    )


def _dot_tn(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a^T @ b`` for ``[N, M] x [N, P]``, contracting the token axes (no transpose)."""
    return lax.dot_general(
        a, b, (((0,), (0,)), ((), ())), precision=_HIGHEST, preferred_element_type=_F32
    )
