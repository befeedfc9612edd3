"""The timing loop: warm-up, then timed calls alternating over input sets, outputs kept.

Every timed call is read on two clocks: the wall clock (``perf_counter``) and the process's CPU
time (``process_time_ns``: user and system time of all its threads). On a machine other work keeps
busy, a call the scheduler preempts takes longer on the wall but not in CPU time, which counts only
the time the process ran; on a process pinned to one core, whose threads cannot run in parallel,
CPU time is the wall time the call would take on a quiet machine. The caller picks the clock that
decides (``ArmTimes.on``) and keeps the other beside it.

The clocks are bound when this module loads, before any kernel code, and the guards check that
nobody rebinds them here or in ``time``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from time import monotonic_ns, perf_counter, perf_counter_ns, process_time_ns
from typing import Any, Literal

from .errors import VerificationError

Clock = Literal["wall", "cpu"]


def time_calls(
    name: str,
    fn: Callable[..., Any],
    sets: Sequence[tuple[Any, ...]],
    *,
    repeats: int,
    warmup: int,
    block: Callable[[Any], Any],
    keep: Collection[int] | None = None,
    on_warmup: Callable[[int, Any], None] | None = None,
) -> tuple[list[float], dict[int, Any]]:
    """Samples in ms of ``repeats`` calls of ``fn``, call ``r`` on ``sets[r % len(sets)]``, each
    ``block``-ed until its result is ready; and the outputs of the calls in ``keep`` (all calls
    when ``None``), referenced after the clock stopped for the caller to compare. ``warmup``
    untimed calls come first; ``on_warmup(set_index, output)`` may check each one.

    A call that raises is a :class:`VerificationError` naming ``name``, and so are samples that
    add up to more than the wall time around them (a clock that was tampered with)."""

    def call(args: tuple[Any, ...]) -> Any:
        try:
            return block(fn(*args))
        except Exception as e:  # the kernel's own failure is a failed check, not a crash
            raise VerificationError(name, f"raised {type(e).__name__}: {e}") from e

    for i in range(warmup):
        out = call(sets[i % len(sets)])
        if on_warmup is not None:
            on_warmup(i % len(sets), out)
    samples: list[float] = []
    kept: dict[int, Any] = {}
    wall0 = monotonic_ns()
    for r in range(repeats):
        args = sets[r % len(sets)]
        t0 = perf_counter()
        out = call(args)
        samples.append((perf_counter() - t0) * 1e3)
        if keep is None or r in keep:
            kept[r] = out
    wall_ms = (monotonic_ns() - wall0) / 1e6
    if sum(samples) > wall_ms * 1.01 + 0.5:
        raise VerificationError(
            name, f"timer mismatch: samples sum {sum(samples):.3f} ms > wall {wall_ms:.3f} ms"
        )
    return samples, kept


class ProgramCallError(VerificationError):
    """A timed call of ``arm``'s program raised: that arm's failure, not the session's."""

    def __init__(self, arm: str, quantity: str, detail: str) -> None:
        super().__init__(quantity, detail)
        self.arm = arm


@dataclass
class ArmTimes:
    """One arm's timed calls, in ms, on both clocks, in the order they ran."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def on(self, clock: Clock) -> list[float]:
        return self.cpu if clock == "cpu" else self.wall


def cores_allowed() -> int:
    """How many cores this process may run on: its threads' CPU time can add up that fast."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def time_interleaved(
    name: str,
    programs: Mapping[str, Callable[..., Any]],
    sets: Mapping[str, Sequence[tuple[Any, ...]]],
    *,
    repeats: int,
    warmup: int,
    block: Callable[[Any], Any],
    keep: Mapping[str, Collection[int]],
) -> tuple[dict[str, ArmTimes], dict[str, dict[int, Any]]]:
    """Time several programs (the arms of a comparison) call by call in this process.

    ``programs`` maps an arm to its program, in the order of the first pair; each later pair
    reverses the order of the one before (A B, B A, A B, …), so neither arm always runs right after
    the other. Call ``r`` of an arm runs on ``sets[arm][r % len(sets[arm])]``. ``warmup`` untimed
    calls per arm come first, interleaved the same way. Returns each arm's times on both clocks and
    the outputs of the calls in ``keep[arm]``, for the caller to compare after the clock stopped.

    Samples that add up to more than the wall time around them (more than the wall time times the
    cores it may use, for CPU time) are a clock that was tampered with: a ``VerificationError``."""
    order = list(programs)

    def call(arm: str, args: tuple[Any, ...]) -> Any:
        try:
            return block(programs[arm](*args))
        except Exception as e:  # the program's own failure is a failed check, not a crash
            raise ProgramCallError(arm, f"{name} [{arm}]", f"raised {type(e).__name__}: {e}") from e

    for i in range(warmup):
        for arm in order if i % 2 == 0 else order[::-1]:
            call(arm, sets[arm][i % len(sets[arm])])
    times = {arm: ArmTimes() for arm in order}
    kept: dict[str, dict[int, Any]] = {arm: {} for arm in order}
    wall0 = monotonic_ns()
    for r in range(repeats):
        for arm in order if r % 2 == 0 else order[::-1]:
            args = sets[arm][r % len(sets[arm])]
            c0, t0 = process_time_ns(), perf_counter_ns()
            out = call(arm, args)
            t1, c1 = perf_counter_ns(), process_time_ns()
            times[arm].wall.append((t1 - t0) / 1e6)
            times[arm].cpu.append((c1 - c0) / 1e6)
            if r in keep.get(arm, ()):
                kept[arm][r] = out
    wall_ms = (monotonic_ns() - wall0) / 1e6
    for clock, most in (("wall", wall_ms), ("cpu", wall_ms * cores_allowed())):
        total = sum(sum(t.on(clock)) for t in times.values())
        if total > most * 1.01 + 0.5:
            raise VerificationError(
                name, f"timer mismatch: {clock} samples sum {total:.3f} ms > {most:.3f} ms"
            )
    return times, kept
