"""The ``matmul`` target's programs (protected harness) through both steps: the export of the
kernel verifies and times in a verifier that never imports it, with valid metrics; a wrong kernel
and a kernel that is not Pallas are refused; what a kernel does at import or at exit reaches no
number the verifier writes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernels.harness import schema
from kernels.matmul_harness.presets import PRESETS

pytestmark = pytest.mark.harness

REPO = Path(__file__).resolve().parents[3]


def tree(dest: Path, *, kernel: bool = True, attack: str = "", kernel_body: str = "") -> Path:
    shutil.copytree(
        REPO / "kernels", dest / "kernels", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(REPO / "schemas", dest / "schemas")
    init = dest / "kernels" / "matmul" / "__init__.py"
    if kernel_body:
        init.write_text(kernel_body)
    init.write_text(init.read_text() + attack)
    if not kernel:
        shutil.rmtree(dest / "kernels" / "matmul")
    return dest


def step(cwd: Path, *argv: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *flags, "-m", "kernels.matmul_harness.programs", *argv],
        cwd=cwd,
        env={**os.environ, "JAX_PLATFORMS": "cpu", "JAX_TRACEBACK_IN_LOCATIONS_LIMIT": "0"},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def export(cwd: Path, out: Path) -> subprocess.CompletedProcess[str]:
    from hillclimb_bench import programs

    from kernels.matmul_harness.programs import MatmulTarget

    requests = programs.write_requests(
        out.parent / f"{out.name}.requests.json",
        MatmulTarget("tiny").requests(draw=3),
        target="matmul",
        versions={},
    )
    return step(
        cwd,
        "export",
        "--platform",
        "cpu",
        "--requests",
        str(requests),
        "--out",
        str(out),
        "--",
        "--preset",
        "tiny",
    )


def verify(where: Path, out: Path, mode: str, *arms: str, extra: tuple[str, ...] = ()) -> dict:
    argv = ["verify", "--mode", mode, "--platform", "cpu", "--draw", "3", "--out", str(out)]
    for arm in arms:
        argv += ["--arm", arm]
    done = step(where, *argv, *extra, "--", "--preset", "tiny", flags=("-E", "-s"))
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


# A right kernel of another implementation: the same contract, in plain XLA (not Pallas).
PLAIN_XLA = """
import jax, jax.numpy as jnp
def matmul_bias_act(x, w, b, *, activation, interpret=None, block_sizes=None):
    y = jnp.dot(x.astype(jnp.float32), w.astype(jnp.float32), precision="highest") + b
    if activation == "gelu":
        y = jax.nn.gelu(y, approximate=True)
    elif activation == "silu":
        y = jax.nn.silu(y)
    return y.astype(x.dtype)
