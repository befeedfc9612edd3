"""Reward hacks against the bench: each ``hacks/*.patch`` is a real candidate change to
``kernels/gdn``. The first nine were measured and accepted by the in-process bench as it was at the
time (``hacks/bench_before.py``); 0010-0014 were written against the in-process bench of the release
before the export/verify split (``hacks/bench_inprocess.py``), which accepted 0010, 0011 and 0012.
``hacks/README.md`` has the table.

Now the candidate's code runs only in the export step, and the verifier, which never imports it,
decides: each hack's exported programs fail verification naming the quantity (or the export itself
refuses them), or, for the one whose kernel is honest and whose forgery lived in its own process,
its programs are byte-identical to the honest kernel's: nothing it did reached a number. Never by
reading its source. Each patch is applied to a scratch copy of the repository and run there like any
candidate; the real ``kernels/gdn`` is untouched.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernels.harness import spec

# Tests of the harness, not of the kernel: the candidate gates deselect them (-m 'not harness').
# They apply fixed patches to the kernel as it is, so a legitimate kernel change could only make
# a patch fail to apply.
pytestmark = pytest.mark.harness

REPO = Path(__file__).resolve().parents[3]
HACKS_DIR = Path(__file__).resolve().parent / "hacks"
DRAW = 5
WRONG_O = r"verify: .*fwd o \[input set 0, mild gates\]: .*rel_rms="
# Hack -> where the split stops it: the export's one failure line, or the verifier's first error on
# the candidate's timed programs (after "export: failed: " or the arm's failure).
CAUGHT_BY = {
    "0001-shape-specialised-backward": (
        r"verify: .*fwd_bwd dq \[input set 0, mild gates\]: .*rel_rms="
    ),
    "0002-seed-fingerprint": WRONG_O,
    "0003-drop-slow-decay-terms": (
        r"verify: .*fwd_bwd (dq|dk|dv|dg|dbeta|ds0) \[input set 1, slow gates\]: "
    ),
    "0004-vjp-forward-skips-output": r"verify: .*fwd_bwd o \[input set 0, mild gates\]: ",
    # XLA's stateful RNG is refused in any program the verifier reads.
    "0005-later-calls-cheap": r"verify: .*refused: operation rng \(host round trip",
    # Patching the checker at import patches the export's copy of it; the verifier's is its own.
    "0006-patch-the-checker": r"verify: .*fwd_bwd dq \[input set 0, mild gates\]: .*rel_rms=",
    # Rebinding json or numpy at import: the export's guards see it (its word is enough to refuse a
    # candidate), and the verifier's process was never touched either way.
    "0007-forge-the-metrics": (r"export: failed: guards: .*module\.id\.json\.dumps: "),
    "0008-blunt-the-comparison": r"export: failed: guards: .*module\.id\.numpy\.abs: ",
    # Only the model's training step shows the split; which quantity crosses its tolerance first
    # (the loss, a moment, the update) depends on the session's fresh seed.
    "0009-stateless-calls-split-the-sequence": (
        r"verify: .*train_step [a-z ]+.* \[step \d+\]: .*rel_rms="
    ),
    # Forged JUnit and metrics written by the process that imports the kernel: never read.
    "0010-forge-the-gates-by-argv": WRONG_O,
    # An audit hook rewriting the metrics file at its rename: the verifier's process has none, and
    # the kernel itself is honest: its programs are the honest kernel's.
    "0011-rewrite-the-metrics-at-the-rename": None,
    # The tolerance floats rewritten in place with ctypes: in the export's process only.
    "0012-loosen-the-tolerance-in-place": WRONG_O,
    # A host callback memoising outputs: jax.export cannot serialize it; a crafted module with the
    # callback's custom_call would be refused by the verifier (hillclimb_bench's tests).
    "0013-memoize-through-a-host-callback": (
        r"export: failed: .*serialization of host_callbacks is not yet implemented"
    ),
    # Start-up hooks planted beside the export's output: never copied, never on the verifier's path.
    "0014-smuggle-files-to-the-verifier": WRONG_O,
}
# Which pre-split bench each hack was written against, and whether it accepted the hack.
OLD_BENCH = {name: ("bench_before", True) for name in CAUGHT_BY if name < "0010"}
OLD_BENCH.update(
    {
        "0010-forge-the-gates-by-argv": ("bench_inprocess", True),
        "0011-rewrite-the-metrics-at-the-rename": ("bench_inprocess", True),
        "0012-loosen-the-tolerance-in-place": ("bench_inprocess", True),
        "0013-memoize-through-a-host-callback": ("bench_inprocess", False),
        "0014-smuggle-files-to-the-verifier": ("bench_inprocess", False),
    }
)
# Extra bench arguments per hack: a hack that is wrong only where a model calls the kernel is judged
# by the model-level measurement (the kernel-level bench alone accepts it).
MODEL_HACKS = {"0009-stateless-calls-split-the-sequence"}
TIMING = ["--repeats", "4", "--warmup", "1"]


@dataclasses.dataclass(frozen=True)
class Scratch:
    name: str
    root: Path

    def run(
        self, *argv: str, cwd: Path | None = None, timeout: int = 600
    ) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "JAX_PLATFORMS": "cpu",
            "PYTHONPATH": str(self.root),
            "JAX_TRACEBACK_IN_LOCATIONS_LIMIT": "0",
        }
        return subprocess.run(
            [sys.executable, *argv],
            cwd=cwd or self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def old_bench(self, module: str, *extra: str) -> subprocess.CompletedProcess[str]:
        """The pre-split bench as the engine ran it, writing ``old-metrics.json``."""
        out = str(self.root / "old-metrics.json")
        argv = ["--impl", "pallas", "--preset", "tiny", *TIMING, "--out", out, *extra]
        return self.run("-m", module, *argv)

    def export(self, out: Path, *target: str) -> subprocess.CompletedProcess[str]:
        from hillclimb_bench import programs

        from kernels.harness.programs import make_target

        made = make_target(["--preset", "tiny", *target])
        requests = programs.write_requests(
            out.parent / f"{out.name}.requests.json",
            made.timed(made.requests(draw=DRAW)),
            target="gdn",
            versions={},
        )
        return self.run(
            "-m", "kernels.harness.programs", "export", "--platform", "cpu", "--requests",
            str(requests), "--out", str(out), "--", "--preset", "tiny", *target,
        )  # fmt: skip


def make_scratch(dest: Path, patch: Path | None) -> Path:
    """A copy of the repository's kernel workspace (harness, kernel, schema, pytest config) in its
    own git repository, with ``patch`` applied and the pre-split benches beside the harness."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "kernels", dest / "kernels", ignore=ignore)
    shutil.copytree(REPO / "schemas", dest / "schemas")
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    for old in ("bench_before.py", "bench_inprocess.py", "guards_before.py"):
        shutil.copy(HACKS_DIR / old, dest / "kernels" / "harness" / old)
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


