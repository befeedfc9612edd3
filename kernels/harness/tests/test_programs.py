"""The gdn target's programs through both steps: the export (the only process that imports
``kernels.gdn``) writes the tiny preset's programs and the gate's matrix; the verifier, started in a
copy of the tree without ``kernels/gdn``, verifies every program against the oracle on inputs from a
fresh seed, times two implementations call by call (measure), traces them (profile) and writes
schema-valid metrics. FLOP, peak and MFU conventions below.

The processes run on CPU (``JAX_PLATFORMS=cpu``) even on a TPU host: they check the mechanics, and
the pytest process already holds the TPU (one process per TPU)."""

from __future__ import annotations

import copy
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import hillclimb_bench
import pytest
from hillclimb_bench import programs as program_files

from kernels.harness import flops, schema, spec, verify
from kernels.harness.presets import MODEL_PRESETS, PRESETS
from kernels.harness.programs import GdnTarget, gate_draws, make_target

# Tests of the harness, not of the kernel: the candidate gates deselect them (-m 'not harness').
pytestmark = pytest.mark.harness

REPO = Path(__file__).resolve().parents[3]
REPEATS = 3
ROUNDS = 2
TARGET_ARGS = ["--preset", "tiny", "--model", "tiny"]
DRAW = 11


def tree(dest: Path, *, kernel: bool) -> Path:
    """A copy of the kernel workspace: with ``kernels/gdn`` (an arm's tree) or without (the
    verifier's, as hillclimb builds it)."""
    shutil.copytree(
        REPO / "kernels", dest / "kernels", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(
        REPO / "packages", dest / "packages", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(REPO / "schemas", dest / "schemas")
    if not kernel:
        shutil.rmtree(dest / "kernels" / "gdn")
    return dest


def run(cwd: Path, *argv: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_TRACEBACK_IN_LOCATIONS_LIMIT": "0"}
    return subprocess.run(
        [sys.executable, *flags, "-m", "kernels.harness.programs", *argv],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip


def request_file(out: Path, *, bench_only: bool = False) -> Path:
    """The request file of ``DRAW`` (what hillclimb's requests step writes), or only its timed
    programs."""
    target = GdnTarget("tiny", "tiny")
    requests = target.requests(draw=DRAW)
    if bench_only:
        requests = target.timed(requests)
    path = out.parent / f"{out.name}.requests.json"
    return program_files.write_requests(path, requests, target="gdn", versions={})


def export(
    cwd: Path,
    out: Path,
    *,
    bench_only: bool = False,
    impl: str = "pallas",
    platform: str = "cpu",
) -> Path:
    requests = request_file(out, bench_only=bench_only)
    proc = run(
        cwd, "export", "--platform", platform, "--requests", str(requests), "--out", str(out),
        "--", *TARGET_ARGS, "--impl", impl,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def verify_session(cwd: Path, out: Path, *argv: str, cache: Path) -> dict:
    proc = run(
        cwd, "verify", "--platform", "cpu", "--draw", str(DRAW), "--out", str(out),
        "--compile-cache", str(cache), *argv, "--", *TARGET_ARGS,
        flags=("-E", "-s"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def sessions(tmp_path_factory, bench_compile_cache):
    """Programs exported from an arm's tree (pallas, and chunked_xla as the other arm); the gate,
    a measure and a profile session of the verifier in a tree without the kernel."""
    root = tmp_path_factory.mktemp("programs")
    arm = tree(root / "arm", kernel=True)
    pallas = export(arm, root / "pallas")
    xla = export(arm, root / "xla", bench_only=True, impl="chunked_xla")
    where = tree(root / "verifier", kernel=False)
    gate = verify_session(
        where,
        root / "gate.json",
        "--mode",
        "gate",
        "--arm",
        f"B={pallas}",
        cache=bench_compile_cache,
    )
    measure = verify_session(
        where, root / "measure.json", "--mode", "measure",
        "--arm", f"A={xla}", "--arm", f"B={pallas}",
        "--rounds", str(ROUNDS), "--repeats", str(REPEATS), "--warmup", "1", "--pin-cpu",
        cache=bench_compile_cache,
    )  # fmt: skip
    trace = root / "trace"
    profile = verify_session(
        where, root / "profile.json", "--mode", "profile", "--arm", f"B={pallas}",
        "--repeats", str(REPEATS), "--warmup", "1", "--trace", str(trace),
        cache=bench_compile_cache,
    )  # fmt: skip
    return {
        "root": root, "pallas": pallas, "xla": xla, "where": where, "gate": gate,
        "measure": measure, "profile": profile, "trace": trace,
    }  # fmt: skip


@pytest.fixture(scope="module")
def tiny_run(sessions):
    """The candidate's (pallas) metrics of the measure session's first round."""
    return sessions["measure"]["rounds"][0]["B"]


def test_the_export_wrote_every_requested_program(sessions):
    manifest = json.loads((sessions["pallas"] / "manifest.json").read_text())
    keys = {p["key"] for p in manifest["programs"]}
    wanted = {r.key for r in GdnTarget("tiny", "tiny").requests(draw=DRAW)}
    assert keys == wanted
    assert {k.split("@")[0] for k in keys} == {"fwd", "fwd_bwd", "train_step"}
    assert manifest["source"]["kernel_modules"] == {"kernels.gdn": "kernels/gdn/__init__.py"}
    info = manifest["source"]["info"][f"fwd_bwd@{spec.Case(1, 256, 2, 32, 32).id}"]
    assert info == {"chunk_size": 64, "interpret": True}


def test_the_gate_verifies_the_matrix_and_drawn_shapes(sessions):
    gate = sessions["gate"]["gate"]
    assert gate["passed"] is True, [p for p in gate["programs"] if p["status"] != "passed"]
    cases = {p["case"] for p in gate["programs"] if p["purpose"] == "gate"}
    assert {c.id for c in spec.GATE_CASES} <= cases
    assert {c.id for c in gate_draws(DRAW)} <= cases
    assert gate_draws(DRAW) != gate_draws(DRAW + 1)
    assert sessions["gate"]["isolation"]["kernel_modules_loaded"] == []
    assert sessions["gate"]["isolation"]["ignore_environment"] is True


def test_the_verifier_never_loads_the_kernel_even_where_it_exists(sessions, bench_compile_cache):
    """The target module imports kernels.gdn only in build(): a verifier started in a full tree
    still has no module of the kernel loaded (the session records it; a breach would exit 3)."""
    out = sessions["root"] / "full-tree.json"
    session = verify_session(
        REPO, out, "--mode", "measure", "--arm", f"A={sessions['xla']}", "--arm",
        f"B={sessions['xla']}", cache=bench_compile_cache,
    )  # fmt: skip
    assert session["isolation"]["kernel_modules_loaded"] == []
    assert session["identical"] is True


def test_metrics_validate_against_the_schema(sessions):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in requirements-dev.txt")
    validator = jsonschema.Draft7Validator(
        schema.load_schema(), format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )
    docs = [r[arm] for r in sessions["measure"]["rounds"] for arm in "AB"]
    docs.append(sessions["profile"]["profile"]["metrics"])
    for doc in docs:
        assert schema.validate(doc) == []
        assert [e.message for e in validator.iter_errors(doc)] == []


def test_rounds_time_both_arms_call_by_call_with_their_program_hashes(sessions):
    m = sessions["measure"]
    assert m["identical"] is False
    assert len(m["rounds"]) == ROUNDS
    for i, r in enumerate(m["rounds"]):
        for arm in "AB":
            doc = r[arm]
            assert doc["session"] == {
                "round": i + 1,
                "rounds": ROUNDS,
                "arm": arm,
                "first": r["first"],
            }
            assert doc["programs"]["sha256"] == m["arms"][arm]["programs"]
            assert len(doc["programs"]["sha256"]) == 3
            assert doc["verification"]["timed_outputs_compared"] == 3 * REPEATS
    # Both arms' MFU is against one peak, measured once in the process.
    peaks = {json.dumps(r[arm]["device"]["peak"]) for r in m["rounds"] for arm in "AB"}
    assert len(peaks) == 1


def test_metrics_are_consistent(tiny_run):
    m = tiny_run
    preset = PRESETS["tiny"]
    assert m["schema"] == schema.SCHEMA_ID
    assert (m["target"], m["impl"], m["preset"], m["dtype"]) == (
        "gdn", "pallas", "tiny", preset.dtype
    )  # fmt: skip
    shapes = m["shapes"]
    assert (shapes["B"], shapes["T"], shapes["H"], shapes["K"], shapes["V"]) == (
        preset.B, preset.T, preset.H, preset.K, preset.V
    )  # fmt: skip
    assert shapes["chunk_size"] % 8 == 0
    assert m["timing"]["repeats"] == REPEATS
    assert set(m["timing"]["compile_ms"]) >= {"fwd", "fwd_bwd", "train_step"}
    assert m["device"]["backend"] == "cpu"
    assert m["device"]["interpret"] is True
    assert m["timing"]["clock"] == "process_time+block_until_ready (one pinned core)"
    assert m["timing"]["wall_clock"] == "perf_counter+block_until_ready"
    # CPU is not in the peak table: the peak is measured, in the verifier, at the preset's dtype.
    peak = m["device"]["peak"]
    assert peak["source"] == "measured"
    assert peak["dtype"] == "fp32"
    assert peak["warning"] == "device kind 'cpu' is not in schemas/device-peaks.json"
    assert peak["flops_per_s"] == m["device"]["peak_flops_per_s"] > 0
    assert peak["flops_per_s"] == pytest.approx(
        2 * peak["measured"]["n"] ** 3 / min(peak["measured"]["samples_ms"]) * 1e3
    )
    assert any("measured matmul peak" in note for note in m["notes"])
    fwd_flops = flops.model_flops(
        B=preset.B, T=preset.T, H=preset.H, K=preset.K, V=preset.V, measurement="fwd"
    )
    for name, mult in (("fwd", 1), ("fwd_bwd", 3)):
        meas = m["measurements"][name]
        samples = meas["samples_ms"]
        assert len(samples) == REPEATS
        # Pinned on a CPU: CPU time decides, the wall clock of the same calls beside it, never less.
        wall = meas["wall_samples_ms"]
        assert len(wall) == REPEATS
        assert all(c <= w + 0.05 for c, w in zip(samples, wall, strict=True))
        assert meas["wall_median_ms"] == pytest.approx(sorted(wall)[REPEATS // 2], abs=1e-6)
        assert min(samples) <= meas["median_ms"] <= max(samples)
        assert meas["p10_ms"] <= meas["median_ms"] <= meas["p90_ms"]
        assert meas["flops"] == pytest.approx(mult * fwd_flops)
        assert meas["tflops_per_s"] == pytest.approx(meas["flops"] / meas["median_ms"] / 1e9)
        assert meas["tokens_per_s"] == pytest.approx(preset.B * preset.T / meas["median_ms"] * 1e3)
        assert meas["mfu"] == pytest.approx(
            meas["flops"] / (meas["median_ms"] / 1e3) / peak["flops_per_s"]
        )
    assert m["git"]["commit"] is None or len(m["git"]["commit"]) == 40


def test_every_timed_quantity_was_verified_on_fresh_inputs(tiny_run):
    m = tiny_run
    ver = m["verification"]
    assert ver["seed_source"] == "os.urandom"
    assert 0 <= ver["seed"] < 2**spec.SEED_BITS
    assert [label.split(", ")[1].split(" ")[0] for label in ver["input_sets"]] == list(
        spec.BENCH_GATES
    )
    assert ver["verified"] is True
    # Every timed output of the three measurements was kept (they fit the budget) and
    # bit-identical to the verified one.
    expected = {f"{name}.{q}" for name in verify.MEASUREMENTS for q in verify.QUANTITIES[name]}
    model_checks = {
        "train_step.loss": spec.TOL_MODEL_LOSS["float32"],
        "train_step.first_moment": spec.TOL_MODEL_MOMENT["float32"],
        "train_step.second_moment": spec.TOL_MODEL_MOMENT["float32"],
        "train_step.update": spec.TOL_MODEL_UPDATE,
        "train_step.trajectory_loss": spec.TOL_MODEL_TRAJECTORY["float32"],
    }
    assert set(ver["errors"]) == expected | set(model_checks)
    for key, err in ver["errors"].items():
        tol = model_checks.get(key) or verify.tolerance(key.split(".")[1], m["dtype"])
        assert err["rel_rms"] <= tol.rel_rms or err["max_abs"] <= tol.atol, key
    assert ver["timed_outputs_compared"] == 3 * REPEATS
    assert any(str(ver["seed"]) in note for note in m["notes"])


def test_the_model_step_was_timed_and_its_losses_match_the_oracle_model(tiny_run):
    """train_step: one AdamW step of the tiny hybrid on the kernel; the loss after each of the
    verified steps agrees with the same model on the fp32 oracle, each run on its own."""
    m = tiny_run
    cfg = MODEL_PRESETS["tiny"]
    model = m["model"]
    assert model["preset"] == "tiny"
    assert model["config"]["layer_kinds"] == ["gdn", "gdn", "gdn", "attention"]
    assert model["gdn_layers"] == 3
    assert model["tokens_per_step"] == cfg.batch * cfg.seq_len
    assert model["flops_per_token"]["total"] == pytest.approx(
        sum(flops.model_flops_per_token(cfg).values())
    )
    # The tiny model's GDN layers have the tiny kernel preset's shape: both levels time one layer.
    p = PRESETS["tiny"]
    assert model["gdn_layer_shape"] == {"B": p.B, "T": p.T, "H": p.H, "K": p.K, "V": p.V}
    step = m["measurements"]["train_step"]
    assert len(step["samples_ms"]) == REPEATS
    assert step["flops"] == pytest.approx(flops.train_step_flops(cfg))
    assert step["tokens_per_s"] == pytest.approx(cfg.batch * cfg.seq_len / step["median_ms"] * 1e3)
    ver = model["verification"]
    assert ver["verified"] is True
    assert len(ver["losses"]) == len(ver["oracle_losses"]) == spec.MODEL_STEPS
    tol = spec.TOL_MODEL_TRAJECTORY["float32"].rel_rms
    for mine, oracle in zip(ver["losses"], ver["oracle_losses"], strict=True):
        assert abs(mine - oracle) <= tol * abs(oracle)
    # Random tokens over a 256-token vocabulary: the loss starts near log(256).
    assert ver["losses"][0] == pytest.approx(5.545, abs=0.05)


def test_a_seed_reproduces_the_inputs_of_a_session(sessions, tiny_run, bench_compile_cache):
    """--seed gives a session the inputs of an earlier one: the same errors against the oracle."""
    seed = tiny_run["verification"]["seed"]
    again = verify_session(
        sessions["where"], sessions["root"] / "again.json", "--mode", "measure",
        "--arm", f"A={sessions['xla']}", "--arm", f"B={sessions['pallas']}", "--rounds", "1",
        "--repeats", "1", "--warmup", "0", "--seed", str(seed), cache=bench_compile_cache,
    )["rounds"][0]["B"]["verification"]  # fmt: skip
    assert again["seed"] == seed
    assert again["seed_source"] == "argument"
    for key in ("fwd.o", "fwd.final_state", "fwd_bwd.dg"):
        assert again["errors"][key] == tiny_run["verification"]["errors"][key]


def test_drawn_seeds_are_fresh_and_fit_a_json_number():
    from hillclimb_bench import verify as verifier

    seeds = {verifier.draw_seed() for _ in range(8)}
    assert len(seeds) == 8
    assert all(0 <= s < 2**spec.SEED_BITS <= 2**53 for s in seeds)


def test_the_profile_traces_steady_state_steps_of_each_program(sessions):
    """The verifier's profile: TRACE_STEPS step annotations per verified program, numbered, and no
    traced warm-up call; xplane and perfetto files both written."""
    from hillclimb_bench import verify as verifier

    trace = sessions["trace"]
    metrics = sessions["profile"]["profile"]["metrics"]
    assert metrics["trace_dir"] == str(trace.resolve())
    runs = list((trace / "plugins" / "profile").iterdir())
    assert len(runs) == 1
    names = [p.name for p in runs[0].iterdir()]
    assert any(n.endswith(".xplane.pb") for n in names)
    (perfetto,) = runs[0].glob("perfetto_trace.json.gz")
    events = json.loads(gzip.decompress(perfetto.read_bytes()))["traceEvents"]
    assert set(metrics["measurements"]) == {"fwd", "fwd_bwd", "train_step"}
    for name in metrics["measurements"]:
        steps = [e for e in events if e.get("name") == f"hillclimb_{name}" and e.get("ph") == "X"]
        assert len(steps) == verifier.TRACE_STEPS, name
        assert sorted(int(e["args"]["step_num"]) for e in steps) == list(
            range(verifier.TRACE_STEPS)
        )


def test_tpu_programs_lower_to_mosaic_without_a_tpu(sessions):
    """The export for a TPU runs here (jax.export lowers Pallas to Mosaic on CPU): every program the
    TPU verifier would time carries a Mosaic kernel and nothing else it would refuse."""
    root = sessions["root"]
    out = export(root / "arm", root / "tpu", bench_only=True, platform="tpu")
    target = GdnTarget("tiny", "tiny")
    for request in target.timed(target.requests(draw=DRAW)):
        loaded = program_files.load(out, request, platform="tpu")
        assert loaded.custom_calls == ("tpu_custom_call",), request.key


@pytest.mark.parametrize(
    "argv",
    [
        ["--preset", "huge"],
        ["--preset", "tiny", "--impl", "cuda"],
        ["--preset", "tiny", "--model", "7b"],
        ["--preset", "130m-layer", "--model", "tiny"],
        ["--preset", "tiny", "--bogus"],
        [],
    ],
    ids=["preset", "impl", "model", "model-dtype-differs", "unknown-flag", "missing-preset"],
)
def test_bad_target_arguments_are_usage_errors(argv):
    with pytest.raises(hillclimb_bench.UsageError):
        make_target(argv)


def test_bad_arguments_in_a_fresh_process_exit_2_with_one_line(tmp_path):
    for argv in (
        ["verify", "--mode", "gate", "--platform", "cpu", "--draw", "1", "--arm", "B=x", "--out",
         str(tmp_path / "o.json"), "--", "--preset", "huge"],
        ["export", "--platform", "cpu", "--out", str(tmp_path / "p")],
    ):  # fmt: skip
        proc = run(REPO, *argv)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert proc.stderr.count("\n") == 1, proc.stderr


def test_host_callbacks_are_refused_by_the_export_and_by_the_verifier(tmp_path):
    """The export's own check (the jaxpr) is a courtesy to an honest author; the verifier's walk of
    the serialized module is the boundary (hillclimb_bench's tests craft such modules)."""
    import jax

    target = GdnTarget("tiny")
    request = target.timed(target.requests(draw=1))[0]

    def sneaky(*args):
        return jax.pure_callback(
            lambda a: a, jax.ShapeDtypeStruct(args[0].shape, args[0].dtype), args[0]
        )

    with pytest.raises(hillclimb_bench.VerificationError, match="host callbacks"):
        target.export_info(request, sneaky)


# --- conventions ----------------------------------------------------------------------------


def test_flops_match_the_documented_convention():
    # gdn-kernel.md 5.6: C=64, K=V=128 -> 181.6k; C=128, K=V=64 -> 112.0k per token per head.
    assert flops.fwd_flops_per_token_head(128, 128) == pytest.approx(181_589.33, rel=1e-6)
    assert flops.fwd_flops_per_token_head(64, 64, C=128) == pytest.approx(111_957.33, rel=1e-6)
    fwd = flops.model_flops(B=2, T=100, H=3, K=64, V=32, measurement="fwd")
    assert fwd == pytest.approx(2 * 100 * 3 * flops.fwd_flops_per_token_head(64, 32))
    assert flops.model_flops(B=2, T=100, H=3, K=64, V=32, measurement="fwd_bwd") == 3 * fwd


def test_model_flops_ignore_the_chunk_size_executed_flops_do_not():
    kw = dict(impl="pallas", B=1, T=256, H=1, K=64, V=64, measurement="fwd")
    assert flops.executed_flops(chunk_size=64, **kw) == pytest.approx(
        flops.model_flops(B=1, T=256, H=1, K=64, V=64, measurement="fwd")
    )
    assert flops.executed_flops(chunk_size=128, **kw) > flops.executed_flops(chunk_size=64, **kw)


@pytest.mark.parametrize(
    ("kind", "peak"),
    [
        ("TPU v4", 275e12),
        ("TPU v5 lite", 197e12),
        ("TPU v5", 459e12),
        ("TPU v5p", 459e12),
        ("TPU v6 lite", 918e12),
        ("TPU7x", 1153.5e12),
        ("NVIDIA H100 80GB HBM3", 989.5e12),
        ("NVIDIA H200", 989.5e12),
        ("cpu", None),
        ("TPU v9000", None),
        ("tpu v6 lite", None),  # matched exactly, never by a near miss
    ],
)
def test_peak_table(kind, peak):
    assert flops.peak_flops_per_device(kind) == peak


def test_mfu_is_a_fraction_or_none():
    assert flops.mfu(459e12, 2.0, 459e12) == pytest.approx(0.5)
    assert flops.mfu(1e12, 1.0, None) is None


def test_schema_validator_rejects_bad_metrics(tiny_run):
    good = tiny_run
    cases = []
    bad = copy.deepcopy(good)
    del bad["measurements"]
    cases.append((bad, "missing required 'measurements'"))
    bad = copy.deepcopy(good)
    bad["measurements"]["fwd"]["mfu"] = -1.0
    cases.append((bad, "minimum"))
    bad = copy.deepcopy(good)
    bad["device"]["speed"] = "fast"
    cases.append((bad, "unexpected property 'speed'"))
    bad = copy.deepcopy(good)
    bad["schema"] = "hillclimb.metrics/v0"
    cases.append((bad, "const"))
    bad = copy.deepcopy(good)
    bad["measurements"]["fwd"]["samples_ms"] = []
    cases.append((bad, "fewer than 1 items"))
    bad = copy.deepcopy(good)
    bad["verification"]["seed"] = 2**53
    cases.append((bad, "maximum"))
    bad = copy.deepcopy(good)
    bad["verification"]["seed_source"] = "kernel"
    cases.append((bad, "not in"))
    bad = copy.deepcopy(good)
    del bad["verification"]["verified"]
    cases.append((bad, "missing required 'verified'"))
    for doc, needle in cases:
        errors = schema.validate(doc)
        assert any(needle in e for e in errors), (needle, errors)


def test_metrics_without_verification_still_validate(tiny_run):
    """Metrics written before the bench verified every timed quantity have no verification."""
    good = tiny_run
    old = copy.deepcopy(good)
    del old["verification"]
    assert schema.validate(old) == []


def test_schema_validator_refuses_unknown_keywords():
    errors = schema.validate({"a": 1}, {"type": "object", "patternProperties": {}})
    assert any("not supported" in e for e in errors)


def test_presets_cover_cpu_and_tpu():
    assert {"tiny", "130m-layer", "qwen3next-like"} <= set(PRESETS)
    assert set(spec.IMPLS) == {"recurrent", "chunked_xla", "pallas"}