"""


def test_the_gate_passes_and_the_same_code_is_the_same_program(tmp_path):
    arm = tree(tmp_path / "arm")
    assert export(arm, tmp_path / "a").returncode == 0
    where = tree(tmp_path / "verifier", kernel=False)
    gate = verify(where, tmp_path / "gate.json", "gate", f"B={tmp_path / 'a'}")["gate"]
    assert gate["passed"] is True, gate
    assert gate["total"] == 5  # the preset's problem, three listed, one drawn
    # The same code exported from another checkout: the same bytes.
    assert export(tree(tmp_path / "other"), tmp_path / "b").returncode == 0
    session = verify(
        where, tmp_path / "m.json", "measure", f"A={tmp_path / 'a'}", f"B={tmp_path / 'b'}",
        extra=("--rounds", "1", "--repeats", "3", "--warmup", "1"),
    )  # fmt: skip
    # The same code exported twice is the same bytes: nothing to time.
    assert session["identical"] is True
    assert "rounds" not in session


def test_a_profile_writes_valid_metrics_and_plain_xla_is_refused(tmp_path):
    arm = tree(tmp_path / "arm")
    xla = tree(tmp_path / "xla", kernel_body=PLAIN_XLA)
    assert export(arm, tmp_path / "a").returncode == 0
    done = export(xla, tmp_path / "b")
    # The export refuses a program with no pallas_call (its own courtesy check) ...
    assert done.returncode == 1
    assert "the program has no pallas_call" in done.stderr
    where = tree(tmp_path / "verifier", kernel=False)
    session = verify(
        where, tmp_path / "m.json", "measure", f"A={tmp_path / 'a'}", f"B={tmp_path / 'a'}",
        extra=("--rounds", "1", "--repeats", "3", "--warmup", "1"),
    )  # fmt: skip
    assert session["identical"] is True
    profile = verify(
        where, tmp_path / "p.json", "profile", f"B={tmp_path / 'a'}",
        extra=("--repeats", "3", "--warmup", "1", "--trace", str(tmp_path / "trace")),
    )["profile"]["metrics"]  # fmt: skip
    assert schema.validate(profile) == []
    p = PRESETS["tiny"]
    assert profile["target"] == "matmul"
    assert profile["shapes"] == {"M": p.M, "N": p.N, "K": p.K}
    assert profile["dtype"] == p.dtype
    assert profile["device"]["interpret"] is True
    fwd = profile["measurements"]["fwd"]
    assert fwd["flops"] == p.flops == 2 * 512**3 + 10 * 512 * 512
    assert len(fwd["samples_ms"]) == 3
    assert fwd["mfu"] > 0
    v = profile["verification"]
    assert v["verified"] is True
    assert v["seed_source"] == "os.urandom"
    assert v["timed_outputs_compared"] == 3
    assert v["errors"]["fwd"]["rel_rms"] < 1e-5
    assert any(
        "tiles as the export reported them: matmul_bias_act: grid" in n for n in profile["notes"]
    )


def test_a_wrong_kernel_fails_the_gate(tmp_path):
    off = "\n_right = matmul_bias_act\n"
    off += "matmul_bias_act = lambda x, w, b, **kw: _right(x, w, b * 1.01, **kw)\n"
    wrong = tree(tmp_path / "arm", attack=off)
    assert export(wrong, tmp_path / "a").returncode == 0
    where = tree(tmp_path / "verifier", kernel=False)
    gate = verify(where, tmp_path / "gate.json", "gate", f"B={tmp_path / 'a'}")["gate"]
    assert gate["passed"] is False
    # Off by 1% in the bias: out of the float32 tolerance, inside bfloat16's (1e-2).
    for p in gate["programs"]:
        assert (p["status"] == "failed") == p["case"].endswith("float32"), p
    assert "fwd: rel_rms" in gate["programs"][0]["error"]


# What a kernel could do when imported or at exit, in the process that imports it: rebind the
# timing loop, rewrite a metrics file at exit. Neither reaches the verifier.
SWAP_CLOCK = """
import hillclimb_bench.timing as _t
_ti = _t.time_interleaved
def _fast(*a, **k):
    samples, kept = _ti(*a, **k)
    return {arm: [x / 100 for x in s] for arm, s in samples.items()}, kept
_t.time_interleaved = _fast
"""
REWRITE_AT_EXIT = """
import atexit, json, sys, pathlib
def _forge():
    for p in pathlib.Path("/").glob("tmp/**/m.json"):
        doc = json.loads(p.read_text()); doc["forged"] = True; p.write_text(json.dumps(doc))
atexit.register(_forge)
"""


def test_a_kernel_that_swaps_the_timing_loop_when_imported_is_refused_by_the_export(tmp_path):
    done = export(tree(tmp_path / "arm", attack=SWAP_CLOCK), tmp_path / "a")
    assert done.returncode == 1, done.stderr
    assert (
        "export: failed: guards: importing or tracing the kernel changed global state"
        in done.stderr
    )
    assert "hillclimb_bench.timing.time_interleaved" in done.stderr
    assert not (tmp_path / "a" / "manifest.json").exists()


def test_an_atexit_handler_of_the_kernel_runs_in_no_process_that_writes_numbers(tmp_path):
    done = export(tree(tmp_path / "arm", attack=REWRITE_AT_EXIT), tmp_path / "a")
    assert done.returncode == 0, done.stderr  # the export leaves through os._exit
    where = tree(tmp_path / "verifier", kernel=False)
    session = verify(
        where, tmp_path / "m.json", "measure", f"A={tmp_path / 'a'}", f"B={tmp_path / 'a'}"
    )
    assert "forged" not in session
