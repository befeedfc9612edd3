"""The requests step: what an export will be asked for, decided where no candidate code runs.

    python -E -s -m <target module> requests --draw N --out FILE [-- <target args>]

hillclimb runs it in the verifier's tree (the harness without the kernel) before any export. It asks
the target for every program of the run's draw (:meth:`Target.requests`) and writes them as a
request file (:func:`hillclimb_bench.programs.request_document`): each program's key, shape
parameters and argument shapes, with the JAX versions of this environment. The export step then
reads that file and nothing else of the run: not the draw, not which programs are timed, not which
arm it serves. Both arms of a comparison get the same file, so an export has nothing to tell them
apart by.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import metrics, programs
from .errors import UsageError
from .target import Target


def parse(argv: Sequence[str], prog: str) -> argparse.Namespace:
    p = _Parser(prog=f"{prog} requests", description="Write the request file of a draw.")
    p.add_argument("--draw", type=int, required=True, help="the run's draw of gate shapes")
    p.add_argument("--out", type=Path, required=True, help="the request file to write")
    return p.parse_args(list(argv))


def run(make_target: Any, argv: Sequence[str], target_args: Sequence[str], prog: str) -> int:
    try:
        args = parse(argv, prog)
        doc = document(make_target, args.draw, target_args)
    except UsageError as e:
        print(f"requests: {e}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")  # as write_requests
    print(f"requests: {len(doc['requests'])} program(s) -> {args.out}", file=sys.stderr)
    return 0


def document(make_target: Any, draw: int, target_args: Sequence[str]) -> dict[str, Any]:
    import jax

    target: Target = make_target(list(target_args)) if callable(make_target) else make_target
    requests = target.requests(draw=draw)
    if not requests:
        raise UsageError("the target requests no programs")
    keys = [r.key for r in requests]
    if len(set(keys)) != len(keys):
        raise UsageError(f"the target requests a program twice: {sorted(keys)}")
    return programs.request_document(requests, target=target.name, versions=metrics.versions(jax))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)
