"""The export step: the only process that runs the candidate's code.

    python -m <target module> export --platform cpu --requests FILE --out DIR [-- <target args>]

It puts the tree's source roots first on ``sys.path`` (so the tree's kernel wins over an installed
copy), builds every program of the request file (written by the harness's ``requests`` step,
:mod:`hillclimb_bench.planning`) with the kernel (:meth:`Target.build`) and writes each with
``jax.export`` into ``DIR`` with a manifest (:mod:`hillclimb_bench.programs`).

What reaches this process is the same for both arms of a comparison: the command line, the request
file, the environment; hillclimb gives each export a fresh tree of neutral name and an empty cache.
It changes no global state a kernel can read: source locations are left out of the programs by
``JAX_TRACEBACK_IN_LOCATIONS_LIMIT=0`` in the environment, which the harness sets for the kernel's
test suite too (so the same code exported from two checkouts gives the same bytes, and the harness
can tell a candidate that changed nothing). :func:`export_requests` is also what the suite's process
runs (:mod:`hillclimb_bench.witness`), so hillclimb can check that the program the tests' process
builds is the program that was exported.

Nothing this process says is evidence: its exit code and manifest only explain a failure to the
user. It still refuses what it can see going wrong, because that can only hurt the candidate: the
kernel imported from outside the tree under test (an installed copy would make both arms the same
program), or the kernel's import changing global state (``guards``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import guards, programs
from .errors import UsageError, VerificationError
from .programs import Request
from .target import Target, tuple_args

PLATFORMS = ("cpu", "tpu", "cuda", "rocm")
# Set by hillclimb for every process that runs candidate code (the export and the test suite alike).
LOCATIONS_ENV = "JAX_TRACEBACK_IN_LOCATIONS_LIMIT"


def parse(argv: Sequence[str], prog: str) -> argparse.Namespace:
    p = _Parser(prog=f"{prog} export", description="Export the target's programs (jax.export).")
    p.add_argument("--platform", choices=PLATFORMS, required=True)
    p.add_argument(
        "--requests", type=Path, required=True, help="the request file (the requests step's)"
    )
    p.add_argument("--out", type=Path, required=True, help="folder for the programs")
    return p.parse_args(list(argv))


def run(make_target: Any, argv: Sequence[str], target_args: Sequence[str], prog: str) -> int:
    try:
        args = parse(argv, prog)
        export(make_target, args, target_args)
    except UsageError as e:
        print(f"export: {e}", file=sys.stderr)
        return 2
    except VerificationError as e:
        print(f"export: failed: {e}", file=sys.stderr)
        return 1
    return 0


def export(make_target: Any, args: argparse.Namespace, target_args: Sequence[str]) -> None:
    root = Path.cwd().resolve()
    requests = programs.read_requests(args.requests)
    if os.environ.get(LOCATIONS_ENV) != "0":
        print(
            f"export: {LOCATIONS_ENV} is not 0: the programs carry source locations (paths and "
            "lines), so the same code exported from two trees gives different bytes",
            file=sys.stderr,
        )
    target: Target = make_target(list(target_args)) if callable(make_target) else make_target
    use_source_roots(target, root)
    before = guards.snapshot()
    exported, info = export_requests(target, requests, platform=args.platform)
    modules = kernel_origins(target, root)
    tampered = guards.changed(before)
    if tampered:
        raise VerificationError(
            "guards", "importing or tracing the kernel changed global state: " + "; ".join(tampered)
        )
    manifest = programs.write(
        args.out,
        exported,
        platform=args.platform,
        source={"tree": str(root), "kernel_modules": modules, "info": info},
    )
    print(
        f"export: {len(manifest['programs'])} program(s) for {args.platform} -> {args.out}",
        file=sys.stderr,
    )


def use_source_roots(target: Target, root: Path) -> None:
    """The tree's source roots first on ``sys.path``: the tree's kernel wins over any other copy."""
    for source_root in reversed(target.source_roots):
        folder = str((root / source_root).resolve())
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)


def export_requests(
    target: Target, requests: Sequence[Request], *, platform: str
) -> tuple[list[tuple[Request, Any]], dict[str, Any]]:
    """``[(request, jax.export.Exported)]`` of every request, and the target's informational
    ``export_info`` per key; raises VerificationError naming the program the kernel cannot build."""
    import jax

    exported: list[tuple[Request, Any]] = []
    info: dict[str, Any] = {}
    for request in requests:
        try:
            fn = target.build(request, platform=platform)
            exp = jax.export.export(jax.jit(fn), platforms=[platform])(*tuple_args(request.args))
            info[request.key] = target.export_info(request, fn)
        except (UsageError, VerificationError):
            raise
        except Exception as e:  # the kernel's failure to trace or lower: the candidate's fault
            raise VerificationError(
                request.key, f"could not be exported: {type(e).__name__}: {e}"
            ) from e
        exported.append((request, exp))
    return exported, info


def kernel_origins(target: Target, root: Path) -> dict[str, str]:
    """Where each of the target's kernel modules was imported from; raises unless every one was
    imported, from inside the tree under test."""
    origins: dict[str, str] = {}
    for name in target.kernel_modules:
        module = sys.modules.get(name)
        if module is None:
            raise VerificationError(
                name,
                "the export never imported it: the target's kernel_modules must name the "
                "package its build() imports",
            )
        where = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", [])), "")
        path = Path(where).resolve() if where else None
        if path is None or not path.is_relative_to(root):
            raise VerificationError(
                name,
                f"imported from {where or 'nowhere (a namespace without files)'}, outside the tree "
                f"under test ({root}): an installed copy would give both arms the same program. "
                "Uninstall it from the environment (pip uninstall), or list the folder holding "
                "the package in the target's source_roots (e.g. ('src',))",
            )
        origins[name] = str(path.relative_to(root))
    return origins


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def leave(code: int) -> None:
    """Exit without atexit handlers or finalizers (a kernel may have registered some)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
