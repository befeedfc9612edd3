"""The verifier: the process whose numbers decide. It never imports the code under test.

    python -E -s -m <target module> verify --mode gate|measure|profile --platform cpu \\
        --draw N --arm A=DIR [--arm B=DIR] --out FILE [--rounds R] [--repeats N] [--warmup W] \\
        [--seed S] [--trace DIR] [--pin-cpu] [--compile-cache DIR] [-- <target args>]

It loads the target's description (protected harness code), refuses to go on if any of the target's
kernel modules is loaded (:mod:`hillclimb_bench.isolation`), reads from each arm's folder exactly
the programs the target requests (:mod:`hillclimb_bench.programs`: hashed, deserialized, checked
for host round trips and foreign custom calls), compiles them, draws the input seed from
``os.urandom`` and verifies every program with the target's reference (every output, every input
set, and a second call bit-identical to the first). Then, by ``--mode``:

- ``gate``: the verdict of the correctness gate over the whole matrix (every program, ``bench`` and
  ``gate`` purposes), one line per program;
- ``measure``: arms A and B timed in one process, call by call (A B B A …, the first arm drawn
  per round), ``--rounds`` rounds of ``--repeats`` calls per arm and program; a metrics document
  per round and arm; kept timed outputs compared bit for bit with the verified ones after timing.
  Byte-identical programs in A and B are reported as ``identical`` and not timed;
- ``profile``: one arm's timed programs under ``jax.profiler`` (``--trace``), after verification.

Writes one JSON document (``hillclimb.session/v1``) to ``--out`` and leaves through ``os._exit``.
Exit 0: the document is written (it says whether the candidate passed); 2: bad arguments; 3: the
verifier itself could not run (an isolation breach, a broken install).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from . import checks, isolation, metrics, peaks, programs
from .errors import UsageError, VerificationError
from .programs import Loaded, Request, tuple_args
from .target import Target, Verified
from .timing import ArmTimes, Clock, ProgramCallError, time_interleaved

SCHEMA_ID = "hillclimb.session/v1"
TARGET_KEYS = frozenset({"shapes", "model", "notes"})  # what Target.document() may add to metrics
MODES = ("gate", "measure", "profile")
MAX_SEED = 2**53 - 1
# Bytes of timed outputs kept per program and arm for the after-timing check (all calls fit at
# the CPU presets; at the TPU presets a random subset).
SPOT_CHECK_BYTES = 1 << 30
TRACE_STEPS = 5
"""Profiled steps per program: enough for a median, few enough that the trace stays small."""
EXIT_BROKEN = 3


class BrokenError(Exception):
    """The verifier cannot vouch for anything it would write (exit 3)."""


@dataclasses.dataclass
class Arm:
    """One arm's programs, compiled, and what verification found."""

    name: str
    folder: Path
    loaded: dict[str, Loaded] = dataclasses.field(default_factory=dict)
    compiled: dict[str, Any] = dataclasses.field(default_factory=dict)
    compile_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    verified: dict[str, Verified] = dataclasses.field(default_factory=dict)
    failure: str | None = None
    # What the export reported per program (its manifest): the candidate's words, informational.
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def hashes(self) -> dict[str, str]:
        return programs.digest(self.loaded.values())


#: Candidates one screening session may time beside the champion (``search.candidates`` ≤ 8).
MAX_SCREEN_CANDIDATES = 8
#: ``--min-time-ms`` adds calls up to this many times ``--repeats`` (a bound on a session's length).
MAX_CALLS_FACTOR = 10
MAX_MIN_TIME_MS = 60_000


