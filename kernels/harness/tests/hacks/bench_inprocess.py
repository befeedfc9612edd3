"""Benchmark one implementation of a target and write a metrics JSON (protected).

    python -m kernels.harness.bench --target gdn --impl pallas --preset tiny \\
        --repeats 10 --warmup 2 --out metrics.json [--trace DIR] [--measure fwd,fwd_bwd] \\
        [--model tiny]

One process measures one implementation: compile (timed apart), warm up, then ``--repeats`` timed
calls per measurement (``perf_counter`` around the call and ``block_until_ready``), alternating
between the input sets of ``spec.BENCH_GATES`` (mild gates, slow decay, the layer's gates).

Nothing the kernel returns is taken on trust. The measured programs are traced and compiled from
abstract shapes (refused if they hold host callbacks or host transfers, or if importing or tracing
the kernel changed timers, JAX options or interpreter hooks); only then is the input seed drawn
from ``os.urandom`` (or taken from ``--seed``), so no kernel code ever sees it. Every array each
measured program returns -- ``fwd``: o and the final state; ``fwd_bwd``: those and all six
gradients -- is checked on every input set against the protected fp32 oracle
(``spec.TOL_BENCH*``) and twice bit for bit against itself, before any timing counts; after timing,
outputs kept from the timed calls must be bit-identical to the verified ones (``verify.py``).

With ``--model``, the same process also times one AdamW training step of a GDN hybrid language
model built on the kernel (``model.py``; measurement ``train_step``), verified the same way against
the same model built on the oracle (``model_verify.py``). MFU is against the device's peak from
``schemas/device-peaks.json`` at the preset's dtype, or, for a device or dtype the table lacks
(every CPU), against the best of a few large matmuls timed here (``device.peak.source`` says
which).
Prints one ``HILLCLIMB_BENCH`` line; ``--out`` gets the metrics JSON
(``schemas/metrics.schema.json``, documented in ``docs/metrics.md``). Exit codes: 0 ok, 1 the
candidate failed a check (one ``bench: failed: …`` line naming what), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from os import urandom  # bound before any kernel code is imported
from pathlib import Path
from time import perf_counter  # likewise (it times compilation; the timing loop is the package's)
from typing import Any

from hillclimb_bench import checks, metrics, timing
from hillclimb_bench.errors import VerificationError

from . import presets as _presets
from . import spec

TARGETS = ("gdn",)
MEASUREMENTS = ("fwd", "fwd_bwd")
MODEL_MEASUREMENT = "train_step"
LINE_PREFIX = "HILLCLIMB_BENCH"
REPO_ROOT = Path(__file__).resolve().parents[2]


class UsageError(Exception):
    """Bad command-line arguments (exit 2)."""


class CandidateError(Exception):
    """The candidate failed a check the bench makes before trusting its timings (exit 1)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _seed(text: str) -> int:
    value = int(text)
    if not 0 <= value < 2**spec.SEED_BITS:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**{spec.SEED_BITS}), got {value}")
    return value


def draw_seed() -> int:
    """A fresh input seed from the OS entropy pool (``spec.SEED_BITS`` bits)."""
    return int.from_bytes(urandom(8), "big") >> (64 - spec.SEED_BITS)