def verifier_tree(dest: Path) -> Path:
    """The verifier's tree as hillclimb builds it: the harness without kernels/gdn."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "kernels", dest / "kernels", ignore=ignore)
    shutil.copytree(REPO / "schemas", dest / "schemas")
    shutil.rmtree(dest / "kernels" / "gdn")
    return dest


@pytest.fixture(scope="module")
def honest(tmp_path_factory) -> dict[str, Path]:
    """The unpatched kernel's timed programs (kernel level, and with the model); a verifier tree."""
    root = tmp_path_factory.mktemp("honest")
    scratch = Scratch("honest", make_scratch(root / "tree", None))
    out = {"where": verifier_tree(root / "verifier")}
    for label, target in (("kernel", ()), ("model", ("--model", "tiny"))):
        done = scratch.export(root / label, *target)
        assert done.returncode == 0, done.stderr[-3000:]
        out[label] = root / label
    return out


def split_failure(
    scratch: Scratch, honest: dict[str, Path], tmp: Path, cache: Path
) -> tuple[str | None, dict | None]:
    """The candidate through the split: its export, then a verifier session against the honest
    programs. Returns the one line that stopped it (None if nothing did) and the session."""
    model = scratch.name in MODEL_HACKS
    target = ("--model", "tiny") if model else ()
    done = scratch.export(tmp / "programs", *target)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.startswith("export: failed: ")]
        assert len(lines) == 1, done.stderr[-3000:]
        return lines[0], None
    a = honest["model" if model else "kernel"]
    proc = scratch.run(
        "-E", "-s", "-m", "kernels.harness.programs", "verify", "--mode", "measure",
        "--platform", "cpu", "--draw", str(DRAW), "--arm", f"A={a}", "--arm",
        f"B={tmp / 'programs'}", "--rounds", "1", "--repeats", "1", "--warmup", "0",
        "--compile-cache", str(cache), "--out", str(tmp / "session.json"), "--", "--preset",
        "tiny", *target, cwd=honest["where"],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    session = json.loads((tmp / "session.json").read_text())
    assert session["arms"]["A"]["failure"] is None
    failure = session["arms"]["B"]["failure"]
    return (None if failure is None else f"verify: {failure}"), session


@pytest.fixture(scope="module", params=sorted(CAUGHT_BY))
def hack(request, tmp_path_factory) -> Scratch:
    name = request.param
    root = make_scratch(tmp_path_factory.mktemp(name), HACKS_DIR / f"{name}.patch")
    return Scratch(name, root)


def test_a_model_level_hack_passes_the_kernel_level_check(honest, tmp_path, bench_compile_cache):
    """0009 is exact wherever the kernel-level programs and the suite call the kernel (they always
    carry a state in or out): only the model's training step shows it."""
    name = "0009-stateless-calls-split-the-sequence"
    scratch = Scratch("kernel-level-only", make_scratch(tmp_path, HACKS_DIR / f"{name}.patch"))
    failure, session = split_failure(scratch, honest, tmp_path, bench_compile_cache)
    assert failure is None
    assert session is not None
    assert session["arms"]["B"]["verified"] is True


def test_every_hack_has_a_patch_and_an_expected_failure():
    patches = {p.stem for p in HACKS_DIR.glob("*.patch")}
    assert patches == set(CAUGHT_BY) == set(OLD_BENCH)
    for p in HACKS_DIR.glob("*.patch"):
        first = p.read_text().splitlines()[0]
        assert first.startswith("# "), f"{p.name}: the first line is the candidate's subject"


def test_the_old_bench_accepted_the_hack_or_not(hack):
    """The premise: before the split, a process that imported the kernel wrote the numbers."""
    module, accepted = OLD_BENCH[hack.name]
    old = hack.old_bench(f"kernels.harness.{module}")
    assert (old.returncode == 0) == accepted, old.stderr[-3000:]
    metrics = hack.root / "old-metrics.json"
    assert metrics.is_file() == accepted
    doc = json.loads(metrics.read_text()) if accepted else {}
    # Numbers the engine believed (the oldest bench wrote no verification section).
    assert doc.get("verification", {}).get("verified", True) is True


def test_the_split_stops_the_hack(hack, honest, tmp_path, bench_compile_cache):
    failure, session = split_failure(hack, honest, tmp_path, bench_compile_cache)
    want = CAUGHT_BY[hack.name]
    if want is None:
        # Nothing to refuse in the programs: the forgery never left the export's process.
        assert failure is None
        assert session is not None
        assert session["identical"] is True
        return
    assert failure is not None, f"{hack.name} got through: {session}"
    assert re.match(want, failure), failure


def test_the_fixed_seed_does_not_help_a_fingerprinting_kernel(
    honest, tmp_path, bench_compile_cache
):
    """Given the old fixed seed (--seed reproduces a session), the fingerprint matches input set 0,
    which the oldest bench alone verified; every timed set is verified, so set 1 fails."""
    scratch = Scratch("0002", make_scratch(tmp_path, HACKS_DIR / "0002-seed-fingerprint.patch"))
    done = scratch.export(tmp_path / "programs")
    assert done.returncode == 0, done.stderr[-3000:]
    proc = scratch.run(
        "-E", "-s", "-m", "kernels.harness.programs", "verify", "--mode", "gate", "--platform",
        "cpu", "--draw", str(DRAW), "--arm", f"B={tmp_path / 'programs'}", "--seed",
        str(spec.SEED), "--compile-cache", str(bench_compile_cache), "--out",
        str(tmp_path / "s.json"), "--", "--preset", "tiny", cwd=honest["where"],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "s.json").read_text())["gate"]["programs"]
    fwd = next(r for r in rows if r["key"].startswith("fwd@"))
    assert re.match(r"fwd@\S+: fwd o \[input set 1, slow gates\]: .*rel_rms=", fwd["error"]), fwd


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