def parse(argv: Sequence[str], prog: str) -> argparse.Namespace:
    p = _Parser(prog=f"{prog} verify", description="Verify and time exported programs.")
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--platform", required=True)
    p.add_argument("--draw", type=int, required=True, help="the run's draw of gate shapes")
    p.add_argument("--arm", action="append", required=True, metavar="NAME=DIR")
    p.add_argument("--out", type=Path, required=True, help="the session document to write")
    p.add_argument("--rounds", type=int, default=5, help="measure: timed rounds per arm")
    p.add_argument("--repeats", type=int, default=10, help="timed calls per round and program")
    p.add_argument("--warmup", type=int, default=2, help="untimed calls per round and program")
    p.add_argument(
        "--min-time-ms",
        type=int,
        default=0,
        help="measure: more calls per round for a program whose --repeats calls take less than "
        f"this (at most {MAX_CALLS_FACTOR}x --repeats); 0: --repeats calls",
    )
    p.add_argument("--seed", type=int, default=None, help="input seed, to reproduce a session")
    p.add_argument("--trace", type=Path, default=None, help="profile: trace directory")
    p.add_argument("--pin-cpu", action="store_true", help="one core (XLA:CPU single-threaded)")
    p.add_argument("--compile-cache", type=Path, default=None, help="the verifier's own cache")
    args = p.parse_args(list(argv))
    arms: dict[str, Path] = {}
    for spec in args.arm:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder or name in arms:
            raise UsageError(f"--arm {spec!r}: expected NAME=DIR, each name once")
        arms[name] = Path(folder)
    if args.mode == "measure":
        # A comparison is two arms; a screening session times the champion (the first) and up to
        # MAX_SCREEN_CANDIDATES candidates call by call, each compared with the first.
        if not 2 <= len(arms) <= 1 + MAX_SCREEN_CANDIDATES:
            raise UsageError(
                f"--mode measure takes 2 to {1 + MAX_SCREEN_CANDIDATES} --arm, got {len(arms)}"
            )
    else:
        if len(arms) != 1:
            raise UsageError(f"--mode {args.mode} takes 1 --arm, got {len(arms)}")
    if args.rounds < 1 or args.repeats < 1 or args.warmup < 0:
        raise UsageError("need --rounds >= 1, --repeats >= 1, --warmup >= 0")
    if not 0 <= args.min_time_ms <= MAX_MIN_TIME_MS:
        raise UsageError(f"--min-time-ms must be in [0, {MAX_MIN_TIME_MS}], got {args.min_time_ms}")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        raise UsageError(f"--seed must be in [0, 2^53), got {args.seed}")
    if args.mode == "profile" and args.trace is None:
        raise UsageError("--mode profile needs --trace DIR")
    args.arms = arms
    return args


def run(make_target: Any, argv: Sequence[str], target_args: Sequence[str], prog: str) -> int:
    try:
        args = parse(argv, prog)
    except UsageError as e:
        print(f"verify: {e}", file=sys.stderr)
        return 2
    try:
        doc = session(make_target, args, target_args)
    except UsageError as e:
        print(f"verify: {e}", file=sys.stderr)
        return 2
    except BrokenError as e:
        print(f"verify: cannot vouch for this session: {e}", file=sys.stderr)
        return EXIT_BROKEN
    metrics.write(args.out, doc)
    print(summary(doc), file=sys.stderr)
    return 0