def _measure_list(text: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    bad = [s for s in items if s not in MEASUREMENTS]
    if not items or bad:
        raise argparse.ArgumentTypeError(
            f"expected a comma list of {', '.join(MEASUREMENTS)}, got {text!r}"
        )
    return items


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = _Parser(prog="python -m kernels.harness.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="gdn", choices=TARGETS)
    p.add_argument("--impl", required=True, choices=spec.IMPLS)
    p.add_argument("--preset", required=True, choices=sorted(_presets.PRESETS))
    p.add_argument("--repeats", type=_positive, default=10, help="timed calls per measurement")
    p.add_argument("--warmup", type=_non_negative, default=2, help="untimed calls after compile")
    p.add_argument("--out", type=Path, default=None, help="metrics JSON to write")
    p.add_argument("--trace", type=Path, default=None, help="jax.profiler trace directory")
    p.add_argument("--measure", type=_measure_list, default=MEASUREMENTS, help="fwd,fwd_bwd")
    p.add_argument(
        "--model",
        default=None,
        choices=sorted(_presets.MODEL_PRESETS),
        help="also time one training step of this GDN hybrid model on the kernel "
        "(measurement train_step); its dtype must be the preset's",
    )
    p.add_argument(
        "--seed",
        type=_seed,
        default=None,
        help="input seed, to reproduce a run (default: a fresh one from os.urandom, recorded in "
        "the metrics); the kernel is compiled before the seed is drawn either way",
    )
    p.add_argument(
        "--compile-cache",
        type=Path,
        default=None,
        help="persistent JAX compilation cache directory (compile time is excluded from samples; "
        "repeated runs of the same code then skip XLA compilation)",
    )
    p.add_argument(
        "--pin-cpu",
        action="store_true",
        help="pin the process to one CPU core before JAX starts, so XLA:CPU runs single-threaded "
        "(on a shared or oversubscribed machine its thread pool otherwise stalls parallel ops)",
    )
    p.add_argument(
        "--no-check", action="store_true", help="skip the oracle and determinism check (debug)"
    )
    args = p.parse_args(argv)
    if args.model is not None:
        model_dtype = _presets.MODEL_PRESETS[args.model].dtype
        preset_dtype = _presets.PRESETS[args.preset].dtype
        if model_dtype != preset_dtype:
            raise UsageError(
                f"--model {args.model} is {model_dtype} but --preset {args.preset} is "
                f"{preset_dtype}: MFU of both levels is against one peak, pick presets of one dtype"
            )
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"bench: error: {e}", file=sys.stderr)
        return 2
    try:
        doc = run(args)
    except CandidateError as e:
        print(f"bench: failed: {e}", file=sys.stderr)
        return 1
    print(summary_line(doc, args.out))
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure, check and (with ``--out``) write the metrics; returns the metrics dict."""
    pinned = pin_to_one_cpu() if args.pin_cpu else None
    import jax

    if args.compile_cache is not None:
        jax.config.update("jax_compilation_cache_dir", str(args.compile_cache.resolve()))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    import numpy as np

    from . import flops, guards, model, model_verify, schema, verify

    before = guards.snapshot()  # every harness module is loaded: their functions are in it
    from kernels import gdn as gdn_pkg

    tampered = guards.changed(before)
    if tampered:
        raise CandidateError("importing the kernel changed global state: " + "; ".join(tampered))

    preset = _presets.PRESETS[args.preset]
    model_cfg = None if args.model is None else _presets.MODEL_PRESETS[args.model]
    case = spec.Case(
        B=preset.B, T=preset.T, H=preset.H, K=preset.K, V=preset.V, C=None, dtype=preset.dtype
    )

    def fwd(q, k, v, g, beta, s0):
        return gdn_pkg.gdn(
            q, k, v, g, beta, initial_state=s0, output_final_state=True, impl=args.impl
        )

    def fwd_bwd(q, k, v, g, beta, s0, do, ds):
        out, vjp = jax.vjp(fwd, q, k, v, g, beta, s0)
        # o, S_T and all six gradients are outputs: nothing is dead code, and all are verified.
        return (*out, *vjp((do, ds)))

    fns = {"fwd": fwd, "fwd_bwd": fwd_bwd}
    check = not args.no_check

    # Everything is traced and compiled from abstract shapes, before any input exists: kernel code
    # runs only while importing and tracing, so it never sees a value or the seed it is judged on.
    interpret = False
    kernel_chunk = None
    for name in args.measure:
        abstract = verify.abstract_args(case, name)
        found_interpret, found_chunk = inspect_program(name, jax.make_jaxpr(fns[name])(*abstract))
        interpret = interpret or found_interpret
        kernel_chunk = kernel_chunk if kernel_chunk is not None else found_chunk
    chunk_size = (
        kernel_chunk
        if kernel_chunk is not None
        else gdn_pkg.resolve_chunk_size(args.impl, T=case.T, K=case.K, V=case.V)
    )

    compiled: dict[str, Any] = {}
    compile_ms: dict[str, float] = {}
    for name in MEASUREMENTS:
        if name not in args.measure:
            continue
        t0 = perf_counter()
        compiled[name] = jax.jit(fns[name]).lower(*verify.abstract_args(case, name)).compile()
        compile_ms[name] = (perf_counter() - t0) * 1e3
        _refuse_host_round_trips(name, compiled[name])
    step_programs: dict[str, Any] = {}
    if model_cfg is not None:
        # The model on the kernel, traced once: checked for callbacks, then compiled.
        t0 = perf_counter()
        traced = jax.jit(
            model.make_train_step(model_cfg, model_verify.kernel_core(gdn_pkg.gdn, args.impl))
        ).trace(*model_verify.abstract_step_args(model_cfg))
        found_interpret, _ = inspect_program(MODEL_MEASUREMENT, traced.jaxpr)
        interpret = interpret or found_interpret
        step_programs["candidate"] = traced.lower().compile()
        compile_ms[MODEL_MEASUREMENT] = (perf_counter() - t0) * 1e3
        _refuse_host_round_trips(MODEL_MEASUREMENT, step_programs["candidate"])
        if check:
            step_programs["oracle"] = model_verify.compile_step(model_cfg, model_verify.oracle_core)
            step_programs["optimizer"] = model_verify.compile_optimizer(model_cfg)
    # The kernel's code has finished running; from here on only compiled programs execute.
    tampered = guards.changed(before)
    if tampered:
        raise CandidateError("compiling the kernel changed global state: " + "; ".join(tampered))
    seed_source = "argument" if args.seed is not None else "os.urandom"
    seed = args.seed if args.seed is not None else draw_seed()
    sets = verify.input_sets(case, seed=seed)
    # Every timed quantity on every timed input set, before any timing counts.
    verified, errors = _verify(compiled, sets, case) if check else ({}, {})
    model_check = None
    if model_cfg is not None:
        model_check = _verify_model(model_cfg, step_programs, seed=seed, check=check)
        errors.update(model_check.errors)

    measurements: dict[str, Any] = {}
    device = jax.devices()[0]
    spot_rng = np.random.default_rng([seed, len(sets)])
    compared = 0
    timed: dict[str, Any] = {}
    for name in args.measure:
        samples, kept = _time_and_keep(
            name,
            compiled[name],
            [input_set.call_args(name) for input_set in sets],
            args=args,
            rng=spot_rng if check else None,
        )
        if check:
            _spot_check(
                name,
                kept,
                [verified[name][s.index] for s in sets],
                [s.label for s in sets],
                names=verify.QUANTITIES[name],
                repeats=args.repeats,
            )
        compared += len(kept)
        del kept
        timed[name] = samples
    if model_check is not None:
        samples, kept = _time_and_keep(
            MODEL_MEASUREMENT,
            step_programs["candidate"],
            [s.args for s in model_check.sets],
            args=args,
            rng=spot_rng if check else None,
        )
        if check:
            _spot_check(
                MODEL_MEASUREMENT,
                kept,
                model_check.verified,
                [s.label for s in model_check.sets],
                names=model_verify.output_names(model_check.verified[0]),
                repeats=args.repeats,
            )
        compared += len(kept)
        del kept
        timed[MODEL_MEASUREMENT] = samples

    # The peak every MFU here is against: the table's, else one measured now (after timing, so the
    # matmuls disturb nothing timed).
    peak = _device_peak(device.device_kind, preset.dtype)
    for name, samples in timed.items():
        if name == MODEL_MEASUREMENT:
            assert model_cfg is not None
            work = flops.train_step_flops(model_cfg)
            executed = None
            tokens = model_cfg.tokens_per_step
        else:
            work = flops.model_flops(
                B=case.B, T=case.T, H=case.H, K=case.K, V=case.V, measurement=name
            )
            executed = flops.executed_flops(
                impl=args.impl,
                B=case.B,
                T=case.T,
                H=case.H,
                K=case.K,
                V=case.V,
                chunk_size=chunk_size,
                measurement=name,
            )
            tokens = case.B * case.T
        measurements[name] = metrics.measurement(
            samples,
            flops=work,
            executed_flops=executed,
            tokens=tokens,
            peak_flops_per_s=peak["flops_per_s"],
        )

    trace_dir = None
    if args.trace is not None:
        calls = {n: (compiled[n], sets[0].call_args(n)) for n in args.measure}
        if model_check is not None:
            calls[MODEL_MEASUREMENT] = (step_programs["candidate"], model_check.sets[0].args)
        trace_dir = _capture_trace(args.trace, calls)

    tampered = guards.changed(before)
    if tampered:
        raise CandidateError("global state changed while measuring: " + "; ".join(tampered))

    gates = ", ".join(f"{s.gates}" for s in sets)
    notes = [
        f"devices: {jax.device_count()} available, 1 used (single-device jit)",
        f"inputs alternate between {len(sets)} sets ({gates} gates) drawn from seed {seed} "
        f"({seed_source}); timing does not depend on values",
    ]
    if check:
        notes.append(
            "verified before timing: every returned array of every measured program on every "
            f"input set vs the fp32 oracle; {compared} timed outputs bit-identical to the verified"
        )
    else:
        notes.append("--no-check: nothing was verified; these timings are not evidence")
    if model_cfg is not None:
        notes.append(
            f"train_step: one AdamW step of the {model_cfg.name} GDN hybrid on the kernel; timed "
            f"calls alternate over the inputs of its first {spec.MODEL_STEPS} steps"
            + (", each verified against the same model on the fp32 oracle" if check else "")
        )
    if pinned is not None:
        notes.append(f"process pinned to CPU core {pinned} (--pin-cpu): XLA:CPU single-threaded")
    if interpret:
        notes.append("Pallas ran in interpret mode: timings say nothing about TPU speed")
    if peak["source"] == "measured":
        notes.append(
            f"{peak['warning']}: MFU is against a measured matmul peak (the best of "
            f"{peak['measured']['repeats']} {peak['measured']['n']}^3 {preset.dtype} matmuls in "
            "this process), not a datasheet number"
        )
    if trace_dir is not None:
        notes.append(
            f"the trace holds {TRACE_STEPS} untimed steps per measurement, after a warm-up call"
        )
    doc = {
        "schema": schema.SCHEMA_ID,
        "target": args.target,
        "impl": args.impl,
        "preset": preset.name,
        "created_at": metrics.created_at(),
        "device": {
            "backend": jax.default_backend(),
            "kind": device.device_kind,
            "count": 1,
            "peak_flops_per_s": peak["flops_per_s"],
            "interpret": interpret,
            "peak": peak,
        },
        "shapes": {
            "B": case.B,
            "T": case.T,
            "H": case.H,
            "K": case.K,
            "V": case.V,
            "chunk_size": int(chunk_size),
        },
        "dtype": preset.dtype,
        "timing": {
            "warmup": args.warmup,
            "repeats": args.repeats,
            "clock": metrics.CLOCK_JAX,
            "compile_ms": {k: round(v, 3) for k, v in compile_ms.items()},
        },
        "measurements": measurements,
        "versions": metrics.versions(jax),
        "git": metrics.git_state(REPO_ROOT),
        "trace_dir": None if trace_dir is None else str(trace_dir),
        "verification": {
            "seed": seed,
            "seed_source": seed_source,
            "input_sets": [s.gates for s in sets],
            "verified": check,
            "timed_outputs_compared": compared,
            "errors": errors,
        },
        "notes": notes,
    }
    if model_cfg is not None and model_check is not None:
        doc["model"] = _model_section(model_cfg, model_check, verified=check)
    problems = schema.validate(doc)
    if problems:  # a harness bug, never the candidate's fault: fail loudly
        raise RuntimeError(
            "metrics do not match schemas/metrics.schema.json: " + "; ".join(problems)
        )
    if args.out is not None:
        metrics.write(args.out, doc)
    return doc


def _refuse_host_round_trips(name: str, compiled: Any) -> None:
    from . import verify

    round_trips = verify.host_round_trips(compiled.as_text())
    if round_trips:
        raise CandidateError(
            f"{name}: the compiled program talks to the host: " + "; ".join(round_trips[:3])
        )


def _time_and_keep(
    name: str, compiled: Any, call_args: list[Any], *, args: argparse.Namespace, rng: Any
) -> tuple[list[float], dict[int, Any]]:
    """Time ``args.repeats`` calls alternating over ``call_args`` (``hillclimb_bench.timing``),
    keeping the outputs of the calls the spot check will compare (none without ``rng``, i.e.
    with ``--no-check``)."""
    import jax

    keep: list[int] = []
    if rng is not None:
        per_call = sum(o.size * o.dtype.itemsize for o in jax.tree.leaves(compiled.out_info))
        keep = checks.spot_check_indices(args.repeats, per_call, rng, budget=spec.SPOT_CHECK_BYTES)
    try:
        return timing.time_calls(
            name,
            compiled,
            call_args,
            repeats=args.repeats,
            warmup=args.warmup,
            block=jax.block_until_ready,
            keep=frozenset(keep),
        )
    except VerificationError as e:
        raise CandidateError(str(e)) from None


def _device_peak(device_kind: str, dtype: str) -> dict[str, Any]:
    """``device.peak`` of the metrics: the table's peak at ``dtype``, or a measured one."""
    from . import flops

    peak = flops.peak_entry(device_kind, dtype)
    if peak["source"] == "measured":
        _err(f"warning: {peak['warning']}: measured a matmul peak instead")
    return peak


def _verify_model(cfg: Any, programs: dict[str, Any], *, seed: int, check: bool) -> Any:
    """The model's timed input sets and, unless ``--no-check``, their verification."""
    import jax

    from . import model_verify, verify

    if check:
        try:
            return model_verify.verify_model(
                cfg,
                programs["candidate"],
                programs["oracle"],
                programs["optimizer"],
                seed=seed,
                identical=lambda a, b: _identical(
                    MODEL_MEASUREMENT, _leaves(a), tuple(jax.tree.leaves(b))
                ),
            )
        except verify.MismatchError as e:
            raise CandidateError(str(e)) from None
    return model_verify.unverified_sets(cfg, programs["candidate"], seed=seed)


def _model_section(cfg: Any, check: Any, *, verified: bool) -> dict[str, Any]:
    """``model`` of the metrics: what was trained and how its step was counted and checked."""
    from . import flops, model, model_verify

    per_token = flops.model_flops_per_token(cfg)
    return {
        "preset": cfg.name,
        "config": cfg.as_dict(),
        "params": model.param_count(model_verify.abstract_step_args(cfg)[0]),
        "gdn_layers": cfg.gdn_layers,
        "gdn_layer_shape": {
            "B": cfg.batch,
            "T": cfg.seq_len,
            "H": cfg.heads,
            "K": cfg.head_dim,
            "V": cfg.head_dim,
        },
        "tokens_per_step": cfg.tokens_per_step,
        "flops_per_token": {**per_token, "total": sum(per_token.values())},
        "optimizer": (
            f"AdamW lr={cfg.learning_rate:g} b1={cfg.b1:g} b2={cfg.b2:g} eps={cfg.eps:g} "
            f"weight_decay={cfg.weight_decay:g}"
        ),
        "verification": {
            "steps": spec.MODEL_STEPS,
            "verified": verified,
            "losses": check.losses,
            "oracle_losses": check.oracle_losses if verified else None,
        },
    }


def _verify(
    compiled: dict[str, Any], sets: list[Any], case: spec.Case
) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, dict[str, float]]]:
    """Check every array each measured program returns, on every input set, against the oracle
    (and twice, bit for bit, against itself). Returns the verified outputs per measurement and
    input set, which timed outputs must equal bit for bit, and the worst errors per quantity."""
    import jax
    import numpy as np

    from . import verify

    measure = list(compiled)
    oracle_name = "fwd_bwd" if "fwd_bwd" in measure else "fwd"  # its o and S_T serve fwd too
    oracle = verify.oracle_program(case, oracle_name)
    verified: dict[str, list[tuple[Any, ...]]] = {n: [] for n in measure}
    errors: dict[str, dict[str, float]] = {}
    for input_set in sets:
        want = tuple(jax.block_until_ready(oracle(*input_set.call_args(oracle_name))))
        for name in measure:
            out = _leaves(compiled[name](*input_set.call_args(name)))
            try:
                result = verify.compare(name, input_set, out, want, dtype=case.dtype)
            except verify.MismatchError as e:
                raise CandidateError(str(e)) from None
            again = _leaves(compiled[name](*input_set.call_args(name)))
            if not np.asarray(_identical(name, out, again)).all():
                raise CandidateError(
                    f"{name} is not deterministic: two calls on {input_set.label} differ"
                )
            verified[name].append(out)
            for quantity, (max_abs, rel_rms) in result.items():
                worst = errors.setdefault(f"{name}.{quantity}", {"max_abs": 0.0, "rel_rms": 0.0})
                worst["max_abs"] = max(worst["max_abs"], max_abs)
                worst["rel_rms"] = max(worst["rel_rms"], rel_rms)
    return verified, errors


