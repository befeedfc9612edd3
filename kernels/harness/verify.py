"""What the bench verifies before its timings count (protected).

The bench times two programs, each built from the public ``gdn`` API:

- ``fwd(q, k, v, g, beta, s0) -> (o, S_T)``
- ``fwd_bwd(q, k, v, g, beta, s0, dO, dS) -> (o, S_T, dq, dk, dv, dg, dbeta, dS0)``: ``jax.vjp``
  of the forward, pulled back with random cotangents on *both* outputs.

Every quantity a timed program returns is compared, on every input set it is timed on, with the
protected fp32 oracle (``oracle.jax_oracle`` and its autodiff) at the measured shape and dtype;
outputs kept from timed calls must then be bit-identical to the verified outputs for the same
inputs. The candidate's programs are compiled from abstract shapes before the inputs exist, so no
kernel code (it runs only while importing and tracing) ever sees a seed or a value it is judged on.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import jax
import jax.numpy as jnp
from hillclimb_bench.checks import identity_program as identity_program  # the bench's
from hillclimb_bench.checks import spot_check_indices as spot_check_indices
from jax import lax

from . import spec
from .oracle import jax_oracle
from .testing import GRAD_NAMES, assert_close, make_inputs, random_cotangents

MEASUREMENTS = ("fwd", "fwd_bwd")
# What each timed program returns, in order.
QUANTITIES = {"fwd": ("o", "final_state"), "fwd_bwd": ("o", "final_state", *GRAD_NAMES)}


class MismatchError(Exception):
    """A timed quantity differs from the oracle, or a timed call from the verified one."""


@dataclasses.dataclass(frozen=True)
class InputSet:
    """One input set the bench times and verifies, in the preset's dtype."""

    index: int
    gates: str  # make_inputs gate mode
    args: tuple[jax.Array, ...]  # q, k, v, g, beta, s0 (s0 float32)
    cotangents: tuple[jax.Array, jax.Array]  # dO in the output dtype, dS float32
    scale: float
    kind: str = "input set"  # or "structured set": verified, never timed

    def call_args(self, measurement: str) -> tuple[jax.Array, ...]:
        """Arguments of the ``measurement`` program."""
        return self.args if measurement == "fwd" else (*self.args, *self.cotangents)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.index}, {self.gates} gates"


# Seed stream of the contract sets (the timed sets use stream 0).
CONTRACT_STREAM = 0xC0


def contract_sets(case: spec.Case, *, seed: int) -> list[InputSet]:
    """The structured input sets of ``spec.CONTRACT_GATES`` (verified, never timed)."""
    return input_sets(case, seed=seed, gates=spec.CONTRACT_GATES, stream=CONTRACT_STREAM)


def input_sets(
    case: spec.Case, *, seed: int, gates: tuple[str, ...] = spec.BENCH_GATES, stream: int = 0
) -> list[InputSet]:
    """One input set per gate mode, all derived from ``seed`` (distinct streams per set; ``stream``
    keeps the contract sets' draws apart from the timed sets')."""
    sets = []
    for i, mode in enumerate(gates):
        x = make_inputs(
            case, seed=[seed, i, stream] if stream else [seed, i], gates=mode, with_state=True
        )
        assert x.s0 is not None
        cotangents = random_cotangents(x, seed=[seed, i, 1, stream] if stream else [seed, i, 1])
        kind = "structured set" if stream else "input set"
        sets.append(InputSet(i, mode, (*x.arrays(), x.s0), cotangents, x.scale, kind))
    return sets


def abstract_args(case: spec.Case, measurement: str) -> tuple[jax.ShapeDtypeStruct, ...]:
    """Shapes and dtypes of the ``measurement`` program's arguments (what ``input_sets`` makes)."""
    B, T, H, K, V = case.B, case.T, case.H, case.K, case.V
    dt, f32 = jnp.dtype(case.dtype), jnp.dtype(jnp.float32)

    def sds(shape: tuple[int, ...], dtype: Any) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, dtype)

    args = (
        sds((B, T, H, K), dt),  # q
        sds((B, T, H, K), dt),  # k
        sds((B, T, H, V), dt),  # v
        sds((B, T, H), dt),  # g
        sds((B, T, H), dt),  # beta
        sds((B, H, K, V), f32),  # s0
    )
    if measurement == "fwd_bwd":
        args += (sds((B, T, H, V), dt), sds((B, H, K, V), f32))  # dO, dS
    return args


def expected_dtypes(measurement: str, dtype: str) -> tuple[str, ...]:
    """dtype of each returned quantity: the input's, except the float32 state and its gradient."""
    return tuple(
        "float32" if name in ("final_state", "ds0") else dtype for name in QUANTITIES[measurement]
    )