def session(make_target: Any, args: argparse.Namespace, target_args: Sequence[str]) -> dict:
    pinned = pin_to_one_cpu() if args.pin_cpu else None
    import jax

    if args.compile_cache is not None:
        jax.config.update("jax_compilation_cache_dir", str(args.compile_cache.resolve()))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    target: Target = make_target(list(target_args)) if callable(make_target) else make_target
    folders = list(args.arms.values())
    breach = isolation.breaches(target.kernel_modules, folders)
    if breach:
        raise BrokenError("; ".join(breach))
    requests = target.requests(draw=args.draw)
    wanted = requests if args.mode == "gate" else target.timed(requests)
    if not wanted:
        raise UsageError(
            f"the target requests no {'programs' if args.mode == 'gate' else 'timed programs'}"
        )
    arms = [Arm(name, folder) for name, folder in args.arms.items()]
    for arm in arms:
        arm.info = reported_info(arm.folder)
        load_arm(
            arm,
            wanted,
            platform=args.platform,
            continue_on_failure=args.mode == "gate",
            mosaic=args.platform == "tpu" and target.pallas,
        )
    seed_source = "argument" if args.seed is not None else "os.urandom"
    seed = args.seed if args.seed is not None else draw_seed()
    doc: dict[str, Any] = {
        "schema": SCHEMA_ID,
        "mode": args.mode,
        "target": target.name,
        "platform": args.platform,
        "device": device_info(jax),
        "draw": args.draw,
        "seed": seed,
        "seed_source": seed_source,
        "arms": {},
        "notes": [],
    }
    if pinned is not None:
        doc["notes"].append(f"process pinned to CPU core {pinned}: XLA:CPU single-threaded")
    if args.mode == "gate":
        doc["gate"] = gate(target, arms[0], wanted, seed)
    else:
        for arm in arms:
            if arm.failure is None:
                verify_arm(target, arm, wanted, seed)
        identical = (
            len(arms) == 2
            and all(a.failure is None for a in arms)
            and (arms[0].hashes() == arms[1].hashes())
        )
        doc["identical"] = identical
        if len(arms) > 2:
            # A screening session: candidates whose programs are the first arm's bytes, or that
            # failed verification, are named and left out; the rest are timed with the first.
            first = arms[0]
            same = [a.name for a in arms[1:] if a.failure is None and a.hashes() == first.hashes()]
            doc["same_as_first"] = same
            live = [first] + [a for a in arms[1:] if a.failure is None and a.name not in same]
            if first.failure is None and len(live) >= 2:
                doc["rounds"] = measure(target, live, wanted, args, seed, seed_source, pinned)
        elif all(a.failure is None for a in arms) and not identical:
            if args.mode == "measure":
                doc["rounds"] = measure(target, arms, wanted, args, seed, seed_source, pinned)
            else:
                doc["profile"] = profile(target, arms[0], wanted, args, seed, seed_source, pinned)
    for arm in arms:
        doc["arms"][arm.name] = {
            "folder": str(arm.folder),
            "programs": arm.hashes(),
            "compile_ms": {k: round(v, 3) for k, v in arm.compile_ms.items()},
            "verified": arm.failure is None and len(arm.verified) == len(wanted),
            "failure": arm.failure,
            "errors": merged_errors(arm.verified.values()),
        }
    breach = isolation.breaches(target.kernel_modules, folders)
    if breach:
        raise BrokenError("; ".join(breach))
    doc["isolation"] = isolation.describe(target.kernel_modules)
    return doc


def reported_info(folder: Path) -> dict[str, Any]:
    """``source.info`` of the export's manifest, per program key; {} when unreadable."""
    try:
        info = programs.read_manifest(folder).get("source", {}).get("info", {})
    except Exception:  # the candidate's words, informational: any failure to read them is {}
        return {}
    return {k: v for k, v in info.items() if isinstance(v, dict)} if isinstance(info, dict) else {}


def load_arm(
    arm: Arm,
    wanted: Sequence[Request],
    *,
    platform: str,
    continue_on_failure: bool,
    mosaic: bool = False,
) -> None:
    """Read and compile the arm's programs; the first failure is the arm's (all are tried for a
    gate, whose report lists each program). ``mosaic``: each must run a Mosaic kernel."""
    import jax

    for request in wanted:
        try:
            loaded = programs.load(arm.folder, request, platform=platform)
            if mosaic and not loaded.mosaic:
                raise VerificationError(request.key, "runs no Mosaic kernel (tpu_custom_call)")
            t0 = perf_counter()
            compiled = jax.jit(loaded.exported.call).lower(*tuple_args(request.args)).compile()
            arm.compile_ms[request.key] = (perf_counter() - t0) * 1e3
        except VerificationError as e:
            arm.failure = arm.failure or str(e)
            if continue_on_failure:
                continue
            return
        except Exception as e:  # XLA refusing the module is the program's fault
            arm.failure = arm.failure or f"{request.key}: does not compile: {type(e).__name__}: {e}"
            if continue_on_failure:
                continue
            return
        arm.loaded[request.key] = loaded
        arm.compiled[request.key] = compiled


