"""Exported programs: what the export step writes and what the verifier believes of it.

The export step runs the candidate's code and writes one ``jax.export`` serialization per requested
program, plus ``manifest.json`` listing them. Everything in that folder is the candidate's words.
The verifier (:mod:`hillclimb_bench.verify`) reads only the files its own request list names, hashes
the bytes it read, and refuses a program that is not a pure, single-device computation of the
requested arguments on the verifier's platform:

- the serialization must deserialize, for exactly one platform (the verifier's), one device, with
  no effects;
- its argument and result trees, shapes and dtypes must be the requested ones;
- every operation must be a StableHLO (VHLO) operation; host round trips (``rng`` with XLA's
  per-program state, infeed, outfeed, send, recv) are refused, and a ``custom_call`` must name a
  target on the platform's allowlist (:data:`CUSTOM_CALLS`), have no side effect, and match that
  target's documented signature (:mod:`hillclimb_bench.signatures`: shapes, dtypes, the in-place
  alias, its options), so no native routine writes past a buffer the program sized. A host
  callback's target is not on any list: a deserialized callback would run whatever the exporting
  process left behind, or crash.

The file name of a program is derived from its request (:func:`file_name`), never from the
manifest, so a manifest cannot point the verifier at another file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import signatures
from .errors import VerificationError

SCHEMA_ID = "hillclimb.programs/v1"
MANIFEST = "manifest.json"
SUFFIX = ".jaxexport"
# Caps on what the verifier reads from the export's folder.
MAX_PROGRAM_BYTES = 256 << 20
MAX_MANIFEST_BYTES = 4 << 20

# custom_call targets a verified program may contain, per platform, and why each is safe:
# - tpu_custom_call: a Mosaic kernel (what Pallas lowers to on a TPU). It runs on the TensorCore
#   and has no way to reach the host.
# - LAPACK (CPU) and cuSOLVER/cuBLAS-lt style linear algebra are pure functions of their operands;
#   JAX guarantees their serialization (``jax.export``'s stable list). A kernel rarely needs them,
#   the XLA implementations of a reference might.
CUSTOM_CALLS: dict[str, frozenset[str]] = {
    "tpu": frozenset({"tpu_custom_call"}),
    "cpu": frozenset(
        {
            "lapack_sgeqrf_ffi",
            "lapack_dgeqrf_ffi",
            "lapack_sorgqr_ffi",
            "lapack_dorgqr_ffi",
            "lapack_spotrf_ffi",
            "lapack_dpotrf_ffi",
            "lapack_sgetrf_ffi",
            "lapack_dgetrf_ffi",
            "lapack_ssyevd_ffi",
            "lapack_dsyevd_ffi",
            "lapack_sgesdd_ffi",
            "lapack_dgesdd_ffi",
            "lapack_strsm_ffi",
            "lapack_dtrsm_ffi",
        }
    ),
    "cuda": frozenset(),
    "rocm": frozenset(),
}
# Operations that leave the device or carry state from one call to the next.
FORBIDDEN_OPS = frozenset({"rng", "infeed", "outfeed", "send", "recv"})

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._=-]+")


@dataclasses.dataclass(frozen=True)
class Request:
    """One program the harness asks for.

    ``name`` is the measurement (``fwd``, ``fwd_bwd``, ``train_step``), ``case`` names the shape
    and dtype (``B1-T256-H2-K32-V32-float32``), ``purpose`` is ``bench`` (verified and timed) or
    ``gate`` (verified only: the correctness matrix). ``args`` is the pytree of
    ``jax.ShapeDtypeStruct`` the program takes; ``params`` is what the target's ``build`` and
    ``verify`` need to know about the case (JSON-able).
    """

    name: str
    case: str
    purpose: str
    args: Any
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.name}@{self.case}"


# --- the request file (what the export is asked for) -------------------------------------------

REQUESTS_SCHEMA_ID = "hillclimb.requests/v1"
MAX_REQUESTS_BYTES = 16 << 20


def request_document(
    requests: Sequence[Request], *, target: str, versions: Mapping[str, str]
) -> dict[str, Any]:
    """What an export is told: each program's key, shape parameters and argument shapes. Not its
    purpose (timed or gate), not the run's draw, not which arm it is: both arms get this very
    document, and the shapes are all an export needs."""
    return {
        "schema": REQUESTS_SCHEMA_ID,
        "target": target,
        "versions": dict(versions),
        "requests": [
            {
                "key": r.key,
                "name": r.name,
                "case": r.case,
                "params": dict(r.params),
                "args": encode_args(r.args),
            }
            for r in requests
        ],
    }


def write_requests(
    path: Path, requests: Sequence[Request], *, target: str, versions: Mapping[str, str]
) -> Path:
    """Write a request file (what the requests step writes; tests and tools build their own)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = request_document(requests, target=target, versions=versions)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def read_requests(path: Path) -> list[Request]:
    """The requests of a request file (written by the ``requests`` step); raises UsageError."""
    from .errors import UsageError

    if not path.is_file():
        raise UsageError(f"{path}: no request file (the harness writes it before the export)")
    if path.stat().st_size > MAX_REQUESTS_BYTES:
        raise UsageError(f"{path}: over {MAX_REQUESTS_BYTES} bytes")
    try:
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict) or doc.get("schema") != REQUESTS_SCHEMA_ID:
            raise ValueError(f"schema is not {REQUESTS_SCHEMA_ID}")
        out = []
        for item in doc["requests"]:
            request = Request(
                str(item["name"]),
                str(item["case"]),
                "",
                decode_args(item["args"]),
                dict(item["params"]),
            )
            if request.key != item["key"]:
                raise ValueError(f"key {item['key']!r} is not {request.key!r}")
            out.append(request)
        return out
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        raise UsageError(f"{path}: not a request file: {type(e).__name__}: {e}") from None


