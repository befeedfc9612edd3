"""The witness: the programs the kernel's test suite's own process builds, beside the export's.

A pytest plugin hillclimb loads into the candidate's test suite (``PYTEST_PLUGINS``) with the
environment variable ``HILLCLIMB_WITNESS`` set to ``{"module", "args", "platform", "requests"}``.
Before any test runs, it builds every program of the request file exactly as the export step does
(:func:`hillclimb_bench.export.export_requests`), in this process, and records the sha256 of each
serialized program as a global property of the JUnit report (``hillclimb-witness``).

hillclimb compares those hashes with the programs the verifier read from the export. A kernel whose
program depends on how it is run — argv, paths, the environment, modules the export loads and the
suite does not — builds one program here and another there, and is refused by name: the code the
tests ran is not the program that would be timed. Like everything this process says, the report
is the candidate's word; the boundary is the verifier, which checks every correctness property the
suite knows on the exported bytes themselves (docs/security.md, "The measurement").
"""

from __future__ import annotations

import json
import os
import traceback
from pathlib import Path
from typing import Any

from . import command_line, export, programs

ENV = "HILLCLIMB_WITNESS"
PROPERTY = "hillclimb-witness"
SCHEMA_ID = "hillclimb.witness/v1"


def pytest_sessionstart(session: Any) -> None:
    spec = os.environ.get(ENV)
    config = session.config
    if not spec or hasattr(config, "workerinput"):  # only the main process of a pytest-xdist run
        return
    report = witness(json.loads(spec))
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is not None:
        xml.add_global_property(PROPERTY, json.dumps(report, sort_keys=True))


def witness(spec: dict[str, Any]) -> dict[str, Any]:
    """``{"programs": {key: sha256}, "errors": {key: why}}`` of the request file's programs, built
    in this process from the tree it runs in."""
    report: dict[str, Any] = {"schema": SCHEMA_ID, "platform": spec.get("platform"), "programs": {}}
    errors: dict[str, str] = {}
    try:
        root = Path.cwd().resolve()
        requests = programs.read_requests(root / str(spec["requests"]))
        make_target = command_line.target_of(str(spec["module"]))
        args = [str(a) for a in spec.get("args", [])]
        target = make_target(args) if callable(make_target) else make_target
        export.use_source_roots(target, root)
        for request in requests:
            try:
                [(_, exp)], _ = export.export_requests(
                    target, [request], platform=str(spec["platform"])
                )
                report["programs"][request.key] = programs.sha256(exp.serialize())
            except Exception as e:  # reported per program; the suite goes on
                errors[request.key] = f"{type(e).__name__}: {e}"[:500]
    except Exception as e:
        errors["*"] = "".join(traceback.format_exception_only(type(e), e)).strip()[:500]
    report["errors"] = errors
    return report


__all__ = ["ENV", "PROPERTY", "witness"]