def verify_one(target: Target, request: Request, compiled: Any, seed: int) -> Verified:
    """The target's verification, then each set once more: bit-identical or not deterministic."""
    try:
        verified = target.verify(request, compiled, seed=seed)
    except VerificationError:
        raise
    except Exception as e:  # the program raising is its failure, not the verifier's
        raise VerificationError(request.key, f"raised {type(e).__name__}: {e}") from e
    for (label, args), want in zip(verified.sets, verified.outputs, strict=True):
        again = leaves_of(compiled(*args))
        same = checks.identical_on_host(again, want)
        if not all(same):
            differ = [q for q, ok in zip(verified.names, same, strict=True) if not ok]
            raise VerificationError(
                request.key, f"not deterministic: two calls on {label} differ in {differ[:5]}"
            )
    return verified


def verify_arm(target: Target, arm: Arm, wanted: Sequence[Request], seed: int) -> None:
    for request in wanted:
        try:
            arm.verified[request.key] = verify_one(target, request, arm.compiled[request.key], seed)
        except VerificationError as e:
            arm.failure = str(e)
            return


def gate(target: Target, arm: Arm, wanted: Sequence[Request], seed: int) -> dict[str, Any]:
    """Every program of the matrix verified; the gate passes only if all did."""
    rows = []
    for request in wanted:
        row: dict[str, Any] = {
            "key": request.key,
            "name": request.name,
            "case": request.case,
            "purpose": request.purpose,
        }
        loaded = arm.loaded.get(request.key)
        if loaded is None:
            row.update(status="failed", error=_failure_of(arm, request))
            rows.append(row)
            continue
        row["sha256"] = loaded.sha256
        try:
            verified = verify_one(target, request, arm.compiled[request.key], seed)
        except VerificationError as e:
            row.update(status="failed", error=str(e))
        else:
            arm.verified[request.key] = verified
            row.update(status="passed", errors={q: dict(e) for q, e in verified.errors.items()})
        rows.append(row)
    failed = [r for r in rows if r["status"] == "failed"]
    if failed and arm.failure is None:
        arm.failure = failed[0]["error"]
    return {"passed": not failed, "programs": rows, "failed": len(failed), "total": len(rows)}


def _failure_of(arm: Arm, request: Request) -> str:
    failure = arm.failure or "not loaded"
    return failure if failure.startswith(request.key) else f"{request.key}: {failure}"