def encode_args(args: Any) -> Any:
    """A pytree of ``jax.ShapeDtypeStruct`` (dicts, lists, tuples, None) as JSON."""
    if args is None:
        return None
    if isinstance(args, dict):
        return {"dict": {str(k): encode_args(v) for k, v in args.items()}}
    if isinstance(args, tuple) and not hasattr(args, "_fields"):
        return {"tuple": [encode_args(x) for x in args]}
    if isinstance(args, list):
        return {"list": [encode_args(x) for x in args]}
    if hasattr(args, "shape") and hasattr(args, "dtype"):
        return {"shape": [int(d) for d in args.shape], "dtype": str(args.dtype)}
    raise TypeError(
        f"request arguments must be dicts, lists, tuples and jax.ShapeDtypeStruct; got {type(args)}"
    )


def decode_args(doc: Any) -> Any:
    import jax
    import numpy as np

    if doc is None:
        return None
    if "dict" in doc:
        return {k: decode_args(v) for k, v in doc["dict"].items()}
    if "tuple" in doc:
        return tuple(decode_args(x) for x in doc["tuple"])
    if "list" in doc:
        return [decode_args(x) for x in doc["list"]]
    return jax.ShapeDtypeStruct(tuple(int(d) for d in doc["shape"]), np.dtype(doc["dtype"]))


def file_name(request: Request) -> str:
    """The program's file in the export folder, derived from the request alone."""
    return _SAFE_NAME.sub("_", request.key) + SUFFIX


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- writing (the export step) ---------------------------------------------------------------


