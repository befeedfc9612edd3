"""TPU-rules lint over what is really built (protected).

Pallas interpret mode (how the kernels run on CPU) enforces none of the Mosaic TPU rules, so this
lint is the CPU-side guard: it traces a function with ``jax.make_jaxpr``, finds every
``pallas_call`` equation anywhere in it (inside jit, custom_vjp, scans, ...) and checks

- the call is named (``name=`` matching ``spec.KERNEL_NAME_PATTERN``) and sits in a
  ``jax.named_scope`` that mentions ``gdn``;
- every input and output block: rank >= 1, and the last two block dims are multiples of
  (8, 128) or equal to the array dims;
- TPU ``dimension_semantics`` are given for every grid axis, and a kernel with scratch (state
  carried across grid steps) runs its last grid axis as ``"arbitrary"``;
- a ``CostEstimate`` is attached;
- the kernel body (recursively) contains none of ``spec.FORBIDDEN_KERNEL_PRIMITIVES`` and no 64-bit
  values.

Checking the traced jaxpr (not the source) means a helper rename or an indirection cannot dodge it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.extend as jex
import numpy as np

from . import spec


@dataclasses.dataclass(frozen=True)
class Violation:
    kernel: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.kernel}: {self.detail}"


@dataclasses.dataclass(frozen=True)
class PallasCallInfo:
    """What the lint saw of one ``pallas_call`` equation."""

    name: str | None
    name_stack: str
    grid: tuple[int, ...]
    blocks: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...]  # (role, block, array)
    dimension_semantics: tuple[str, ...] | None
    num_scratch: int
    has_cost_estimate: bool
    interpret: Any
    kernel_primitives: frozenset[str]
    has_64bit: bool


def iter_eqns(jaxpr: jex.core.Jaxpr) -> Iterator[jex.core.JaxprEqn]:
    """Every equation of ``jaxpr`` and of all jaxprs nested in its equations' params."""
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in jex.core.jaxprs_in_params(eqn.params):
            yield from iter_eqns(sub)


def _block_dims(block_shape: tuple[Any, ...]) -> tuple[int, ...]:
    dims = []
    for d in block_shape:
        if isinstance(d, int):
            dims.append(d)
        elif type(d).__name__ == "Squeezed" or d is None:
            dims.append(1)
        elif hasattr(d, "block_size"):
            dims.append(int(d.block_size))
        else:  # Element / BoundedSlice / dynamic: not something this kernel family should use
            dims.append(-1)
    return tuple(dims)


def _semantics(compiler_params: Any) -> tuple[str, ...] | None:
    if compiler_params is None:
        return None
    params = compiler_params
    if isinstance(params, dict):  # older JAX: {"mosaic": {...}} or {"mosaic_tpu": ...}
        params = next(iter(params.values()), None)
    sem = getattr(params, "dimension_semantics", None)
    if sem is None and isinstance(params, dict):
        sem = params.get("dimension_semantics")
    if sem is None:
        return None
    return tuple(str(getattr(s, "value", s)).lower().split(".")[-1] for s in sem)


def describe(eqn: jex.core.JaxprEqn) -> PallasCallInfo:
    """Summarise one ``pallas_call`` equation."""
    p = eqn.params
    gm = p["grid_mapping"]
    n_in, n_out = gm.num_inputs, gm.num_outputs
    blocks = []
    for i, bm in enumerate(gm.block_mappings):
        role = f"in[{i}]" if i < n_in else f"out[{i - n_in}]"
        blocks.append((role, _block_dims(tuple(bm.block_shape)), tuple(bm.array_aval.shape)))
    del n_out
    kernel_jaxpr = p["jaxpr"]
    prims = set()
    has_64 = False
    for e in iter_eqns(kernel_jaxpr):
        prims.add(e.primitive.name)
        for var in e.outvars:
            dt = getattr(getattr(var, "aval", None), "dtype", None)
            if dt is not None and np.dtype(dt).itemsize == 8 and np.dtype(dt).kind in "fiuc":
                has_64 = True
    name = p.get("name")
    if name is None and "name_and_src_info" in p:  # older JAX
        name = getattr(p["name_and_src_info"], "name", None)
    return PallasCallInfo(
        name=name,
        name_stack=str(eqn.source_info.name_stack),
        grid=tuple(gm.grid),
        blocks=tuple(blocks),
        dimension_semantics=_semantics(p.get("compiler_params")),
        num_scratch=int(gm.num_scratch_operands),
        has_cost_estimate=p.get("cost_estimate") is not None,
        interpret=p.get("interpret"),
        kernel_primitives=frozenset(prims),
        has_64bit=has_64,
    )


