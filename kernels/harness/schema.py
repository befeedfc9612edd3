"""Metrics JSON contract: the schema file the engine reads and a small validator (protected).

The validator covers the JSON Schema (draft-07) keywords ``schemas/metrics.schema.json`` uses and
refuses any keyword it does not know, so a schema change cannot be silently ignored.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path
from typing import Any

from hillclimb_bench.metrics import SCHEMA_ID as SCHEMA_ID  # the one the documents carry

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "metrics.schema.json"

_ANNOTATIONS = {"$schema", "$id", "title", "description", "default", "examples", "$comment"}
_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def load_schema(path: Path = SCHEMA_PATH) -> dict[str, Any]:
    return json.loads(path.read_text())


def validate(instance: Any, schema: dict[str, Any] | None = None) -> list[str]:
    """Errors of ``instance`` against ``schema`` (the metrics schema by default); empty if valid."""
    root = load_schema() if schema is None else schema
    errors: list[str] = []
    _check(instance, root, root, "$", errors)
    return errors


def _is_type(x: Any, t: str) -> bool:
    if t == "integer":
        return isinstance(x, int) and not isinstance(x, bool)
    if t == "number":
        return isinstance(x, int | float) and not isinstance(x, bool)
    return isinstance(x, _TYPES[t])


def _check(x: Any, s: dict[str, Any], root: dict[str, Any], where: str, errors: list[str]) -> None:
    for key in s:
        if key in _ANNOTATIONS or key in _KEYWORDS:
            continue
        errors.append(f"{where}: schema keyword {key!r} is not supported by the validator")
    if "$ref" in s:
        ref = s["$ref"]
        if not ref.startswith("#/"):
            errors.append(f"{where}: only local $ref supported, got {ref!r}")
            return
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        _check(x, target, root, where, errors)
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(_is_type(x, t) for t in types):
            errors.append(f"{where}: {x!r} is not of type {types}")
            return
    if "const" in s and x != s["const"]:
        errors.append(f"{where}: {x!r} != const {s['const']!r}")
    if "enum" in s and x not in s["enum"]:
        errors.append(f"{where}: {x!r} not in {s['enum']}")
    if isinstance(x, str):
        if "minLength" in s and len(x) < s["minLength"]:
            errors.append(f"{where}: shorter than {s['minLength']}")
        if "pattern" in s and not re.search(s["pattern"], x):
            errors.append(f"{where}: does not match {s['pattern']!r}")
        if s.get("format") == "date-time":
            try:
                _dt.datetime.fromisoformat(x.replace("Z", "+00:00"))
            except ValueError:
                errors.append(f"{where}: {x!r} is not a date-time")
    if _is_type(x, "number"):
        if "minimum" in s and x < s["minimum"]:
            errors.append(f"{where}: {x} < minimum {s['minimum']}")
        if "maximum" in s and x > s["maximum"]:
            errors.append(f"{where}: {x} > maximum {s['maximum']}")
        if "exclusiveMinimum" in s and x <= s["exclusiveMinimum"]:
            errors.append(f"{where}: {x} <= exclusiveMinimum {s['exclusiveMinimum']}")
    if isinstance(x, list):
        if "minItems" in s and len(x) < s["minItems"]:
            errors.append(f"{where}: fewer than {s['minItems']} items")
        if "items" in s:
            for i, item in enumerate(x):
                _check(item, s["items"], root, f"{where}[{i}]", errors)
    if isinstance(x, dict):
        for req in s.get("required", []):
            if req not in x:
                errors.append(f"{where}: missing required {req!r}")
        if "minProperties" in s and len(x) < s["minProperties"]:
            errors.append(f"{where}: fewer than {s['minProperties']} properties")
        props = s.get("properties", {})
        extra = s.get("additionalProperties", True)
        for key, val in x.items():
            if key in props:
                _check(val, props[key], root, f"{where}.{key}", errors)
            elif extra is False:
                errors.append(f"{where}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                _check(val, extra, root, f"{where}.{key}", errors)


_KEYWORDS = {
    "$ref",
    "type",
    "const",
    "enum",
    "minLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "minItems",
    "items",
    "required",
    "minProperties",
    "properties",
    "additionalProperties",
    "definitions",
}