def write(
    out: Path, exported: Sequence[tuple[Request, Any]], *, platform: str, source: Mapping[str, Any]
) -> dict[str, Any]:
    """Serialize each ``(request, jax.export.Exported)`` into ``out`` and write the manifest.

    ``source`` says where the programs came from (the tree, the kernel modules' files); the
    manifest is informational: the verifier hashes what it reads and trusts nothing here."""
    out.mkdir(parents=True, exist_ok=True)
    programs = []
    for request, exp in exported:
        data = exp.serialize()
        (out / file_name(request)).write_bytes(data)
        programs.append(
            {
                "key": request.key,
                "name": request.name,
                "case": request.case,
                "file": file_name(request),
                "sha256": sha256(data),
                "bytes": len(data),
                "in_avals": [str(a) for a in exp.in_avals],
                "out_avals": [str(a) for a in exp.out_avals],
            }
        )
    manifest = {
        "schema": SCHEMA_ID,
        "platform": platform,
        "source": dict(source),
        "programs": programs,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


# --- reading (the verifier) ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Loaded:
    """A program the verifier read and checked: its bytes' hash and the deserialized program."""

    request: Request
    sha256: str
    size: int
    exported: Any
    custom_calls: tuple[str, ...]

    @property
    def mosaic(self) -> bool:
        """Whether the program runs a Mosaic (Pallas TPU) kernel."""
        return "tpu_custom_call" in self.custom_calls


def read_manifest(folder: Path) -> dict[str, Any]:
    """The export's own account of what it wrote (informational; capped, JSON or an error)."""
    path = folder / MANIFEST
    if not path.is_file():
        raise VerificationError("programs", f"{path} is missing: the export wrote no manifest")
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise VerificationError("programs", f"{path} is over {MAX_MANIFEST_BYTES} bytes")
    try:
        doc = json.loads(path.read_text())
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # nested past the parser's depth
        why = f"{type(e).__name__}: {e}"
        raise VerificationError("programs", f"{path} is not JSON: {why}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_ID:
        raise VerificationError("programs", f"{path}: schema is not {SCHEMA_ID}")
    return doc


def load(folder: Path, request: Request, *, platform: str) -> Loaded:
    """Read, hash, deserialize and check the program ``request`` names (see the module doc)."""
    import jax
    from jax import export

    path = folder / file_name(request)
    if path.is_symlink() or not path.is_file():
        raise VerificationError(request.key, f"the export wrote no program {path.name}")
    size = path.stat().st_size
    if size > MAX_PROGRAM_BYTES:
        raise VerificationError(request.key, f"{path.name} is {size} bytes, over the cap")
    data = path.read_bytes()
    try:
        exp = export.deserialize(bytearray(data))
    except Exception as e:  # any damage to the bytes is the export's failure
        raise VerificationError(request.key, f"{path.name} does not deserialize: {e}") from None
    if tuple(exp.platforms) != (platform,):
        raise VerificationError(
            request.key, f"exported for {list(exp.platforms)}, the verifier runs on [{platform!r}]"
        )
    if exp.nr_devices != 1:
        raise VerificationError(request.key, f"exported for {exp.nr_devices} devices, not 1")
    if exp.ordered_effects or exp.unordered_effects:
        effects = [*exp.ordered_effects, *exp.unordered_effects]
        raise VerificationError(request.key, f"the program has effects {effects}")
    want_tree = jax.tree.structure((tuple_args(request.args), {}))
    if exp.in_tree != want_tree:
        raise VerificationError(
            request.key, f"takes arguments {exp.in_tree}, the harness passes {want_tree}"
        )
    want_avals = [f"{a.dtype}{list(a.shape)}" for a in jax.tree.leaves(request.args)]
    got_avals = [f"{a.dtype}{list(a.shape)}" for a in exp.in_avals]
    if got_avals != want_avals:
        raise VerificationError(request.key, f"takes {got_avals}, the harness passes {want_avals}")
    calls = scan_module(exp.mlir_module_serialized, platform=platform, key=request.key)
    return Loaded(request, sha256(data), size, exp, calls)


def tuple_args(args: Any) -> tuple[Any, ...]:
    """A request's arguments as the positional tuple the program takes."""
    return tuple(args) if isinstance(args, tuple | list) else (args,)


def scan_module(serialized: bytes, *, platform: str, key: str) -> tuple[str, ...]:
    """Walk every operation of a serialized (VHLO) module; refuse what ``FORBIDDEN_OPS`` and the
    custom-call allowlist forbid. Returns the custom-call targets found."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    allowed = CUSTOM_CALLS.get(platform, frozenset())
    problems: list[str] = []
    targets: list[str] = []
    with mlir.make_ir_context():
        try:
            module = ir.Module.parse(bytes(serialized))
        except Exception as e:
            raise VerificationError(key, f"the program's module does not parse: {e}") from None

        def visit(op: Any) -> Any:
            o = op.operation
            dialect, _, name = o.name.partition(".")
            if o.name == "builtin.module":
                return ir.WalkResult.ADVANCE
            if dialect != "vhlo":
                problems.append(f"operation {o.name} is not StableHLO")
                return ir.WalkResult.ADVANCE
            base = re.sub(r"_v\d+$", "", name)
            if base in FORBIDDEN_OPS:
                problems.append(f"operation {base} (host round trip or state across calls)")
            if base == "custom_call":
                attrs = _attributes(o)
                target = _unquote(attrs.get("call_target_name", "?"))
                targets.append(target)
                if target not in allowed:
                    problems.append(
                        f"custom_call {target!r} is not allowed on {platform} "
                        f"(allowed: {sorted(allowed) or 'none'})"
                    )
                if re.search(r"\btrue\b", attrs.get("has_side_effect", "")):  # #vhlo.bool_v1<true>
                    problems.append(f"custom_call {target!r} has a side effect")
                # Native code on buffers the program sized: the documented signature, or nothing.
                mismatch = signatures.check_call(
                    target,
                    [str(x.type) for x in o.operands],
                    [str(r.type) for r in o.results],
                    attrs.get("output_operand_aliases", ""),
                    attrs.get("mhlo.backend_config", ""),
                )
                if mismatch:
                    problems.append(mismatch)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
    if problems:
        unique = list(dict.fromkeys(problems))
        raise VerificationError(key, "refused: " + "; ".join(unique[:5]))
    return tuple(sorted(set(targets)))


def _attributes(op: Any) -> dict[str, str]:
    attrs = op.attributes
    return {attrs[i].name: str(attrs[i].attr) for i in range(len(attrs))}


def _unquote(text: str) -> str:
    """A VHLO string attribute printed as ``#vhlo.string_v1<"name">`` → ``name``."""
    m = re.search(r'"((?:[^"\\]|\\.)*)"', text)
    return m.group(1) if m else text


def digest(loaded: Iterable[Loaded]) -> dict[str, str]:
    """``{request key: sha256}`` of programs, for the metrics and the evidence."""
    return {p.request.key: p.sha256 for p in loaded}