def measure(
    target: Target,
    arms: list[Arm],
    wanted: Sequence[Request],
    args: argparse.Namespace,
    seed: int,
    seed_source: str,
    pinned: int | None,
) -> list[dict[str, Any]]:
    """``args.rounds`` rounds; each times every program of every arm call by call. Returns per
    round ``{"first": arm, "A": metrics, "B": metrics, …}``. Two arms: the first drawn, A B, B A, …;
    more (a screening session): a random order each round, reversed pair by pair. A kept timed
    output that differs from the verified one becomes that arm's failure and ends timing (no rounds
    are returned)."""
    import jax

    rng = np.random.default_rng([seed, 0x71AE])
    try:
        calls = calls_per_round(arms, wanted, args, pinned)
    except ProgramCallError as e:
        next(a for a in arms if a.name == e.arm).failure = str(e)
        return []
    # Bytes of one call's outputs, and the spot checks' budget: no more kept on the device than
    # --repeats calls were, so more calls a round spread the same checks over them.
    sizes = {a.name: {r.key: output_bytes(a.compiled[r.key]) for r in wanted} for a in arms}
    budgets = {
        name: {key: min(SPOT_CHECK_BYTES, args.repeats * size) for key, size in by_key.items()}
        for name, by_key in sizes.items()
    }
    samples: list[dict[str, dict[str, ArmTimes]]] = []
    firsts: list[str] = []
    compared: list[dict[str, int]] = []
    for _ in range(args.rounds):
        if len(arms) == 2:
            first = arms[int(rng.integers(2))].name
            order = sorted(arms, key=lambda a: a.name != first)
        else:
            order = [arms[int(i)] for i in rng.permutation(len(arms))]
            first = order[0].name
        firsts.append(first)
        round_samples: dict[str, dict[str, ArmTimes]] = {a.name: {} for a in arms}
        round_compared = {a.name: 0 for a in arms}
        for request in wanted:
            key = request.key
            verified = {a.name: a.verified[key] for a in arms}
            keep = {
                a.name: set(
                    checks.spot_check_indices(
                        calls[key], sizes[a.name][key], rng, budget=budgets[a.name][key]
                    )
                )
                for a in arms
            }
            try:
                times, kept = time_interleaved(
                    key,
                    {a.name: a.compiled[key] for a in order},
                    {a.name: [s for _, s in verified[a.name].sets] for a in arms},
                    repeats=calls[key],
                    warmup=args.warmup,
                    block=jax.block_until_ready,
                    keep=keep,
                )
            except ProgramCallError as e:
                next(a for a in arms if a.name == e.arm).failure = str(e)
                return []
            for a in arms:
                v = verified[a.name]
                try:
                    round_compared[a.name] += checks.check_kept(
                        key,
                        {r: leaves_of(out) for r, out in kept[a.name].items()},
                        v.outputs,
                        labels=[label for label, _ in v.sets],
                        names=v.names,
                        repeats=calls[key],
                    )
                except VerificationError as e:
                    a.failure = str(e)  # timing ends: this arm computed something else
                    return []
                round_samples[a.name][request.name] = times[a.name]
        samples.append(round_samples)
        compared.append(round_compared)
    peak = device_peak(jax, target.dtype, wanted, target)
    rounds = []
    for r, (round_samples, first, counts) in enumerate(zip(samples, firsts, compared, strict=True)):
        entry: dict[str, Any] = {"first": first}
        for a in arms:
            entry[a.name] = metrics_doc(
                target,
                a,
                wanted,
                round_samples[a.name],
                peak=peak,
                args=args,
                seed=seed,
                seed_source=seed_source,
                compared=counts[a.name],
                session={"round": r + 1, "rounds": args.rounds, "arm": a.name, "first": first},
                pinned=pinned,
                calls={request.name: calls[request.key] for request in wanted},
            )
        rounds.append(entry)
    return rounds


