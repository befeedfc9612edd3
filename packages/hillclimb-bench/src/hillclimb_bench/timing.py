"""The timing loop: warm-up, then timed calls alternating over input sets, outputs kept.

``perf_counter`` and ``monotonic_ns`` are bound when this module loads, before any kernel code, and
the guards check that nobody rebinds them here or in ``time``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from time import monotonic_ns, perf_counter
from typing import Any

from .errors import VerificationError


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


def time_interleaved(
    name: str,
    programs: Mapping[str, Callable[..., Any]],
    sets: Mapping[str, Sequence[tuple[Any, ...]]],
    *,
    repeats: int,
    warmup: int,
    block: Callable[[Any], Any],
    keep: Mapping[str, Collection[int]],
) -> tuple[dict[str, list[float]], dict[str, dict[int, Any]]]:
    """Time several programs (the arms of a comparison) call by call in this process.

    ``programs`` maps an arm to its program, in the order of the first pair; each later pair
    reverses the order of the one before (A B, B A, A B, …), so neither arm always runs right after
    the other. Call ``r`` of an arm runs on ``sets[arm][r % len(sets[arm])]``. ``warmup`` untimed
    calls per arm come first, interleaved the same way. Returns the samples in ms per arm and the
    outputs of the calls in ``keep[arm]``, for the caller to compare after the clock stopped."""
    order = list(programs)

    def call(arm: str, args: tuple[Any, ...]) -> Any:
        try:
            return block(programs[arm](*args))
        except Exception as e:  # the program's own failure is a failed check, not a crash
            raise ProgramCallError(arm, f"{name} [{arm}]", f"raised {type(e).__name__}: {e}") from e

    for i in range(warmup):
        for arm in order if i % 2 == 0 else order[::-1]:
            call(arm, sets[arm][i % len(sets[arm])])
    samples: dict[str, list[float]] = {arm: [] for arm in order}
    kept: dict[str, dict[int, Any]] = {arm: {} for arm in order}
    wall0 = monotonic_ns()
    for r in range(repeats):
        for arm in order if r % 2 == 0 else order[::-1]:
            args = sets[arm][r % len(sets[arm])]
            t0 = perf_counter()
            out = call(arm, args)
            samples[arm].append((perf_counter() - t0) * 1e3)
            if r in keep.get(arm, ()):
                kept[arm][r] = out
    wall_ms = (monotonic_ns() - wall0) / 1e6
    total = sum(sum(s) for s in samples.values())
    if total > wall_ms * 1.01 + 0.5:
        raise VerificationError(
            name, f"timer mismatch: samples sum {total:.3f} ms > wall {wall_ms:.3f} ms"
        )
    return samples, kept
