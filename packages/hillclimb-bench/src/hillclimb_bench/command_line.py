"""The command line of a target module: ``python -m <module> requests|export|verify … [-- args]``.

A target module ends with::

    if __name__ == "__main__":
        hillclimb_bench.cli(make_target)   # or cli(TARGET) for a fixed target

``make_target(args)`` builds the target from the arguments after ``--`` (a preset, a model…).
Every step leaves through ``os._exit``: no ``atexit`` handler or finalizer that code in the process
registered runs afterwards. :func:`target_of` finds a module's ``make_target`` without running a
step (the witness, :mod:`hillclimb_bench.witness`).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import export as _export
from . import planning as _planning
from . import verify as _verify
from .errors import UsageError

USAGE = "usage: python -m <target module> requests|export|verify [options] [-- target args]"
STEPS = {"requests": _planning.run, "export": _export.run, "verify": _verify.run}
HELP = f"""{USAGE}

steps (each takes --help):
  requests  write the request file of a draw (runs without the kernel's code)
  export    import the kernel and write the requested programs with jax.export
  verify    verify and time exported programs (never imports the kernel)
"""


class _Found(BaseException):
    """Raised by :func:`cli` while :func:`target_of` runs a target module: carries its target."""

    def __init__(self, make_target: Any) -> None:
        super().__init__("target found")
        self.make_target = make_target


_finding = False


class ArgumentParser(argparse.ArgumentParser):
    """For a target's own arguments (after ``--``): a bad one is a :class:`UsageError` (one line,
    exit 2), not argparse's usage text and exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def cli(
    make_target: Callable[[list[str]], Any] | Any, argv: Sequence[str] | None = None
) -> NoReturn:
    if _finding:
        raise _Found(make_target)
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
    """The exit code of a step run with ``args`` (no process exit)."""
    if args[:1] in (["-h"], ["--help"]):  # asked for: the usage on stdout, and success
        print(HELP, end="")
        return 0
    if not args or args[0] not in STEPS:
        print(USAGE, file=sys.stderr)
        return 2
    step, rest = args[0], args[1:]
    own, target_args = (
        (rest[: rest.index("--")], rest[rest.index("--") + 1 :]) if "--" in rest else (rest, [])
    )
    return STEPS[step](make_target, own, target_args, prog)


def target_of(module: str) -> Any:
    """The ``make_target`` (or target) a target module hands to :func:`cli` when run as a program:
    the module runs as ``__main__`` (argv untouched) and its ``cli`` call returns it instead of
    running a step."""
    global _finding
    _finding = True
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=False)
    except _Found as found:
        return found.make_target
    finally:
        _finding = False
    raise UsageError(f"{module} never calls hillclimb_bench.cli(...) when run as a program")
