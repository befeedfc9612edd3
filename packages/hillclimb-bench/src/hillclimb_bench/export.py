"""The export step: the only process that runs the candidate's code.

    python -m <target module> export --platform cpu --draw N --out DIR [--only bench|gate]
        [-- <target args>]

It puts the tree's source roots first on ``sys.path`` (so the tree's kernel wins over an installed
copy), asks the target for every program (:meth:`Target.requests`), builds each with the kernel
(:meth:`Target.build`) and writes it with ``jax.export`` into ``DIR`` with a manifest
(:mod:`hillclimb_bench.programs`). Source locations are left out of the programs
(``jax_traceback_in_locations_limit = 0``), so the same code exported from two checkouts gives the
same bytes: the harness can tell a candidate that changed nothing.

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
from .target import PURPOSES, Target, tuple_args

PLATFORMS = ("cpu", "tpu", "cuda", "rocm")


def parse(argv: Sequence[str], prog: str) -> argparse.Namespace:
    p = _Parser(prog=f"{prog} export", description="Export the target's programs (jax.export).")
    p.add_argument("--platform", choices=PLATFORMS, required=True)
    p.add_argument("--draw", type=int, required=True, help="the run's draw of gate shapes")
    p.add_argument("--out", type=Path, required=True, help="folder for the programs")
    p.add_argument(
        "--only", choices=PURPOSES, default=None, help="export only the programs of one purpose"
    )
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
    import jax

    jax.config.update("jax_traceback_in_locations_limit", 0)
    target: Target = make_target(list(target_args)) if callable(make_target) else make_target
    for source_root in reversed(target.source_roots):
        folder = str((root / source_root).resolve())
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    before = guards.snapshot()
    requests = [
        r for r in target.requests(draw=args.draw) if args.only is None or r.purpose == args.only
    ]
    exported: list[tuple[Any, Any]] = []
    info: dict[str, Any] = {}
    for request in requests:
        try:
            fn = target.build(request, platform=args.platform)
            exp = jax.export.export(jax.jit(fn), platforms=[args.platform])(
                *tuple_args(request.args)
            )
            info[request.key] = target.export_info(request, fn)
        except (UsageError, VerificationError):
            raise
        except Exception as e:  # the kernel's failure to trace or lower: the candidate's fault
            raise VerificationError(
                request.key, f"could not be exported: {type(e).__name__}: {e}"
            ) from e
        exported.append((request, exp))
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