def tolerance(name: str, dtype: str) -> spec.Tol:
    if name in ("o", "final_state"):
        return spec.TOL_BENCH[dtype]
    if name in ("dg", "dbeta"):
        return spec.TOL_BENCH_GRAD_GATES[dtype]
    return spec.TOL_BENCH_GRAD[dtype]


# --- the oracle at the measured shape ---------------------------------------------------------


def segmented_oracle(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    g: jax.Array,
    beta: jax.Array,
    s0: jax.Array,
    *,
    scale: float,
    segment: int = spec.ORACLE_SEGMENT,
) -> tuple[jax.Array, jax.Array]:
    """``jax_oracle`` run over ``segment``-token pieces, carrying the state, each piece
    rematerialised under autodiff.

    The same steps in the same order as one ``jax_oracle`` call (padding tokens have g = 0 and
    beta = 0, which leave the state exactly unchanged), but the backward keeps ``T / segment +
    segment`` states instead of ``T``: at the TPU presets a plain ``lax.scan`` VJP would hold
    ``T`` copies of the ``[B, H, K, V]`` state (8.6 GB for qwen3next-like).
    """
    B, T, H, _ = q.shape
    n = -(-T // segment)
    pad = n * segment - T

    def split(x: jax.Array) -> jax.Array:  # [B, T, H, ...] -> [n, B, segment, H, ...]
        x = jnp.pad(x, [(0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 2))
        return jnp.moveaxis(x.reshape(B, n, segment, *x.shape[2:]), 1, 0)

    @jax.checkpoint
    def piece(state: jax.Array, xs: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        o, state = jax_oracle(*xs, scale=scale, initial_state=state)
        return state, o

    state, o = lax.scan(piece, s0.astype(jnp.float32), tuple(split(x) for x in (q, k, v, g, beta)))
    o = jnp.moveaxis(o, 0, 1).reshape(B, n * segment, H, -1)[:, :T]
    return o, state


def oracle_program(case: spec.Case, measurement: str) -> Any:
    """The oracle's answer to the ``measurement`` program, compiled from abstract shapes: the same
    arguments (upcast to float32), the same outputs in the same order, all float32."""
    scale = case.K**-0.5
    f32 = jnp.float32

    def forward(q, k, v, g, beta, s0):
        return segmented_oracle(q, k, v, g, beta, s0, scale=scale)

    def fwd(q, k, v, g, beta, s0):
        return forward(*(x.astype(f32) for x in (q, k, v, g, beta, s0)))

    def fwd_bwd(q, k, v, g, beta, s0, do, ds):
        args = tuple(x.astype(f32) for x in (q, k, v, g, beta, s0))
        out, vjp = jax.vjp(forward, *args)
        return (*out, *vjp((do.astype(f32), ds.astype(f32))))

    fn = fwd if measurement == "fwd" else fwd_bwd
    with jax.default_matmul_precision("highest"):
        return jax.jit(fn).lower(*abstract_args(case, measurement)).compile()


# --- comparisons ------------------------------------------------------------------------------


def compare(
    measurement: str,
    input_set: InputSet,
    got: tuple[jax.Array, ...],
    want: tuple[jax.Array, ...],
    *,
    dtype: str,
) -> dict[str, tuple[float, float]]:
    """``{quantity: (max_abs, rel_rms)}`` of a program's outputs against the oracle's; raises
    ``MismatchError`` naming the measurement, quantity and input set of the first failure."""
    names = QUANTITIES[measurement]
    if len(got) != len(names):
        raise MismatchError(f"{measurement} returned {len(got)} arrays, expected {len(names)}")
    results = {}
    for name, out, ref, want_dtype in zip(
        names, got, want[: len(names)], expected_dtypes(measurement, dtype), strict=True
    ):
        label = f"{measurement} {name} [{input_set.label}]"
        try:
            results[name] = assert_close(
                label, ref, out, tol=tolerance(name, dtype), dtype=want_dtype, log=None
            )
        except AssertionError as e:
            raise MismatchError(f"{e} (vs the fp32 oracle)") from None
    return results


# Host round trips in a compiled program: a callback can cache results across calls, and
# infeed/outfeed/send/recv can exchange data with a host thread.
_HOST_ROUND_TRIP = (
    re.compile(r'custom_call_target="[^"]*(callback|host)[^"]*"', re.IGNORECASE),
    re.compile(r"\s(infeed|outfeed|send|send-done|recv|recv-done)\("),
)


def host_round_trips(hlo_text: str) -> list[str]:
    """Lines of compiled HLO that leave the device for the host (empty for an honest kernel).

    Checked on the compiled program, not on the jaxpr: a custom primitive can lower to a host
    callback under a name no jaxpr check knows."""
    found = []
    for line in hlo_text.splitlines():
        if any(p.search(line) for p in _HOST_ROUND_TRIP):
            found.append(line.strip()[:200])
    return found