def _spot_check(
    name: str,
    kept: dict[int, Any],
    verified: list[Any],
    labels: list[str],
    *,
    names: tuple[str, ...] | list[str],
    repeats: int,
) -> None:
    """After timing: each kept output of a timed call must be bit-identical to the verified output
    for the same inputs (``hillclimb_bench.checks.check_kept``, compared on the device; the bench
    already required two verification calls to agree bit for bit), so a kernel that computes
    something else on later calls is caught. ``names`` name the outputs' arrays, in leaf order."""
    import jax

    try:
        checks.check_kept(
            name,
            {r: _leaves(out) for r, out in kept.items()},
            [tuple(jax.tree.leaves(v)) for v in verified],
            labels=labels,
            names=names,
            repeats=repeats,
            identical=lambda a, b: _identical(name, tuple(a), tuple(b)),
        )
    except VerificationError as e:
        raise CandidateError(str(e)) from None


def _leaves(out: Any) -> tuple[Any, ...]:
    import jax

    return tuple(jax.tree.leaves(jax.block_until_ready(out)))


_IDENTITY: dict[tuple[Any, ...], Any] = {}


def _identical(name: str, a: tuple[Any, ...], b: tuple[Any, ...]) -> Any:
    """Per-array bitwise equality, by a program compiled once per output signature."""
    from . import verify

    key = tuple((x.shape, str(x.dtype)) for x in a)
    if key not in _IDENTITY:
        _IDENTITY[key] = verify.identity_program(a)
    return _IDENTITY[key](a, b)


