"""The bench: one fresh process on the tiny preset (kernel and model) writes a schema-valid metrics
JSON, a trace and one parseable line, after verifying every timed quantity on inputs from a fresh
seed; the seed reproduces a run; bad arguments exit 2 with one line; FLOP, peak and MFU conventions.

The bench process runs on CPU (``JAX_PLATFORMS=cpu``) even on a TPU host: it checks the bench's
mechanics, and the pytest process already holds the TPU (one process per TPU)."""

from __future__ import annotations

import copy
import gzip
import json
import os
import subprocess
import sys

import jax
import pytest

from kernels.harness import bench, flops, schema, spec, verify
from kernels.harness.presets import MODEL_PRESETS, PRESETS

# Tests of the harness, not of the kernel: the candidate gates deselect them (-m 'not harness');
# measure runs this bench, with every check, on the candidate.
pytestmark = pytest.mark.harness

REPEATS = 3


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, bench_compile_cache):
    out = tmp_path_factory.mktemp("bench")
    metrics_path = out / "metrics.json"
    trace_dir = out / "trace"
    cmd = [
        sys.executable, "-m", "kernels.harness.bench",
        "--target", "gdn", "--impl", "pallas", "--preset", "tiny", "--model", "tiny",
        "--repeats", str(REPEATS), "--warmup", "1", "--pin-cpu",
        "--compile-cache", str(bench_compile_cache),
        "--out", str(metrics_path), "--trace", str(trace_dir),
    ]  # fmt: skip
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        cmd, cwd=bench.REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc, json.loads(metrics_path.read_text()), metrics_path, trace_dir


def test_bench_prints_one_parseable_line(tiny_run):
    proc, metrics, metrics_path, _ = tiny_run
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stdout
    head, *pairs = lines[0].split(" ")
    assert head == bench.LINE_PREFIX
    fields = dict(p.split("=", 1) for p in pairs)
    assert fields["impl"] == "pallas"
    assert fields["preset"] == "tiny"
    assert fields["backend"] == "cpu"
    assert fields["interpret"] == "1"
    assert float(fields["fwd_ms"]) == pytest.approx(
        metrics["measurements"]["fwd"]["median_ms"], rel=1e-5
    )
    assert float(fields["fwd_bwd_ms"]) == pytest.approx(
        metrics["measurements"]["fwd_bwd"]["median_ms"], rel=1e-5
    )
    assert float(fields["train_step_ms"]) == pytest.approx(
        metrics["measurements"]["train_step"]["median_ms"], rel=1e-5
    )
    assert fields["model"] == "tiny"
    assert fields["metrics"] == str(metrics_path)
    # On CPU both MFUs are against the measured matmul peak, and the line says so.
    assert float(fields["mfu"]) == pytest.approx(
        metrics["measurements"]["fwd_bwd"]["mfu"], rel=1e-5
    )
    assert float(fields["model_mfu"]) == pytest.approx(
        metrics["measurements"]["train_step"]["mfu"], rel=1e-5
    )
    assert fields["peak"] == "measured"


def test_bench_metrics_validate_against_the_schema(tiny_run):
    _, metrics, _, _ = tiny_run
    assert schema.validate(metrics) == []
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in requirements-dev.txt")
    validator = jsonschema.Draft7Validator(
        schema.load_schema(), format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )
    errors = [e.message for e in validator.iter_errors(metrics)]
    assert errors == []


def test_bench_metrics_are_consistent(tiny_run):
    _, m, _, _ = tiny_run
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
    # CPU is not in the peak table: the peak is measured, in this process, at the preset's dtype.
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
        assert min(samples) <= meas["median_ms"] <= max(samples)
        assert meas["p10_ms"] <= meas["median_ms"] <= meas["p90_ms"]
        assert meas["flops"] == pytest.approx(mult * fwd_flops)
        assert meas["tflops_per_s"] == pytest.approx(meas["flops"] / meas["median_ms"] / 1e9)
        assert meas["tokens_per_s"] == pytest.approx(preset.B * preset.T / meas["median_ms"] * 1e3)
        assert meas["mfu"] == pytest.approx(
            meas["flops"] / (meas["median_ms"] / 1e3) / peak["flops_per_s"]
        )
    assert m["git"]["commit"] is None or len(m["git"]["commit"]) == 40


def test_bench_verified_every_timed_quantity_on_fresh_inputs(tiny_run):
    _, m, _, _ = tiny_run
    ver = m["verification"]
    assert ver["seed_source"] == "os.urandom"
    assert 0 <= ver["seed"] < 2**spec.SEED_BITS
    assert ver["input_sets"] == list(spec.BENCH_GATES)
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
    _, m, _, _ = tiny_run
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


