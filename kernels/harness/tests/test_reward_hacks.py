"""Reward hacks against the bench: each ``hacks/*.patch`` is a real candidate change to
``kernels/gdn`` that the bench as it was (``hacks/bench_before.py``) measured and accepted — and the
suite as it was passed (``hacks/README.md``). The bench now rejects each with exit 1 and one line
naming the quantity that failed.

Every hack is caught by verifying what is timed (every returned array, every timed input set, fresh
inputs, outputs of the timed calls; at the model level, the training step against the same model on
the oracle) or, for the one that disables a check in memory, by the guards comparing the loaded
harness before and after the kernel's import; never by reading its source.
Each patch is applied to a scratch copy of the repository and run there like any candidate; the
real ``kernels/gdn`` is untouched.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernels.harness import bench, spec

# Tests of the harness, not of the kernel: the candidate gates deselect them (-m 'not harness').
# They apply fixed patches to the kernel as it is, so a legitimate kernel change could only make
# a patch fail to apply.
pytestmark = pytest.mark.harness

HACKS_DIR = Path(__file__).resolve().parent / "hacks"
# Hack -> the line the bench must fail with (after "bench: failed: ").
CAUGHT_BY = {
    "0001-shape-specialised-backward": r"fwd_bwd dq \[input set 0, mild gates\]: .*rel_rms=",
    "0002-seed-fingerprint": r"fwd o \[input set 0, mild gates\]: .*rel_rms=",
    "0003-drop-slow-decay-terms": r"fwd_bwd (dq|dk|dv|dg|dbeta|ds0) \[input set 1, slow gates\]: ",
    "0004-vjp-forward-skips-output": r"fwd_bwd o \[input set 0, mild gates\]: ",
    "0005-later-calls-cheap": (
        r"fwd: timed call \d+ of \d+ \(input set \d, \w+ gates\) returned o, final_state "
        r"bit-different from the verified call"
    ),
    "0006-patch-the-checker": (
        r"importing the kernel changed global state: "
        r"harness\.id\.kernels\.harness\.verify\.compare: "
    ),
    # Rebinds json.dumps, which writes the metrics, to halve every timing (an attacker review found
    # it; the sandbox cannot help: the kernel is in the bench's process).
    "0007-forge-the-metrics": (
        r"importing the kernel changed global state: module\.id\.json\.dumps: "
    ),
    # A wrong o (x1.5) at the bench's T, with numpy.abs rebound so float64 comparisons see no error.
    "0008-blunt-the-comparison": (
        r"importing the kernel changed global state: module\.id\.numpy\.abs: "
    ),
    "0009-stateless-calls-split-the-sequence": r"train_step loss \[step 1\]: .*rel_rms=",
}
# Extra bench arguments per hack: a hack that is wrong only where a model calls the kernel is judged
# by the model-level measurement (the kernel-level bench alone accepts it).
BENCH_ARGS = {"0009-stateless-calls-split-the-sequence": ["--model", "tiny"]}
TIMING = ["--repeats", "4", "--warmup", "1"]


@dataclasses.dataclass(frozen=True)
class Scratch:
    name: str
    root: Path

    def run(self, *argv: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(self.root)}
        return subprocess.run(
            [sys.executable, *argv],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def bench(self, module: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.run("-m", module, "--impl", "pallas", "--preset", "tiny", *TIMING, *extra)


def make_scratch(dest: Path, patch: Path | None) -> Path:
    """A copy of the repository's kernel workspace (harness, kernel, schema, pytest config) in its
    own git repository, with ``patch`` applied and the pre-change bench beside the current one."""
    root = bench.REPO_ROOT
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(root / "kernels", dest / "kernels", ignore=ignore)
    shutil.copytree(root / "schemas", dest / "schemas")
    shutil.copy(root / "pyproject.toml", dest / "pyproject.toml")
    shutil.copy(HACKS_DIR / "bench_before.py", dest / "kernels" / "harness" / "bench_before.py")
    # The guards as they were then too (the bench before this change ran with them).
    shutil.copy(HACKS_DIR / "guards_before.py", dest / "kernels" / "harness" / "guards_before.py")
    # Its own repository, so git apply cannot reach a repository the temp folder may sit in.
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    if patch is not None:
        applied = subprocess.run(
            ["git", "apply", str(patch)], cwd=dest, capture_output=True, text=True, check=False
        )
        assert applied.returncode == 0, (
            f"{patch.name} no longer applies to kernels/gdn; regenerate it (hacks/README.md): "
            f"{applied.stderr}"
        )
    return dest


@pytest.fixture(scope="module", params=sorted(CAUGHT_BY))
def hack(request, tmp_path_factory) -> Scratch:
    name = request.param
    root = make_scratch(tmp_path_factory.mktemp(name), HACKS_DIR / f"{name}.patch")
    return Scratch(name, root)


def test_a_model_level_hack_passes_the_kernel_level_bench(tmp_path, bench_compile_cache):
    """0009 is exact wherever the kernel bench and the suite call the kernel (they always carry a
    state in or out): only the model's training step shows it."""
    name = "0009-stateless-calls-split-the-sequence"
    scratch = Scratch(name, make_scratch(tmp_path, HACKS_DIR / f"{name}.patch"))
    proc = scratch.bench("kernels.harness.bench", "--compile-cache", str(bench_compile_cache))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(bench.LINE_PREFIX + " ")