def pin_to_one_cpu() -> int | None:
    """Restrict this process to one core (the highest-numbered it may use); must run before JAX
    creates its CPU client, which sizes its thread pool from the affinity mask. None if
    unsupported (not Linux)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return core


def _err(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr)


def inspect_program(name: str, closed_jaxpr: Any) -> tuple[bool, int | None]:
    """Refuse host callbacks anywhere in the measured program; report whether any pallas_call
    runs in interpret mode and the chunk (second-to-last dim of the first kernel's first block)."""
    from . import tpu_rules

    eqns = list(tpu_rules.iter_eqns(closed_jaxpr.jaxpr))
    bad = sorted({e.primitive.name for e in eqns} & spec.FORBIDDEN_BENCH_PRIMITIVES)
    if bad:
        raise CandidateError(f"{name}: the measured program contains host callbacks {bad}")
    interpret = False
    chunk = None
    for e in eqns:
        if e.primitive.name != "pallas_call":
            continue
        info = tpu_rules.describe(e)
        interpret = interpret or bool(info.interpret)
        if chunk is None and info.blocks and len(info.blocks[0][1]) >= 2:
            chunk = info.blocks[0][1][-2]
    return interpret, chunk


TRACE_STEPS = 5
"""Profiled steps per measurement: enough for a median, few enough that the trace stays small."""


def _capture_trace(trace: Path, calls: dict[str, tuple[Any, tuple[Any, ...]]]) -> Path:
    """Profile TRACE_STEPS steady-state steps of each measured call after an untraced warm-up call.

    Each step is a ``StepTraceAnnotation`` named ``hillclimb_<measurement>`` with its ``step_num``,
    so the trace analysis takes its steps (and their median) from the measured call itself.
    """
    import jax

    trace_dir = trace.resolve()
    trace_dir.mkdir(parents=True, exist_ok=True)
    for compiled, call_args in calls.values():
        jax.block_until_ready(compiled(*call_args))
    with jax.profiler.trace(str(trace_dir), create_perfetto_trace=True):
        for name, (compiled, call_args) in calls.items():
            for step in range(TRACE_STEPS):
                with jax.profiler.StepTraceAnnotation(f"hillclimb_{name}", step_num=step):
                    jax.block_until_ready(compiled(*call_args))
    runs = sorted((trace_dir / "plugins" / "profile").glob("*"))
    if (
        not runs
        or not list(runs[-1].glob("*.xplane.pb"))
        or not list(runs[-1].glob("perfetto_trace.json.gz"))
    ):
        raise CandidateError(
            f"profiler wrote no xplane.pb / perfetto_trace.json.gz under {trace_dir}"
        )
    return trace_dir


def summary_line(metrics: dict[str, Any], out: Path | None) -> str:
    """The one parseable line: ``HILLCLIMB_BENCH key=value ...``; empty value = not measured.
    ``mfu`` is the kernel's (``fwd_bwd``, else ``fwd``), ``model_mfu`` the training step's; both
    against ``peak`` (``table`` or ``measured``, see ``device.peak``)."""
    m = metrics["measurements"]
    primary = m.get("fwd_bwd") or m.get("fwd")
    step = m.get(MODEL_MEASUREMENT)

    def num(x: float | None) -> str:
        return "" if x is None else f"{x:.6g}"

    peak = metrics["device"].get("peak") or {}
    fields = {
        "target": metrics["target"],
        "impl": metrics["impl"],
        "preset": metrics["preset"],
        "model": (metrics.get("model") or {}).get("preset", ""),
        "backend": metrics["device"]["backend"],
        "interpret": int(metrics["device"]["interpret"]),
        "chunk_size": metrics["shapes"]["chunk_size"],
        "fwd_ms": num(m["fwd"]["median_ms"]) if "fwd" in m else "",
        "fwd_bwd_ms": num(m["fwd_bwd"]["median_ms"]) if "fwd_bwd" in m else "",
        "train_step_ms": num(step["median_ms"]) if step else "",
        "tflops": num(primary["tflops_per_s"]) if primary else "",
        "mfu": num(primary["mfu"]) if primary else "",
        "model_mfu": num(step["mfu"]) if step else "",
        "peak": peak.get("source", ""),
        "metrics": "" if out is None else str(out),
    }
    return LINE_PREFIX + " " + " ".join(f"{k}={v}" for k, v in fields.items())


if __name__ == "__main__":
    code = main()
    # Leave without running atexit handlers: a kernel could have registered one to rewrite the
    # metrics file after it was written (the guards cannot list them).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
