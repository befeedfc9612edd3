"""The ``matmul`` bench (protected harness): a real run writes valid metrics; a wrong kernel, a
kernel that is not Pallas and a kernel that tampers with the bench when imported are refused with
exit 1 and no metrics; an exit handler of the kernel cannot rewrite the metrics."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import pytest

import kernels.matmul
from kernels.harness import schema
from kernels.matmul_harness import bench
from kernels.matmul_harness.presets import PRESETS

pytestmark = pytest.mark.harness


def test_bench_writes_valid_metrics(tmp_path):
    out = tmp_path / "metrics.json"
    cmd = [sys.executable, "-m", "kernels.matmul_harness.bench", "--preset", "tiny"]
    done = subprocess.run(
        [*cmd, "--repeats", "3", "--warmup", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "HILLCLIMB_BENCH matmul/pallas tiny: fwd" in done.stdout
    metrics = json.loads(out.read_text())
    assert schema.validate(metrics) == []
    p = PRESETS["tiny"]
    assert metrics["target"] == "matmul"
    assert metrics["shapes"] == {"M": p.M, "N": p.N, "K": p.K}
    assert metrics["dtype"] == p.dtype
    assert metrics["device"]["interpret"] is True  # CPU: read from the traced program
    fwd = metrics["measurements"]["fwd"]
    assert fwd["flops"] == p.flops == 2 * 512**3 + 10 * 512 * 512
    assert len(fwd["samples_ms"]) == 3
    assert fwd["mfu"] > 0
    v = metrics["verification"]
    assert v["verified"] is True
    assert v["seed_source"] == "os.urandom"
    assert v["timed_outputs_compared"] == 3
    assert v["errors"]["fwd"]["rel_rms"] < 1e-5
    assert "matmul_bias_act: grid" in metrics["notes"][0]


def _run_in_process(tmp_path, capsys):
    out = tmp_path / "metrics.json"
    code = bench.main(["--preset", "tiny", "--repeats", "1", "--warmup", "0", "--out", str(out)])
    return code, capsys.readouterr().err, out


def test_bench_refuses_a_wrong_kernel(tmp_path, capsys, monkeypatch):
    right = kernels.matmul.matmul_bias_act

    def off_by_a_bit(x, w, b, **kw):
        return right(x, w, b * 1.01, **kw)

    monkeypatch.setattr(kernels.matmul, "matmul_bias_act", off_by_a_bit)
    code, err, out = _run_in_process(tmp_path, capsys)
    assert code == 1
    assert "bench: failed: fwd: rel_rms" in err
    assert not out.exists()


def test_bench_refuses_a_kernel_that_is_not_pallas(tmp_path, capsys, monkeypatch):
    def plain_xla(x, w, b, *, activation):
        del activation
        return jnp.dot(x, w) + b

    monkeypatch.setattr(kernels.matmul, "matmul_bias_act", plain_xla)
    code, err, out = _run_in_process(tmp_path, capsys)
    assert code == 1
    assert "no pallas_call" in err
    assert not out.exists()


# A kernel that tampers when it is imported: its package's import code runs the attack. The bench
# runs on a copy of kernels/ with the attack appended to kernels/matmul/__init__.py.
SWAP_CLOCK = """
import hillclimb_bench._bench as _b
_time_calls = _b.time_calls
def _fast(*a, **k):
    samples, kept = _time_calls(*a, **k)
    return [x / 100 for x in samples], kept
_b.time_calls = _fast
"""
REWRITE_AT_EXIT = """
import atexit, json, sys, pathlib
_out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
def _forge():
    doc = json.loads(_out.read_text())
    doc["measurements"]["fwd"]["median_ms"] = 0.001
    _out.write_text(json.dumps(doc))
atexit.register(_forge)
"""


def _bench_with_attack(tmp_path, attack: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    root = Path(kernels.matmul.__file__).resolve().parents[2]
    tree = tmp_path / "tree"
    shutil.copytree(
        root / "kernels", tree / "kernels", ignore=shutil.ignore_patterns("__pycache__")
    )
    init = tree / "kernels" / "matmul" / "__init__.py"
    init.write_text(init.read_text() + attack)
    out = tmp_path / "metrics.json"
    cmd = [sys.executable, "-m", "kernels.matmul_harness.bench", "--preset", "tiny"]
    done = subprocess.run(
        [*cmd, "--repeats", "2", "--warmup", "0", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tree,
    )
    return done, out


def test_bench_sees_a_kernel_that_swaps_the_timing_loop_when_imported(tmp_path):
    done, out = _bench_with_attack(tmp_path, SWAP_CLOCK)
    assert done.returncode == 1, done.stderr
    assert "bench: failed: guards: global state changed" in done.stderr
    assert "module.id.hillclimb_bench._bench.time_calls" in done.stderr
    assert not out.exists()


def test_an_atexit_handler_of_the_kernel_cannot_rewrite_the_metrics(tmp_path):
    done, out = _bench_with_attack(tmp_path, REWRITE_AT_EXIT)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["measurements"]["fwd"]["median_ms"] != 0.001
