"""hillclimb_bench end to end: a user's bench script run as a process, and measure() in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

import hillclimb_bench
from hillclimb_bench import Measurement, UsageError, VerificationError

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SCHEMA = json.loads((REPO / "schemas" / "metrics.schema.json").read_text())


def schema_errors(doc: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


def run_bench(tmp_path: Path, variant: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCH_VARIANT": variant, "PYTHONPATH": str(HERE.parent / "src")}
    return subprocess.run(
        [sys.executable, str(HERE / "toy_bench.py"), "--out", str(tmp_path / "m.json"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=120,
    )


def test_correct_kernel_writes_schema_valid_metrics(tmp_path: Path) -> None:
    done = run_bench(tmp_path, "good", "--repeats", "3", "--warmup", "1")
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "m.json").read_text())
    assert schema_errors(doc) == []
    fwd = doc["measurements"]["fwd"]
    assert len(fwd["samples_ms"]) == 3
    assert fwd["flops"] == 5 * 8 * 64
    v = doc["verification"]
    assert v["verified"] is True
    assert v["seed_source"] == "os.urandom"
    assert v["timed_outputs_compared"] == 3
    assert set(v["errors"]) == {"fwd.lse", "fwd.probs"}
    assert all(e["rel_rms"] <= 1e-5 for e in v["errors"].values())
    # flops given, and no CPU is in the peak table: MFU against a measured peak, labelled so.
    assert doc["device"]["peak"]["source"] == "measured"
    assert fwd["mfu"] is not None
    assert fwd["mfu"] > 0


def test_wrong_kernel_exits_1_naming_the_quantity_and_writes_nothing(tmp_path: Path) -> None:
    done = run_bench(tmp_path, "wrong", "--repeats", "2")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]  # one line
    assert done.stderr.startswith("bench: failed: fwd.lse: rel_rms ")
    assert not (tmp_path / "m.json").exists()


def test_kernel_that_changes_after_verification_is_caught_after_timing(tmp_path: Path) -> None:
    # One ulp off after the verification calls: within the tolerance, caught bit for bit.
    done = run_bench(tmp_path, "drift", "--repeats", "2", "--warmup", "0")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "bench: failed: fwd: timed call 1 of 2 (set0) returned fwd.probs bit-different from the "
        "verified call on the same inputs"
    )
    assert not (tmp_path / "m.json").exists()


def test_kernel_that_raises_is_a_failed_check(tmp_path: Path) -> None:
    done = run_bench(tmp_path, "raises", "--repeats", "2")
    assert done.returncode == 1
    assert done.stderr.strip() == "bench: failed: fwd: raised RuntimeError: out of shared memory"


@pytest.mark.parametrize(
    ("variant", "rebound"),
    [
        ("forge-json", "module.id.json.dumps"),
        ("blunt-numpy", "module.id.numpy.abs"),
        ("patch-checker", "module.id.hillclimb_bench.checks.check_kept"),
        ("import-swap", "module.id.hillclimb_bench._bench.time_calls"),
    ],
)
def test_kernel_that_tampers_with_the_bench_is_caught_by_the_guards(
    tmp_path: Path, variant: str, rebound: str
) -> None:
    done = run_bench(tmp_path, variant, "--repeats", "2")
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1
    assert line.startswith("bench: failed: guards: global state changed while verifying: ")
    assert f"{rebound}: " in line
    assert not (tmp_path / "m.json").exists()


def test_guards_see_a_timer_rebound_in_the_timing_module(monkeypatch: pytest.MonkeyPatch) -> None:
    # The bench rebinds nothing itself: an honest run ends without a guard report...
    _bench(lambda rng: (np.ones(2),))
    # ...and a kernel that swaps the clock the timing loop reads is reported by name.
    clock = hillclimb_bench.timing.perf_counter
    calls = 0

    def swap_clock(x: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            monkeypatch.setattr(hillclimb_bench.timing, "perf_counter", lambda: clock() / 2)
        return x * 2

    with pytest.raises(
        VerificationError, match=r"module\.id\.hillclimb_bench\.timing\.perf_counter"
    ):
        hillclimb_bench.measure(
            target="t",
            impl="numpy",
            dtype="float32",
            shapes={"n": 2},
            make_inputs=lambda rng: (np.ones(2),),
            measurements={"fwd": Measurement(fn=swap_clock, reference=_double, rel_rms_tol=0.0)},
            repeats=1,
            warmup=0,
        )


def test_a_snapshot_taken_before_the_kernel_import_covers_import_time() -> None:
    before = hillclimb_bench.guards.snapshot()
    import math as imported_kernel  # stands for a kernel whose import rebinds something

    original = imported_kernel.sqrt
    imported_kernel.sqrt = lambda x: 0.0  # type: ignore[assignment]
    try:
        with pytest.raises(VerificationError, match=r"^guards: .*module\.id\.math\.sqrt"):
            _bench(lambda rng: (np.ones(2),), guard_from=before)
        _bench(lambda rng: (np.ones(2),))  # a snapshot taken later does not see it
    finally:
        imported_kernel.sqrt = original


@pytest.mark.parametrize("args", [["--repeats", "many"], ["--repeats", "0"], ["--seed", "-1"]])
def test_bad_arguments_exit_2_with_one_line(tmp_path: Path, args: list[str]) -> None:
    done = run_bench(tmp_path, "good", *args)
    assert done.returncode == 2
    assert done.stderr.startswith("bench: ")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "m.json").exists()


def _double(x: Any) -> Any:
    return x * 2


def _bench(make_inputs: Any, **kw: Any) -> dict[str, Any]:
    return hillclimb_bench.measure(
        target="t",
        impl="numpy",
        dtype="float32",
        make_inputs=make_inputs,
        measurements={"fwd": Measurement(fn=_double, reference=_double, rel_rms_tol=0.0)},
        repeats=1,
        warmup=0,
        **{"shapes": {"n": 3}, **kw},
    )


def test_seed_reproduces_the_inputs() -> None:
    seen: list[np.ndarray] = []

    def make_inputs(rng: np.random.Generator) -> tuple[np.ndarray]:
        seen.append(rng.standard_normal(4))
        return (seen[-1],)

    first = _bench(make_inputs)["verification"]
    drawn = list(seen)
    seen.clear()
    again = _bench(make_inputs, seed=first["seed"])["verification"]
    assert again["seed_source"] == "argument"
    assert again["seed"] == first["seed"]
    assert len(seen) == len(drawn) == 2  # two input sets by default, and they differ
    assert not np.array_equal(drawn[0], drawn[1])
    assert all(np.array_equal(a, b) for a, b in zip(seen, drawn, strict=True))
    seen.clear()
    _bench(make_inputs)
    assert not np.array_equal(seen[0], drawn[0])  # a fresh seed per process run


def test_jax_kernel_is_verified_and_timed() -> None:
    jax = pytest.importorskip("jax", reason="JAX is optional: this case needs it installed")
    jnp = jax.numpy
    doc = hillclimb_bench.measure(
        target="t",
        impl="xla",
        dtype="float32",
        make_inputs=lambda rng: (jnp.asarray(rng.standard_normal((4, 8), dtype=np.float32)),),
        measurements={
            "fwd": Measurement(
                # A sum of squares: no cancellation, so float32's error stays small relative to it
                # whatever the fresh seed draws (a plain sum near zero is not, at any tolerance).
                fn=jax.jit(lambda x: (jnp.tanh(x), (x * x).sum())),
                reference=lambda x: (
                    np.tanh(np.asarray(x, np.float64)),
                    (np.asarray(x, np.float64) ** 2).sum(),
                ),
                rel_rms_tol=1e-5,
            )
        },
        shapes={"rows": 4, "cols": 8},
        repeats=2,
        warmup=1,
    )
    assert doc["timing"]["clock"] == "perf_counter+block_until_ready"
    assert set(doc["verification"]["errors"]) == {"fwd.0", "fwd.1"}
    assert doc["measurements"]["fwd"]["mfu"] is None  # no flops given
    assert schema_errors(doc) == []


def test_shape_mismatch_names_the_quantity() -> None:
    with pytest.raises(VerificationError, match=r"^fwd: shape \(2,\), the reference's is \(3,\)"):
        hillclimb_bench.measure(
            target="t",
            impl="numpy",
            dtype="float32",
            shapes={"n": 2},
            make_inputs=lambda rng: (np.ones(2),),
            measurements={
                "fwd": Measurement(fn=_double, reference=lambda x: np.ones(3), rel_rms_tol=1.0)
            },
        )


def test_peaks_come_from_the_repository_table_by_exact_device_kind() -> None:
    table = json.loads((REPO / "schemas" / "device-peaks.json").read_text())
    entry = next(e for e in table["devices"] if e["peakFlopsPerSecond"]["bf16"])
    kind = entry["deviceKinds"][0]
    assert hillclimb_bench.peak_table_path() == REPO / "schemas" / "device-peaks.json"
    assert hillclimb_bench.device_peak(kind, "bfloat16") == (
        entry["name"],
        entry["peakFlopsPerSecond"]["bf16"] / entry["devicesPerChip"],
    )
    assert hillclimb_bench.device_peak(kind + " ", "bfloat16") is None  # exact match only
    assert hillclimb_bench.device_peak(kind, "float16") is None  # no such column


def test_missing_peak_table_is_a_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HILLCLIMB_DEVICE_PEAKS", "/nonexistent/device-peaks.json")
    with pytest.raises(UsageError, match="cannot read the device peak table /nonexistent/"):
        hillclimb_bench.measure(
            target="t",
            impl="numpy",
            dtype="float32",
            shapes={"n": 2},
            make_inputs=lambda rng: (np.ones(2),),
            measurements={
                "fwd": Measurement(fn=_double, reference=_double, rel_rms_tol=0.0, flops=2.0)
            },
            repeats=1,
        )


def test_a_problem_without_named_dimensions_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="shapes: name at least one dimension"):
        _bench(lambda rng: (np.ones(2),), shapes={})


def test_an_atexit_handler_cannot_rewrite_the_metrics(tmp_path: Path) -> None:
    # main leaves through os._exit: the kernel's handler never runs after the file is written.
    done = run_bench(tmp_path, "atexit-rewrite", "--repeats", "2")
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["measurements"]["fwd"]["median_ms"] != 0.001  # the handler's forged value
