"""Tripwires against a kernel that tampers with its evaluator (protected).

The machinery is ``hillclimb_bench.guards`` (read its docstring for what is compared and what
cannot be seen); this module says what the gdn bench watches: the whole ``kernels.harness`` by
identity, ``spec`` and ``presets`` by value, and every other module loaded before ``kernels.gdn``
(whose own bindings are the kernel's business). The bench snapshots before importing the kernel
and compares after import, compile and timing.
"""

from __future__ import annotations

from typing import Any

from hillclimb_bench import guards as _guards

WATCH = _guards.Watch(
    harness=("kernels.harness",),
    data_modules=("kernels.harness.spec", "kernels.harness.presets"),
    own=("kernels.gdn",),
)


def snapshot() -> dict[str, Any]:
    """Identities and values the bench's guards compare, right now."""
    return _guards.snapshot(WATCH)


def changed(before: dict[str, Any]) -> list[str]:
    """Names whose identity or value differs from ``before``."""
    return _guards.changed(before, WATCH)
