"""The timing loop: warm-up, then timed calls alternating over input sets, outputs kept.

``perf_counter`` and ``monotonic_ns`` are bound when this module loads, before any kernel code, and
the guards check that nobody rebinds them here or in ``time``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
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
