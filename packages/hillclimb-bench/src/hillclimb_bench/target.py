"""What a target tells the harness: which programs to export, and how to verify each.

A target is protected code (the harness of a repository). It runs in two processes that never
meet:

- the **export** step (:mod:`hillclimb_bench.export`) imports the kernel through
  :meth:`Target.build` and writes each requested program with ``jax.export``. That process runs
  the candidate's code, so nothing it says is believed: only the programs it wrote are read, as
  data.
- the **verifier** (:mod:`hillclimb_bench.verify`) never imports the kernel (it checks
  :attr:`Target.kernel_modules` are absent from ``sys.modules``). It calls :meth:`Target.requests`
  to know what it must receive, :meth:`Target.verify` to check each program against the target's
  reference on inputs drawn from a seed only it knows, and times exactly the programs it verified.

So a target's module must not import its kernel at import time, only inside ``build``.

:class:`Kernel` is a complete target for the common case (inputs, a reference and a tolerance);
the gdn and matmul targets of hillclimb subclass :class:`Target` directly.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .errors import UsageError, VerificationError
from .programs import Request, tuple_args

PURPOSES = ("bench", "gate")


@dataclasses.dataclass(frozen=True)
class Verified:
    """What :meth:`Target.verify` established about one program.

    ``sets``: the ``(label, args)`` input sets the program was verified on, which timed calls
    alternate over; ``outputs``: the verified output leaves on each set (timed outputs must equal
    them bit for bit); ``names``: the quantity each leaf is; ``errors``: the worst
    ``{"max_abs", "rel_rms"}`` per quantity; ``details``: target-specific facts for its metrics;
    ``structured``: labels of the structured input sets the program was also verified on (the
    kernel's correctness contract beyond random inputs: :attr:`Kernel.structured_inputs`), which
    timed calls never use.
    """

    sets: Sequence[tuple[str, tuple[Any, ...]]]
    outputs: Sequence[tuple[Any, ...]]
    names: Sequence[str]
    errors: Mapping[str, Mapping[str, float]]
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    structured: Sequence[str] = ()


@dataclasses.dataclass(frozen=True)
class Work:
    """Work of one call: FLOPs by the target's convention (MFU needs them), tokens (for
    ``tokens_per_s``), and optionally the FLOPs the implementation really executes."""

    flops: float | None = None
    tokens: int = 0
    executed_flops: float | None = None


class Target:
    """The base of a target; override the attributes and methods marked *override*.

    Attributes: ``name`` (the metrics' ``target``), ``impl``, ``preset``, ``dtype``;
    ``kernel_modules``: the packages of the code under test (``("kernels.gdn",)``), which the
    export must import from the tree under test and the verifier must never import;
    ``source_roots``: folders of the tree put first on ``sys.path`` by the export (``("src",)``
    for a src layout), so the tree's copy wins over any installed one; ``pallas``: on a TPU, every
    timed program must run a Mosaic kernel (a plain XLA stand-in is refused).
    """

    name: str
    kernel_modules: tuple[str, ...]
    impl: str = "default"
    preset: str = "default"
    dtype: str = "float32"
    source_roots: tuple[str, ...] = (".",)
    pallas: bool = False

    def requests(self, *, draw: int) -> list[Request]:
        """*Override.* Every program to export: the timed ones (purpose ``bench``) and the
        correctness matrix (``gate``), whose drawn shapes come from ``draw`` (a number the
        harness picks per run, so no candidate can prepare for them)."""
        raise NotImplementedError

    def build(self, request: Request, *, platform: str) -> Callable[..., Any]:
        """*Override* (export side only). The function to export for ``request`` on ``platform``
        (``cpu`` means Pallas interpret mode): import the kernel here, never at module level."""
        raise NotImplementedError

    def verify(self, request: Request, program: Callable[..., Any], *, seed: int) -> Verified:
        """*Override* (verifier side). Check ``program`` (the compiled export) against the
        reference on inputs drawn from ``seed``; raise :class:`VerificationError` naming the
        quantity and the input set on a mismatch.

        The exported program is the only thing that counts: whatever the kernel's own test suite
        checks (invariants, repeated or correlated inputs, extreme values) must be checked here
        too, on these bytes, or a kernel can pass its suite with one program and ship another.
        List those sets in :attr:`Verified.structured`."""
        raise NotImplementedError

    def work(self, request: Request, info: Mapping[str, Any]) -> Work:
        """The work of one call of a timed program (no FLOPs: no MFU). ``info`` is what the
        export reported of it (:meth:`export_info`): the candidate's words, so use it only for
        informational figures (``executed_flops``), never for ``flops``."""
        return Work()

    def shapes(self) -> dict[str, Any]:
        """The metrics' ``shapes``: the timed problem, in the target's own words."""
        return {"case": self.preset}

    def export_info(self, request: Request, fn: Callable[..., Any]) -> dict[str, Any]:
        """Export side: facts about the traced function worth recording (the chunk it chose…).
        Informational: the verifier never decides on them."""
        return {}

    def document(self, verified: Mapping[str, Verified], info: Mapping[str, Any]) -> dict[str, Any]:
        """Extra top-level parts of the metrics (``notes``, a ``model`` section, ``shapes``
        overrides); ``info`` is the export's informational record per program key (the
        candidate's words: label what you take from it)."""
        return {}

    # -- helpers --------------------------------------------------------------------------------

    def timed(self, requests: Sequence[Request]) -> list[Request]:
        return [r for r in requests if r.purpose == "bench"]


# --- the common case: a kernel, a reference, a tolerance --------------------------------------


Shape = Mapping[str, Any]
MakeInputs = Callable[[np.random.Generator, Shape], tuple[Any, ...]]


@dataclasses.dataclass(frozen=True)
class Program:
    """One measured function of a :class:`Kernel`.

    ``kernel(shape)`` returns the function to export (export side; import the kernel inside it);
    ``reference(*inputs)`` the trusted result (same structure: an array, a tuple/list or a dict of
    arrays; computed on the host in float64 or by a trusted JAX program); each output array must
    have the reference's shape, be finite and be within ``rel_rms_tol`` relative RMS error.
    ``make_inputs(rng, shape)`` overrides the kernel's for this program (e.g. cotangents of a
    backward). ``flops(shape)`` / ``tokens(shape)`` per call, by your convention.
    ``structured_inputs`` overrides the kernel's for this program (see :class:`Kernel`).
    """

    kernel: Callable[[Shape], Callable[..., Any]]
    reference: Callable[..., Any]
    rel_rms_tol: float
    make_inputs: Callable[[np.random.Generator, Shape], tuple[Any, ...]] | None = None
    flops: Callable[[Shape], float] | None = None
    tokens: Callable[[Shape], int] | None = None
    structured_inputs: Mapping[str, MakeInputs] | None = None


@dataclasses.dataclass(frozen=True)
class Kernel(Target):
    """A complete target from a description (see the package README for an example).

    ``programs``: ``{measurement: Program}``; ``make_inputs(rng, shape)``: one input set;
    ``bench``: the timed shape; ``gate``: fixed shapes verified by the correctness gate;
    ``draw(rng)``: a shape drawn per run for the gate (``draws`` of them), so a kernel cannot be
    special-cased to the listed shapes; ``input_sets``: sets verified (and alternated when timed)
    per program; ``kernel_modules``/``source_roots``: see :class:`Target`.

    ``structured_inputs``: ``{label: make(rng, shape)}``, input sets of a known structure the
    kernel must get right beyond random ones (what its own tests check: repeated or correlated
    rows, zeros, extreme magnitudes, the invariants' special values). Every program is verified on
    each of them against the reference, at every shape, exported bytes only; timed calls never use
    them. A kernel that is right on random inputs only (a truncated series, a skipped rescale) is
    refused here even when the code its suite ran was another.
    """

    name: str
    programs: Mapping[str, Program]
    make_inputs: Callable[[np.random.Generator, Shape], tuple[Any, ...]]
    bench: Shape
    kernel_modules: tuple[str, ...]
    dtype: str = "float32"
    impl: str = "default"
    preset: str = "default"
    gate: Sequence[Shape] = ()
    draw: Callable[[np.random.Generator], Shape] | None = None
    draws: int = 2
    input_sets: int = 2
    source_roots: tuple[str, ...] = (".",)
    structured_inputs: Mapping[str, MakeInputs] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.programs:
            raise UsageError("Kernel: programs is empty; name at least one, e.g. {'fwd': ...}")
        if not self.kernel_modules:
            raise UsageError(
                "Kernel: kernel_modules is empty; name the package(s) of the code under test, "
                "e.g. ('mypkg',), so the verifier can prove it never imported them"
            )
        if not self.bench:
            raise UsageError('Kernel: bench is empty; name the timed shape, e.g. {"n": 4096}')
        for name, p in self.programs.items():
            if not p.rel_rms_tol >= 0:
                raise UsageError(f"Kernel: programs[{name!r}].rel_rms_tol must be >= 0")
        if self.input_sets < 1 or self.draws < 0:
            raise UsageError(f"Kernel: need input_sets >= 1 and draws >= 0 ({self.input_sets=})")

    def requests(self, *, draw: int) -> list[Request]:
        shapes: list[tuple[str, Shape]] = [("bench", self.bench)]
        shapes += [("gate", s) for s in self.gate]
        if self.draw is not None:
            rng = np.random.default_rng([draw, 0x6A7E])
            shapes += [("gate", self.draw(rng)) for _ in range(self.draws)]
        out: list[Request] = []
        seen: set[str] = set()
        for purpose, shape in shapes:
            case = case_id(shape)
            for name in self.programs:
                key = f"{name}@{case}"
                if key in seen:  # a drawn shape equal to a listed one is exported once
                    continue
                seen.add(key)
                args = self._abstract_args(name, shape)
                out.append(Request(name, case, purpose, args, dict(shape)))
        return out

    def _inputs(self, name: str, rng: np.random.Generator, shape: Shape) -> tuple[Any, ...]:
        make = self.programs[name].make_inputs or self.make_inputs
        return tuple(make(rng, shape))

    def _abstract_args(self, name: str, shape: Shape) -> tuple[Any, ...]:
        import jax

        example = self._inputs(name, np.random.default_rng(0), shape)
        return tuple(jax.ShapeDtypeStruct(np.shape(x), _dtype(x)) for x in example)

    def build(self, request: Request, *, platform: str) -> Callable[..., Any]:
        return self.programs[request.name].kernel(request.params)

    def verify(self, request: Request, program: Callable[..., Any], *, seed: int) -> Verified:
        import jax

        p = self.programs[request.name]
        sets = []
        outputs = []
        names: list[str] = []
        errors: dict[str, dict[str, float]] = {}
        for i in range(self.input_sets):
            rng = np.random.default_rng([seed, i])
            args = tuple(jax.device_put(x) for x in self._inputs(request.name, rng, request.params))
            label = f"input set {i} [{request.case}]"
            try:
                out = jax.block_until_ready(program(*args))
            except Exception as e:
                raise VerificationError(request.name, f"raised {type(e).__name__}: {e}") from e
            ref = p.reference(*(np.asarray(x) for x in args))
            for q, e in compare(request.name, out, ref, p.rel_rms_tol, where=label).items():
                worst = errors.get(q)
                if worst is None or e["rel_rms"] > worst["rel_rms"]:
                    errors[q] = e
            leaves = named_leaves(out, request.name)
            names = [q for q, _ in leaves]
            sets.append((label, args))
            outputs.append(tuple(a for _, a in leaves))
        structured = self._structured(request.name)
        for i, (label, make) in enumerate(sorted(structured.items())):
            rng = np.random.default_rng([seed, 0x5E7, i])
            args = tuple(jax.device_put(x) for x in make(rng, request.params))
            where = f"{label} inputs [{request.case}]"
            try:
                out = jax.block_until_ready(program(*args))
            except Exception as e:
                raise VerificationError(request.name, f"raised {type(e).__name__}: {e}") from e
            ref = p.reference(*(np.asarray(x) for x in args))
            for q, e in compare(request.name, out, ref, p.rel_rms_tol, where=where).items():
                worst = errors.get(q)
                if worst is None or e["rel_rms"] > worst["rel_rms"]:
                    errors[q] = e
        return Verified(sets, outputs, names, errors, structured=sorted(structured))

    def _structured(self, name: str) -> Mapping[str, MakeInputs]:
        own = self.programs[name].structured_inputs
        if own is not None:
            return own
        return self.structured_inputs if self.programs[name].make_inputs is None else {}

    def work(self, request: Request, info: Mapping[str, Any]) -> Work:
        p = self.programs[request.name]
        return Work(
            flops=None if p.flops is None else float(p.flops(request.params)),
            tokens=0 if p.tokens is None else int(p.tokens(request.params)),
        )

    def shapes(self) -> dict[str, Any]:
        return dict(self.bench)


def case_id(shape: Shape) -> str:
    """``rows8-cols128``: a shape's name in program keys and JUnit-like reports."""
    return "-".join(f"{k}{v}" for k, v in shape.items()) or "default"


def _dtype(x: Any) -> Any:
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def named_leaves(out: Any, name: str) -> list[tuple[str, Any]]:
    """``(quantity, array)`` of every array in ``out``; dicts in sorted key order, quantities
    named ``<name>.<key or index>…``."""
    if isinstance(out, dict):
        return [leaf for k in sorted(out) for leaf in named_leaves(out[k], f"{name}.{k}")]
    if isinstance(out, tuple | list):
        return [leaf for i, x in enumerate(out) for leaf in named_leaves(x, f"{name}.{i}")]
    return [(name, out)]


def compare(
    name: str, outs: Any, refs: Any, tol: float, *, where: str = ""
) -> dict[str, dict[str, float]]:
    """Relative RMS error of each output array against the reference (both in float64); raises
    :class:`VerificationError` on a structure, shape or finiteness mismatch or an error over
    ``tol``, naming the quantity and ``where``."""
    got, want = named_leaves(outs, name), named_leaves(refs, name)
    at = f" [{where}]" if where else ""
    if [q for q, _ in got] != [q for q, _ in want]:
        raise VerificationError(
            name, f"returns {[q for q, _ in got]}, the reference {[q for q, _ in want]}{at}"
        )
    errors: dict[str, dict[str, float]] = {}
    for (q, a), (_, b) in zip(got, want, strict=True):
        x, y = np.asarray(a), np.asarray(b)
        if x.shape != y.shape:
            raise VerificationError(q, f"shape {x.shape}, the reference's is {y.shape}{at}")
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        if not np.all(np.isfinite(x64)):
            raise VerificationError(q, f"not finite (nan or inf){at}")
        diff = x64 - y64
        max_abs = float(np.max(np.abs(diff))) if diff.size else 0.0
        norm = math.sqrt(float(np.mean(y64**2))) if y64.size else 0.0
        rms = math.sqrt(float(np.mean(diff**2))) if diff.size else 0.0
        rel = rms / norm if norm > 0 else rms
        if not rel <= tol:
            raise VerificationError(
                q, f"rel_rms {rel:.3e} > tolerance {tol:.3e} (max_abs {max_abs:.3e}){at}"
            )
        errors[q] = {"max_abs": max_abs, "rel_rms": rel}
    return errors


__all__ = [
    "PURPOSES",
    "Kernel",
    "Program",
    "Request",
    "Shape",
    "Target",
    "Verified",
    "Work",
    "case_id",
    "compare",
    "named_leaves",
    "tuple_args",
]