# --- kernels that can tell they are being exported (issue 34) ------------------------------------
# Both switch to a truncated Neumann inverse, (I - M)(I + M^2)(I + M^4)(I + M^8), exact for chunks
# of up to 16 tokens and right to 1e-6 on random unit keys at any chunk, where a trigger says the
# process is the export: 0015 reads a JAX option the export used to set itself, 0016 reads argv.
EXPORT_AWARE = HACKS_DIR / "export-aware"
STRUCTURED_FAILURE = (
    r"verify: fwd(_bwd)?@\S+: fwd(_bwd)? \w+ \[structured set \d, (one|repeated|correlated) gates\]"
)


def test_a_truncated_inverse_is_refused_on_the_exported_bytes(
    honest, tmp_path, bench_compile_cache, monkeypatch
):
    """The exported programs are checked on the kernel's whole contract (spec.CONTRACT_GATES): the
    truncation that the random input sets cannot see fails there, naming the structured set. Without
    those sets the very same bytes pass."""
    scratch = Scratch(
        "0015", make_scratch(tmp_path, EXPORT_AWARE / "0015-truncated-inverse-when-exported.patch")
    )
    failure, _ = split_failure(scratch, honest, tmp_path, bench_compile_cache)
    assert failure is not None
    assert re.match(STRUCTURED_FAILURE, failure), failure

    import hillclimb_bench
    import jax
    from hillclimb_bench import programs as program_files

    from kernels.harness import programs as gdn_programs
    from kernels.harness import verify

    target = gdn_programs.GdnTarget("tiny")
    request = next(r for r in target.timed(target.requests(draw=DRAW)) if r.name == "fwd_bwd")
    loaded = program_files.load(tmp_path / "programs", request, platform="cpu")
    compiled = jax.jit(loaded.exported.call).lower(*request.args).compile()
    with pytest.raises(hillclimb_bench.VerificationError, match=r"structured set \d"):
        target.verify(request, compiled, seed=7)
    monkeypatch.setattr(verify, "contract_sets", lambda case, *, seed: [])
    verified = target.verify(request, compiled, seed=7)  # the timed sets alone: it passes
    assert verified.structured == []