def profile(
    target: Target,
    arm: Arm,
    wanted: Sequence[Request],
    args: argparse.Namespace,
    seed: int,
    seed_source: str,
    pinned: int | None,
) -> dict[str, Any]:
    """One arm's timed programs: ``--repeats`` timed calls each (for the metrics), then
    ``TRACE_STEPS`` steps each under the profiler, every step a ``hillclimb_<name>`` step
    annotation; the traced outputs are checked bit for bit too."""
    import jax

    samples: dict[str, ArmTimes] = {}
    compared = 0
    for request in wanted:
        v = arm.verified[request.key]
        keep = {arm.name: set(range(args.repeats))}
        try:
            times, kept = time_interleaved(
                request.key,
                {arm.name: arm.compiled[request.key]},
                {arm.name: [s for _, s in v.sets]},
                repeats=args.repeats,
                warmup=args.warmup,
                block=jax.block_until_ready,
                keep=keep,
            )
        except ProgramCallError as e:
            arm.failure = str(e)
            return {}
        try:
            compared += checks.check_kept(
                request.key,
                {r: leaves_of(out) for r, out in kept[arm.name].items()},
                v.outputs,
                labels=[label for label, _ in v.sets],
                names=v.names,
                repeats=args.repeats,
            )
        except VerificationError as e:
            arm.failure = str(e)
            return {}
        samples[request.name] = times[arm.name]
    trace_dir = args.trace.resolve()
    trace_dir.mkdir(parents=True, exist_ok=True)
    calls = [(r.name, arm.compiled[r.key], arm.verified[r.key]) for r in wanted]
    for _, program, v in calls:
        jax.block_until_ready(program(*v.sets[0][1]))
    with jax.profiler.trace(str(trace_dir), create_perfetto_trace=True):
        for name, program, v in calls:
            for step in range(TRACE_STEPS):
                with jax.profiler.StepTraceAnnotation(f"hillclimb_{name}", step_num=step):
                    out = jax.block_until_ready(program(*v.sets[0][1]))
            if not all(checks.identical_on_host(leaves_of(out), v.outputs[0])):
                arm.failure = f"{name}: a traced call differs bit for bit from the verified one"
                return {}
    peak = device_peak(jax, target.dtype, wanted, target)
    doc = metrics_doc(
        target,
        arm,
        wanted,
        samples,
        peak=peak,
        args=args,
        seed=seed,
        seed_source=seed_source,
        compared=compared,
        session={"round": 1, "rounds": 1, "arm": arm.name, "first": arm.name},
        pinned=pinned,
    )
    doc["trace_dir"] = str(trace_dir)
    doc["notes"].append(
        f"the trace holds {TRACE_STEPS} untimed steps per program after a warm-up call"
    )
    return {"metrics": doc, "trace_dir": str(trace_dir)}


def metrics_doc(
    target: Target,
    arm: Arm,
    wanted: Sequence[Request],
    samples: dict[str, ArmTimes],
    *,
    peak: dict[str, Any] | None,
    args: argparse.Namespace,
    seed: int,
    seed_source: str,
    compared: int,
    session: dict[str, Any],
    pinned: int | None,
    calls: dict[str, int] | None = None,
) -> dict[str, Any]:
    """One arm's metrics for one round (``schemas/metrics.schema.json``); ``calls``: the timed
    calls of each program where ``--min-time-ms`` set them (``--repeats`` each otherwise)."""
    import jax

    measurements = {}
    for request in wanted:
        work = target.work(request, arm.info.get(request.key, {}))
        clock = decisive_clock(args, pinned)
        times = samples[request.name]
        measurements[request.name] = metrics.measurement(
            times.on(clock),
            wall_samples_ms=times.wall if clock != "wall" else None,
            flops=float(work.flops or 0.0),
            executed_flops=work.executed_flops,
            tokens=work.tokens,
            peak_flops_per_s=None if peak is None else peak["flops_per_s"],
        )
    mosaic = any(p.mosaic for p in arm.loaded.values())
    interpret = args.platform == "cpu"
    first_sets = next(iter(arm.verified.values())).sets
    notes = [
        f"verified and timed by a process that never imported the kernel: programs exported with "
        f"jax.export ({len(arm.loaded)} program(s), sha256 in programs), inputs from seed {seed} "
        f"({seed_source})",
        f"{timed_arms(args.arms)} timed call by call in one process (round "
        f"{session['round']} of {session['rounds']}, first arm {session['first']})"
        if len(args.arms) >= 2
        else "one arm timed",
    ]
    if interpret:
        notes.append("Pallas ran in interpret mode: timings say nothing about TPU speed")
    if pinned is not None:
        notes.append(f"process pinned to CPU core {pinned} (--pin-cpu): XLA:CPU single-threaded")
    if peak is not None and peak["source"] == "measured":
        notes.append(
            f"{peak['warning']}: MFU is against a measured matmul peak (the best of "
            f"{peak['measured']['repeats']} {peak['measured']['n']}^3 {target.dtype} matmuls, "
            "measured once in this process for both arms), not a datasheet number"
        )
    extra = target_document(target, arm)
    notes += list(extra.pop("notes", []))
    device = jax.devices()[0]
    doc: dict[str, Any] = {
        "schema": metrics.SCHEMA_ID,
        "target": target.name,
        "impl": target.impl,
        "preset": target.preset,
        "created_at": metrics.created_at(),
        "device": {
            "backend": jax.default_backend(),
            "kind": device.device_kind,
            "count": 1,
            "peak_flops_per_s": None if peak is None else peak["flops_per_s"],
            "interpret": interpret and not mosaic,
            **({"peak": peak} if peak is not None else {}),
        },
        "shapes": target.shapes(),
        "dtype": target.dtype,
        "timing": {
            "warmup": args.warmup,
            "repeats": args.repeats,
            **(
                {"min_time_ms": args.min_time_ms, "calls": calls}
                if calls is not None and args.min_time_ms > 0
                else {}
            ),
            **metrics.clock_names(decisive_clock(args, pinned)),
            "compile_ms": {r.name: round(arm.compile_ms.get(r.key, 0.0), 3) for r in wanted},
        },
        "measurements": measurements,
        "versions": metrics.versions(jax),
        "git": {"commit": None, "dirty": None},
        "trace_dir": None,
        "verification": {
            "seed": seed,
            "seed_source": seed_source,
            "input_sets": [label for label, _ in first_sets],
            "structured_sets": sorted({s for v in arm.verified.values() for s in v.structured}),
            "verified": True,
            "timed_outputs_compared": compared,
            "errors": merged_errors(arm.verified.values()),
        },
        "programs": {"platform": args.platform, "sha256": arm.hashes()},
        "session": session,
        "notes": notes,
    }
    doc.update(extra)
    return doc