def _failure_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("bench: failed: ")]
    assert len(lines) == 1, proc.stderr[-3000:]
    return lines[0].removeprefix("bench: failed: ")


def test_every_hack_has_a_patch_and_an_expected_failure():
    patches = {p.stem for p in HACKS_DIR.glob("*.patch")}
    assert patches == set(CAUGHT_BY)
    for p in HACKS_DIR.glob("*.patch"):
        first = p.read_text().splitlines()[0]
        assert first.startswith("# "), f"{p.name}: the first line is the candidate's subject"


def test_the_old_bench_accepted_the_hack(hack):
    """The premise: before this change each hack was measured and its numbers counted."""
    old = hack.bench("kernels.harness.bench_before")
    assert old.returncode == 0, old.stderr[-3000:]
    assert old.stdout.startswith(bench.LINE_PREFIX + " ")


def test_the_bench_rejects_the_hack_naming_the_quantity(hack, tmp_path, bench_compile_cache):
    out = tmp_path / "metrics.json"
    new = hack.bench(
        "kernels.harness.bench",
        "--out",
        str(out),
        "--compile-cache",
        str(bench_compile_cache),
        *BENCH_ARGS.get(hack.name, []),
    )
    assert new.returncode == 1, (new.stdout, new.stderr[-3000:])
    line = _failure_line(new)
    assert re.match(CAUGHT_BY[hack.name], line), line
    assert new.stdout == ""
    assert not out.exists(), "a rejected candidate must leave no metrics file"


def test_the_fixed_seed_does_not_help_a_fingerprinting_kernel(tmp_path):
    """Given the old fixed seed explicitly (--seed reproduces a run), the fingerprint matches
    input set 0, which the old bench alone verified; set 1 is timed too, so it is verified too."""
    scratch = Scratch("0002", make_scratch(tmp_path, HACKS_DIR / "0002-seed-fingerprint.patch"))
    new = scratch.bench("kernels.harness.bench", "--seed", str(spec.SEED), "--measure", "fwd")
    assert new.returncode == 1, new.stderr[-3000:]
    assert re.match(r"fwd o \[input set 1, slow gates\]: .*rel_rms=", _failure_line(new))


def _pytest(scratch: Scratch, select: str) -> subprocess.CompletedProcess[str]:
    test_file = "kernels/harness/tests/test_grad.py"
    return scratch.run(
        "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", test_file, "-k", select
    )


def test_the_slow_decay_gate_mode_catches_dropped_decay_terms(tmp_path):
    """0003 passes the Pallas gradient tests under the old gate modes (mild, layer) and fails the
    new slow-decay one, where exp(sum of a chunk's gates) ~ 1 and the dropped terms are O(1)."""
    patch = HACKS_DIR / "0003-drop-slow-decay-terms.patch"
    scratch = Scratch("0003", make_scratch(tmp_path, patch))
    proc = _pytest(scratch, "test_gradients_match_oracle and pallas")
    failed = re.findall(r"^FAILED \S+::test_gradients_match_oracle\[([^\]]+)\]", proc.stdout, re.M)
    assert proc.returncode == 1, proc.stdout[-3000:]
    # Inactive below C = 32 (GRAD_CASES[0]); at C = 32 (GRAD_CASES[1]) only slow decay shows it.
    assert failed == [f"pallas-slow-{spec.GRAD_CASES[1].id}"], proc.stdout[-3000:]
    assert re.search(r"AssertionError: d(q|k|v|g|beta|s0): .*rel_rms=", proc.stdout)
    pallas_cases = len(spec.GRAD_GATE_MODES) + 2  # GRAD_CASES[0] in every mode, [1] mild and slow
    assert f"1 failed, {pallas_cases - 1} passed" in proc.stdout


def test_the_gradient_check_also_checks_the_outputs_of_jax_vjp(tmp_path):
    """0004 computes o only outside autodiff; the suite's gradient check now compares the o that
    jax.vjp returns (the loss a training step sees) with the oracle's."""
    patch = HACKS_DIR / "0004-vjp-forward-skips-output.patch"
    scratch = Scratch("0004", make_scratch(tmp_path, patch))
    proc = _pytest(scratch, "pallas-mild-B1-T37")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "AssertionError: o (under jax.vjp): " in proc.stdout