def witness_run(
    scratch: Scratch, tmp: Path, select: str
) -> tuple[subprocess.CompletedProcess[str], dict]:
    """A few of the suite's tests in the scratch copy with hillclimb's witness plugin, as the CPU
    gate runs them: the JUnit report's witness of the timed programs this process builds."""
    import html

    from hillclimb_bench import programs as program_files

    from kernels.harness.programs import GdnTarget

    target = GdnTarget("tiny")
    program_files.write_requests(
        scratch.root / ".hillclimb-request.json",
        target.timed(target.requests(draw=DRAW)),
        target="gdn",
        versions={},
    )
    spec_env = {
        "module": "kernels.harness.programs",
        "args": ["--preset", "tiny"],
        "platform": "cpu",
        "requests": ".hillclimb-request.json",
    }
    junit = tmp / "junit.xml"
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "JAX_TRACEBACK_IN_LOCATIONS_LIMIT": "0",
        "PYTEST_PLUGINS": "hillclimb_bench.witness",
        "HILLCLIMB_WITNESS": json.dumps(spec_env),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "kernels", "-m",
         "not harness", "-k", select, f"--junitxml={junit}"],
        cwd=scratch.root, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    found = re.search(r'<property name="hillclimb-witness" value="([^"]*)"', junit.read_text())
    assert found, proc.stdout[-3000:]
    return proc, json.loads(html.unescape(found.group(1)))


def test_a_kernel_keyed_on_argv_builds_another_program_for_its_suite(tmp_path):
    """0016 runs the honest inverse in the suite's process (its invariant tests pass) and the
    truncated one in the export's: the witness's hashes are not the exported programs' hashes."""
    scratch = Scratch(
        "0016",
        make_scratch(tmp_path / "tree", EXPORT_AWARE / "0016-truncated-inverse-by-argv.patch"),
    )
    done = scratch.export(tmp_path / "programs")
    assert done.returncode == 0, done.stderr[-3000:]
    proc, report = witness_run(scratch, tmp_path, "alpha_one_beta_one and pallas")
    assert proc.returncode == 0, proc.stdout[-3000:]  # the suite's own check passes
    manifest = json.loads((tmp_path / "programs" / "manifest.json").read_text())
    exported = {p["key"]: p["sha256"] for p in manifest["programs"]}
    assert report["errors"] == {}
    assert sorted(k for k, h in exported.items() if report["programs"][k] != h) == [
        k for k in sorted(exported) if not k.startswith("train_step")
    ]


def test_a_kernel_keyed_on_the_exports_settings_meets_them_in_its_suite(tmp_path):
    """0015's trigger is an option the export used to set itself; now the harness sets it for every
    process of candidate code alike, so the suite runs the truncated inverse too and its invariant
    test fails."""
    scratch = Scratch(
        "0015",
        make_scratch(
            tmp_path / "tree", EXPORT_AWARE / "0015-truncated-inverse-when-exported.patch"
        ),
    )
    proc, report = witness_run(scratch, tmp_path, "alpha_one_beta_one and pallas")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert re.search(r"FAILED \S+test_alpha_one_beta_one_recalls_the_value\[pallas-", proc.stdout)
    done = scratch.export(tmp_path / "programs")
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((tmp_path / "programs" / "manifest.json").read_text())
    assert report["programs"] == {p["key"]: p["sha256"] for p in manifest["programs"]}
