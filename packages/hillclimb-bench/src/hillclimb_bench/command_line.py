"""The command line of a target module: ``python -m <module> export|verify … [-- target args]``.

A target module ends with::

    if __name__ == "__main__":
        hillclimb_bench.cli(make_target)   # or cli(TARGET) for a fixed target

``make_target(args)`` builds the target from the arguments after ``--`` (a preset, a model…).
Both steps leave through ``os._exit``: no ``atexit`` handler or finalizer that code in the process
registered runs afterwards.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import export as _export
from . import verify as _verify
from .errors import UsageError

USAGE = "usage: python -m <target module> export|verify [options] [-- target args]"


class ArgumentParser(argparse.ArgumentParser):
    """For a target's own arguments (after ``--``): a bad one is a :class:`UsageError` (one line,
    exit 2), not argparse's usage text and exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def cli(
    make_target: Callable[[list[str]], Any] | Any, argv: Sequence[str] | None = None
) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    prog = _program_name() if argv is None else "target"
    code = main(make_target, args, prog)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _program_name() -> str:
    """``python -m kernels.harness.programs`` for a module run with ``-m``, else the script."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return f"python -m {spec.name}" if spec is not None else Path(sys.argv[0]).name


def main(make_target: Any, args: list[str], prog: str = "target") -> int:
    """The exit code of ``export`` or ``verify`` run with ``args`` (no process exit)."""
    if not args or args[0] not in ("export", "verify"):
        print(USAGE, file=sys.stderr)
        return 2
    step, rest = args[0], args[1:]
    own, target_args = (
        (rest[: rest.index("--")], rest[rest.index("--") + 1 :]) if "--" in rest else (rest, [])
    )
    runner = _export.run if step == "export" else _verify.run
    return runner(make_target, own, target_args, prog)