def calls_per_round(
    arms: Sequence[Arm], wanted: Sequence[Request], args: argparse.Namespace, pinned: int | None
) -> dict[str, int]:
    """Timed calls per round of each program, the same for every arm and round of the session:
    ``--repeats``, or with ``--min-time-ms`` as many as the slowest arm's calls fit in that time,
    at most ``MAX_CALLS_FACTOR`` times ``--repeats``. A round's per-call noise averages out over
    its calls: cheap programs (a kernel of a few ms) get many, an expensive one (a model step) keeps
    ``--repeats``. Each arm's program is first called twice on every input set (after a warm-up
    call), on the verdict's clock; its cost per call is the mean over the sets of each set's faster
    call, as a round's calls cycle through them, so a program that is fast on one set only cannot
    take more calls than fit. The slowest arm sets the count: no arm can make the session longer
    than the budget by being fast, and a slow one only costs itself calls."""
    import jax

    if args.min_time_ms <= 0:
        return {request.key: args.repeats for request in wanted}
    clock = decisive_clock(args, pinned)
    calls: dict[str, int] = {}
    for request in wanted:
        sets = len(arms[0].verified[request.key].sets)
        times, _ = time_interleaved(
            request.key,
            {a.name: a.compiled[request.key] for a in arms},
            {a.name: [s for _, s in a.verified[request.key].sets] for a in arms},
            repeats=2 * sets,
            warmup=1,
            block=jax.block_until_ready,
            keep={a.name: set() for a in arms},
        )
        slowest = probe_cost({a.name: times[a.name].on(clock) for a in arms}, sets)
        calls[request.key] = calls_for(args.repeats, args.min_time_ms, slowest)
    return calls


def probe_cost(times: dict[str, list[float]], sets: int) -> float:
    """A call's cost from the probe: each arm's ``2 * sets`` calls (call ``i`` on input set
    ``i % sets``) give the mean over the sets of each set's faster call, and the slowest arm's
    counts. The mean, not the fastest set: a round cycles through every set."""
    return max(
        float(np.mean([min(ms[i], ms[i + sets]) for i in range(sets)])) for ms in times.values()
    )


