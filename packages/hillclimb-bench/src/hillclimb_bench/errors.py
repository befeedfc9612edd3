"""The two ways a bench ends early: bad arguments, or a kernel that failed a check."""

from __future__ import annotations


class UsageError(Exception):
    """Bad arguments (exit 2)."""


class VerificationError(Exception):
    """A callable's output failed a check (exit 1). ``quantity`` names it, e.g. ``fwd.out``."""

    def __init__(self, quantity: str, detail: str) -> None:
        super().__init__(f"{quantity}: {detail}")
        self.quantity = quantity