def find_pallas_calls(fn: Callable[..., Any], *args: Any) -> list[PallasCallInfo]:
    """Trace ``fn(*args)`` (nothing is compiled or run) and describe every ``pallas_call``."""
    closed = jax.make_jaxpr(fn)(*args)
    return [describe(e) for e in iter_eqns(closed.jaxpr) if e.primitive.name == "pallas_call"]


def check_call(info: PallasCallInfo) -> list[Violation]:
    """All rule violations of one ``pallas_call``."""
    label = info.name or "<unnamed pallas_call>"
    out: list[Violation] = []
    if info.name is None or not re.match(spec.KERNEL_NAME_PATTERN, info.name):
        out.append(
            Violation(label, "name", f"name={info.name!r} must match {spec.KERNEL_NAME_PATTERN}")
        )
    scopes = [s for s in info.name_stack.split("/") if s]
    if info.name and scopes and scopes[-1] == info.name:
        scopes = scopes[:-1]  # pallas_call pushes its own name; a named_scope must be outside it
    if not any("gdn" in s for s in scopes):
        out.append(
            Violation(label, "named_scope", f"no jax.named_scope with 'gdn' ({info.name_stack!r})")
        )
    for role, block, array in info.blocks:
        if len(block) == 0:
            out.append(Violation(label, "block_rank", f"{role}: rank-0 block on array {array}"))
            continue
        if any(d < 0 for d in block):
            out.append(Violation(label, "block_kind", f"{role}: unsupported block dims {block}"))
            continue
        tiles = (spec.TPU_SUBLANES, spec.TPU_LANES)
        for axis, tile in zip((-2, -1), tiles, strict=True):
            if len(block) < -axis:
                continue
            b, a = block[axis], array[axis]
            if b != a and b % tile != 0:
                out.append(
                    Violation(
                        label,
                        "block_shape",
                        f"{role}: block {block} on array {array}: dim {axis} = {b} is neither a "
                        f"multiple of {tile} nor the full dim {a}",
                    )
                )
    sem = info.dimension_semantics
    if sem is None or len(sem) != len(info.grid):
        out.append(
            Violation(
                label,
                "dimension_semantics",
                f"dimension_semantics {sem} must name every axis of grid {info.grid}",
            )
        )
    elif info.num_scratch and info.grid and sem[-1] != "arbitrary":
        out.append(
            Violation(
                label,
                "dimension_semantics",
                f"kernel carries scratch across grid steps but its last axis is {sem[-1]!r}, "
                "not 'arbitrary'",
            )
        )
    if not info.has_cost_estimate:
        out.append(Violation(label, "cost_estimate", "no pl.CostEstimate attached"))
    bad = sorted(info.kernel_primitives & spec.FORBIDDEN_KERNEL_PRIMITIVES)
    if bad:
        out.append(Violation(label, "forbidden_primitive", f"kernel body uses {bad}"))
    if info.has_64bit:
        out.append(Violation(label, "dtype", "kernel body has 64-bit values"))
    return out


def lint(fn: Callable[..., Any], *args: Any, min_calls: int = 1) -> list[Violation]:
    """Trace ``fn(*args)`` and return every violation; too few ``pallas_call`` s is one too."""
    infos = find_pallas_calls(fn, *args)
    out = [v for info in infos for v in check_call(info)]
    if len(infos) < min_calls:
        out.append(
            Violation(
                "<trace>",
                "pallas_calls",
                f"found {len(infos)} pallas_call(s), expected >= {min_calls}",
            )
        )
    return out