def test_a_seed_reproduces_the_inputs_of_a_run(tiny_run, tmp_path):
    """--seed gives a run the inputs of an earlier one: the same errors against the oracle."""
    _, first, _, _ = tiny_run
    seed = first["verification"]["seed"]
    out = tmp_path / "again.json"
    proc = subprocess.run(
        [
            sys.executable, "-m", "kernels.harness.bench", "--impl", "pallas", "--preset", "tiny",
            "--repeats", "2", "--warmup", "0", "--measure", "fwd", "--seed", str(seed),
            "--out", str(out),
        ],
        cwd=bench.REPO_ROOT, env={**os.environ, "JAX_PLATFORMS": "cpu"},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    again = json.loads(out.read_text())["verification"]
    assert again["seed"] == seed
    assert again["seed_source"] == "argument"
    for key in ("fwd.o", "fwd.final_state"):
        assert again["errors"][key] == first["verification"]["errors"][key]


def test_drawn_seeds_are_fresh_and_fit_a_json_number():
    seeds = {bench.draw_seed() for _ in range(8)}
    assert len(seeds) == 8
    assert all(0 <= s < 2**spec.SEED_BITS <= 2**53 for s in seeds)


def test_bench_trace_directory_is_real(tiny_run):
    _, m, _, trace_dir = tiny_run
    assert m["trace_dir"] == str(trace_dir.resolve())
    runs = list((trace_dir / "plugins" / "profile").iterdir())
    assert len(runs) == 1
    names = [p.name for p in runs[0].iterdir()]
    assert "perfetto_trace.json.gz" in names
    assert any(n.endswith(".xplane.pb") for n in names)
    assert (runs[0] / "perfetto_trace.json.gz").stat().st_size > 1000


def test_bench_trace_holds_steady_state_steps_of_each_measurement(tiny_run):
    # TRACE_STEPS step annotations per measured call, numbered, and no traced warm-up call.
    _, m, _, trace_dir = tiny_run
    (perfetto,) = (trace_dir / "plugins" / "profile").glob("*/perfetto_trace.json.gz")
    events = json.loads(gzip.decompress(perfetto.read_bytes()))["traceEvents"]
    assert set(m["measurements"]) == {"fwd", "fwd_bwd", "train_step"}
    for name in m["measurements"]:
        steps = [e for e in events if e.get("name") == f"hillclimb_{name}" and e.get("ph") == "X"]
        assert len(steps) == bench.TRACE_STEPS, name
        assert sorted(int(e["args"]["step_num"]) for e in steps) == list(range(bench.TRACE_STEPS))


@pytest.mark.parametrize(
    "argv",
    [
        ["--impl", "cuda", "--preset", "tiny"],
        ["--impl", "pallas", "--preset", "huge"],
        ["--impl", "pallas", "--preset", "tiny", "--repeats", "0"],
        ["--impl", "pallas", "--preset", "tiny", "--measure", "fwd,backward"],
        ["--impl", "pallas", "--preset", "tiny", "--target", "attention"],
        ["--impl", "pallas"],
        ["--impl", "pallas", "--preset", "tiny", "--bogus"],
        ["--impl", "pallas", "--preset", "tiny", "--seed", "-1"],
        ["--impl", "pallas", "--preset", "tiny", "--seed", str(2**53)],
        ["--impl", "pallas", "--preset", "tiny", "--seed", "lucky"],
        ["--impl", "pallas", "--preset", "tiny", "--model", "7b"],
        ["--impl", "pallas", "--preset", "130m-layer", "--model", "tiny"],
    ],
    ids=[
        "impl",
        "preset",
        "repeats",
        "measure",
        "target",
        "missing-preset",
        "unknown-flag",
        "seed-negative",
        "seed-too-large",
        "seed-not-a-number",
        "model",
        "model-dtype-differs",
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, capsys):
    assert bench.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1
    assert captured.err.startswith("bench: error: ")


def test_bad_arguments_in_a_fresh_process_print_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "kernels.harness.bench", "--impl", "nope", "--preset", "tiny"],
        cwd=bench.REPO_ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_bench_refuses_host_callbacks():
    def sneaky(x):
        return jax.pure_callback(lambda a: a, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    closed = jax.make_jaxpr(sneaky)(jax.numpy.ones(3))
    with pytest.raises(bench.CandidateError, match="host callbacks"):
        bench.inspect_program("fwd", closed)


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
    _, good, _, _ = tiny_run
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
    _, good, _, _ = tiny_run
    old = copy.deepcopy(good)
    del old["verification"]
    assert schema.validate(old) == []


def test_schema_validator_refuses_unknown_keywords():
    errors = schema.validate({"a": 1}, {"type": "object", "patternProperties": {}})
    assert any("not supported" in e for e in errors)


def test_presets_cover_cpu_and_tpu():
    assert {"tiny", "130m-layer", "qwen3next-like"} <= set(PRESETS)
    assert set(spec.IMPLS) == {"recurrent", "chunked_xla", "pallas"}