def calls_for(repeats: int, min_time_ms: int, call_ms: float) -> int:
    """Calls of ``call_ms`` each that fill ``min_time_ms``: at least ``repeats``, at most
    ``MAX_CALLS_FACTOR`` times that."""
    fill = int(np.ceil(min_time_ms / max(call_ms, 1e-6)))
    return min(repeats * MAX_CALLS_FACTOR, max(repeats, fill))


def timed_arms(arms: Sequence[str]) -> str:
    """``A and B``, or ``3 arms`` for a screening session."""
    return " and ".join(arms) if len(arms) == 2 else f"{len(arms)} arms"


def target_document(target: Target, arm: Arm) -> dict[str, Any]:
    """The target's additions to an arm's metrics. They are built from what the export reported
    (``arm.info``), so they may add ``TARGET_KEYS``, never overwrite what the verifier measured."""
    extra = dict(target.document(arm.verified, arm.info))
    unknown = set(extra) - TARGET_KEYS
    if unknown:
        raise BrokenError(
            f"the target's document() returned keys it may not set: {sorted(unknown)}"
        )
    return extra


def device_peak(jax: Any, dtype: str, wanted: Sequence[Request], target: Target) -> dict | None:
    """One peak for every arm and round of the session: the table's, or measured once here."""
    if not any(target.work(r, {}).flops for r in wanted):
        return None
    return peaks.peak_entry(jax.devices()[0].device_kind, dtype)


def device_info(jax: Any) -> dict[str, Any]:
    d = jax.devices()[0]
    return {"backend": jax.default_backend(), "kind": d.device_kind, "count": jax.device_count()}


def merged_errors(verified: Any) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for v in verified:
        for q, e in v.errors.items():
            worst = out.setdefault(q, {"max_abs": 0.0, "rel_rms": 0.0})
            worst["max_abs"] = max(worst["max_abs"], float(e["max_abs"]))
            worst["rel_rms"] = max(worst["rel_rms"], float(e["rel_rms"]))
    return out


def leaves_of(out: Any) -> tuple[Any, ...]:
    import jax

    return tuple(jax.tree.leaves(jax.block_until_ready(out)))


def output_bytes(compiled: Any) -> int:
    import jax

    return sum(o.size * o.dtype.itemsize for o in jax.tree.leaves(compiled.out_info))


def draw_seed() -> int:
    return int.from_bytes(os.urandom(8), "big") & MAX_SEED


def decisive_clock(args: argparse.Namespace, pinned: int | None) -> Clock:
    """The clock a verdict is decided on: CPU time where this process runs the programs on the one
    core it is pinned to (the CPU platform with ``--pin-cpu``), which a busy machine cannot stretch;
    the wall clock on an accelerator (the host's CPU time says nothing of the device's) and on an
    unpinned CPU (threads running in parallel add their CPU times up)."""
    return "cpu" if args.platform == "cpu" and pinned is not None else "wall"


def pin_to_one_cpu() -> int | None:
    """Restrict this process to one core (the highest-numbered it may use), before JAX sizes
    its CPU thread pool from the affinity mask. None where unsupported (not Linux)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return core


def summary(doc: dict[str, Any]) -> str:
    arms = ", ".join(
        f"{name}: {'verified' if a['verified'] else 'failed: ' + str(a['failure'])}"
        for name, a in doc["arms"].items()
    )
    if doc["mode"] == "gate":
        g = doc["gate"]
        verdict = "passed" if g["passed"] else "failed"
        return f"verify: gate {verdict} ({g['total'] - g['failed']}/{g['total']} programs)"
    if doc.get("identical"):
        return f"verify: {arms}; the arms' programs are identical, nothing timed"
    return f"verify: {arms}; {len(doc.get('rounds', []))} round(s)"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)
