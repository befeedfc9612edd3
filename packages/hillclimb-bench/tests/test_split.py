"""The export/verify split end to end: a target module run as its two processes, on a toy tree.

The export step imports the kernel (``toy/toykernel``) and writes programs; the verifier, started in
a copy of the tree without the kernel, verifies and times them. Each test runs the real processes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
REPO = HERE.parents[2]
SCHEMA = json.loads((REPO / "schemas" / "metrics.schema.json").read_text())


def schema_errors(doc: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


def tree(tmp: Path, name: str, *, kernel: bool = True) -> Path:
    """A copy of the toy tree (the harness, and the kernel unless it is the verifier's tree)."""
    root = tmp / name
    shutil.copytree(HERE / "toy", root, ignore=shutil.ignore_patterns("__pycache__"))
    if not kernel:
        shutil.rmtree(root / "toykernel")
    return root


def step(
    cwd: Path,
    *args: str,
    variant: str = "good",
    flags: tuple[str, ...] = (),
    path: tuple[Path, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """``python -m toy_target *args`` in ``cwd``, with hillclimb_bench (and ``path``) importable."""
    pythonpath = os.pathsep.join(str(p) for p in (SRC, *path))
    env = {
        **os.environ,
        "PYTHONPATH": pythonpath,
        "TOY_VARIANT": variant,
        "JAX_PLATFORMS": "cpu",
        "JAX_TRACEBACK_IN_LOCATIONS_LIMIT": "0",  # as hillclimb runs every candidate process
    }
    return subprocess.run(
        [sys.executable, *flags, "-m", "toy_target", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def request_file(tmp: Path, draw: int = 7) -> Path:
    """The request file of ``draw``, written by the requests step in a tree without the kernel (as
    hillclimb runs it)."""
    out = tmp / f"requests-{draw}.json"
    if not out.exists():
        where = tree(tmp, f"planner-{draw}", kernel=False)
        done = step(where, "requests", "--draw", str(draw), "--out", str(out), flags=("-E", "-s"))
        assert done.returncode == 0, done.stderr
    return out


def export(
    tmp: Path, name: str, variant: str = "good", draw: int = 7
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp / f"{name}-programs"
    done = step(
        tree(tmp, name),
        "export",
        "--platform",
        "cpu",
        "--requests",
        str(request_file(tmp, draw)),
        "--out",
        str(out),
        variant=variant,
    )
    return done, out


def verify_args(mode: str, arms: dict[str, Path], out: Path, draw: int = 7) -> list[str]:
    args = ["verify", "--mode", mode, "--platform", "cpu", "--draw", str(draw), "--out", str(out)]
    for name, folder in arms.items():
        args += ["--arm", f"{name}={folder}"]
    return args


def verify(
    tmp: Path, mode: str, arms: dict[str, Path], *extra: str, draw: int = 7
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    where = tree(tmp, f"verifier-{mode}-{len(list(tmp.iterdir()))}", kernel=False)
    out = tmp / f"session-{mode}-{len(list(tmp.iterdir()))}.json"
    done = step(where, *verify_args(mode, arms, out, draw), *extra)
    return done, json.loads(out.read_text()) if out.exists() else None


def export_reciprocal(tmp: Path) -> Path:
    """The programs of a different but right kernel (the division done as a multiplication by the
    reciprocal): other bytes, the same results."""
    tree_b = tree(tmp, "b")
    src = tree_b / "toykernel" / "__init__.py"
    src.write_text(
        src.read_text().replace(
            "y = e / e.sum(axis=-1, keepdims=True)", "y = e * (1.0 / e.sum(axis=-1, keepdims=True))"
        )
    )
    out_b = tmp / "b-programs"
    requests = str(request_file(tmp))
    done = step(tree_b, "export", "--platform", "cpu", "--requests", requests, "--out", str(out_b))
    assert done.returncode == 0, done.stderr
    return out_b


def test_a_right_kernel_passes_the_gate_over_every_shape(tmp_path: Path) -> None:
    done, programs = export(tmp_path, "good")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((programs / "manifest.json").read_text())
    assert len(manifest["programs"]) == 4  # bench shape, listed gate shape, 2 drawn
    assert manifest["source"]["kernel_modules"] == {"toykernel": "toykernel/__init__.py"}
    done, session = verify(tmp_path, "gate", {"B": programs})
    assert done.returncode == 0, done.stderr
    assert session is not None
    assert session["gate"]["passed"] is True
    assert [p["status"] for p in session["gate"]["programs"]] == ["passed"] * 4
    assert session["isolation"]["kernel_modules_loaded"] == []


def test_the_drawn_shapes_change_with_the_draw(tmp_path: Path) -> None:
    _, one = export(tmp_path, "one", draw=1)
    _, two = export(tmp_path, "two", draw=2)
    cases = [
        sorted(p["case"] for p in json.loads((d / "manifest.json").read_text())["programs"])
        for d in (one, two)
    ]
    assert cases[0] != cases[1]


@pytest.mark.parametrize(
    ("variant", "caught"),
    [
        ("wrong", r"rel_rms .* > tolerance"),
        ("shape-special", r"rel_rms .* \[input set 0 \[rows64-cols1024\]\]"),
        ("stateful", r"refused: operation rng"),
        # Right on random inputs; the structured set (large logits) checks the exported bytes.
        ("unshifted", r"(not finite|rel_rms).*\[large inputs \[rows64-cols1024\]\]"),
    ],
)
def test_a_wrong_kernel_fails_the_gate_naming_the_program(
    tmp_path: Path, variant: str, caught: str
) -> None:
    done, programs = export(tmp_path, variant, variant=variant)
    assert done.returncode == 0, done.stderr
    done, session = verify(tmp_path, "gate", {"B": programs})
    assert done.returncode == 0, done.stderr
    assert session is not None
    assert session["gate"]["passed"] is False
    failing = [p["error"] for p in session["gate"]["programs"] if p["status"] == "failed"]
    assert failing
    assert any(re.search(caught, e) for e in failing), failing


def test_what_the_export_process_forges_is_never_read(tmp_path: Path) -> None:
    """The attack of issue 20: the kernel returns zeros and, at import, writes a passing JUnit
    report and metrics of its choosing. The export's files other than the programs are never read:
    the verifier fails the gate."""
    done, programs = export(tmp_path, "forged", variant="forge-import")
    assert done.returncode == 0, done.stderr
    forged = [
        p
        for p in tmp_path.rglob("*")
        if p.name in ("junit.xml",) or p.name.endswith(".metrics.json")
    ]
    assert forged, "the variant wrote its forgeries"
    done, session = verify(tmp_path, "gate", {"B": programs})
    assert session is not None
    assert session["gate"]["passed"] is False
    assert "fwd: rel_rms" in session["gate"]["programs"][0]["error"]


def test_measure_times_both_arms_call_by_call_and_writes_valid_metrics(tmp_path: Path) -> None:
    _, a = export(tmp_path, "a")
    _, b = export(tmp_path, "b", variant="wrong")  # times fine: a measure run verifies first
    done, session = verify(tmp_path, "measure", {"A": a, "B": b}, "--rounds", "2", "--repeats", "3")
    assert done.returncode == 0, done.stderr
    assert session is not None
    assert session["arms"]["B"]["failure"]
    assert "rel_rms" in session["arms"]["B"]["failure"]
    assert "rounds" not in session  # nothing is timed when an arm fails verification

    _, good = export(tmp_path, "good")
    done, session = verify(
        tmp_path, "measure", {"A": a, "B": good}, "--rounds", "2", "--repeats", "3"
    )
    assert session is not None
    assert session["identical"] is True  # the same code exported twice: the same bytes
    assert "rounds" not in session


def test_a_screening_session_times_the_champion_and_each_distinct_candidate(tmp_path: Path) -> None:
    """One session, the champion first and three candidates: one right and different (timed), one
    the champion's bytes (named, not timed), one wrong (its failure, not timed)."""
    _, a = export(tmp_path, "a")
    _, same = export(tmp_path, "same")
    _, wrong = export(tmp_path, "wrong", variant="wrong")
    out_b = export_reciprocal(tmp_path)
    arms = {"A": a, "C1": out_b, "C2": same, "C3": wrong}
    done, session = verify(tmp_path, "measure", arms, "--rounds", "3", "--repeats", "2")
    assert done.returncode == 0, done.stderr
    assert session is not None
    assert session["same_as_first"] == ["C2"]
    assert session["arms"]["C3"]["failure"]
    assert "rel_rms" in session["arms"]["C3"]["failure"]
    assert len(session["rounds"]) == 3
    for i, r in enumerate(session["rounds"]):
        assert set(r) == {"first", "A", "C1"}
        assert r["first"] in ("A", "C1")
        for arm in ("A", "C1"):
            assert schema_errors(r[arm]) == []
            want = {"round": i + 1, "rounds": 3, "arm": arm, "first": r["first"]}
            assert r[arm]["session"] == want
            assert any("4 arms timed call by call" in n for n in r[arm]["notes"])


def test_measure_takes_two_to_nine_arms(tmp_path: Path) -> None:
    _, a = export(tmp_path, "a")
    arms = {f"C{i}": a for i in range(9)} | {"A": a}
    done, _ = verify(tmp_path, "measure", arms)
    assert done.returncode == 2
    assert "--mode measure takes 2 to 9 --arm, got 10" in done.stderr
    done, _ = verify(tmp_path, "gate", {"A": a, "B": a})
    assert done.returncode == 2
    assert "--mode gate takes 1 --arm, got 2" in done.stderr


def test_measure_rounds_hold_one_metrics_document_per_arm(tmp_path: Path) -> None:
    _, a = export(tmp_path, "a")
    out_b = export_reciprocal(tmp_path)
    done, session = verify(
        tmp_path,
        "measure",
        {"A": a, "B": out_b},
        "--rounds",
        "3",
        "--repeats",
        "4",
        "--warmup",
        "1",
    )
    assert done.returncode == 0, done.stderr
    assert session is not None
    assert session["identical"] is False
    assert len(session["rounds"]) == 3
    for i, r in enumerate(session["rounds"]):
        assert r["first"] in ("A", "B")
        for arm in ("A", "B"):
            doc = r[arm]
            assert schema_errors(doc) == []
            assert len(doc["measurements"]["fwd"]["samples_ms"]) == 4
            assert doc["session"] == {"round": i + 1, "rounds": 3, "arm": arm, "first": r["first"]}
            assert doc["verification"]["timed_outputs_compared"] == 4
            assert doc["programs"]["sha256"] == session["arms"][arm]["programs"]
    # One peak for both arms (measured once in the process: no CPU is in the table).
    peaks = {json.dumps(r[arm]["device"]["peak"]) for r in session["rounds"] for arm in "AB"}
    assert len(peaks) == 1


def test_min_time_gives_a_cheap_program_more_calls_the_same_for_both_arms(tmp_path: Path) -> None:
    """The toy's programs take microseconds: 1 s a round asks for more calls than 10x --repeats,
    so each gets exactly that many, in every round and arm, and the documents say so; the outputs
    kept for the spot checks stay at --repeats calls' worth, spread over the 30."""
    _, a = export(tmp_path, "a")
    out_b = export_reciprocal(tmp_path)
    extra = ("--rounds", "2", "--repeats", "3", "--min-time-ms", "1000")
    done, session = verify(tmp_path, "measure", {"A": a, "B": out_b}, *extra)
    assert done.returncode == 0, done.stderr
    assert session is not None
    for r in session["rounds"]:
        for arm in ("A", "B"):
            doc = r[arm]
            assert schema_errors(doc) == []
            names = set(doc["measurements"])
            assert doc["timing"]["calls"] == dict.fromkeys(names, 30)
            assert doc["timing"]["min_time_ms"] == 1000
            assert doc["timing"]["repeats"] == 3
            for m in doc["measurements"].values():
                assert len(m["samples_ms"]) == 30
            # Outputs kept for the spot checks: no more than --repeats calls' worth, as before.
            assert doc["verification"]["timed_outputs_compared"] == 3 * len(names)
    done, _ = verify(tmp_path, "measure", {"A": a, "B": out_b}, "--min-time-ms", "60001")
    assert done.returncode == 2
    assert "--min-time-ms must be in [0, 60000], got 60001" in done.stderr


@pytest.mark.parametrize(
    ("repeats", "min_time_ms", "call_ms", "calls"),
    [
        (10, 250, 6.6, 38),  # a few-ms kernel: its calls fill the time
        (10, 250, 50.0, 10),  # a model step: --repeats already takes longer
        (10, 250, 0.01, 100),  # a microsecond program: ten times --repeats at most
        (10, 0, 1.0, 10),  # off
        (3, 250, 0.0, 30),  # a clock that read 0
    ],
)
def test_calls_for_fills_the_time_between_repeats_and_ten_times_it(
    repeats: int, min_time_ms: int, call_ms: float, calls: int
) -> None:
    from hillclimb_bench.verify import calls_for

    assert calls_for(repeats, min_time_ms, call_ms) == calls


def test_the_probe_costs_a_call_at_the_mean_of_the_sets_and_the_slowest_arm() -> None:
    from hillclimb_bench.verify import calls_for, probe_cost

    # Calls cycle through 3 sets twice. B is fast on set 0 only (1 ms) and slow on sets 1 and 2
    # (10 ms), with one preempted call on set 1: its cost is the sets' mean, 7 ms, not its 1 ms.
    b = [1.0, 10.0, 10.0, 1.0, 25.0, 10.0]
    assert probe_cost({"B": b}, 3) == pytest.approx(7.0)
    assert calls_for(10, 250, probe_cost({"B": b}, 3)) == 36  # not 100 calls from its fast set
    # The slowest arm sets the count: a fast candidate cannot buy itself more calls.
    a = [4.0, 4.0, 4.0, 4.0, 4.0, 4.0]
    assert probe_cost({"A": a, "B": b}, 3) == pytest.approx(7.0)
    assert probe_cost({"A": a, "B": [0.1] * 6}, 3) == pytest.approx(4.0)


def test_a_target_that_imports_its_kernel_cannot_verify(tmp_path: Path) -> None:
    _, programs = export(tmp_path, "good")
    where = tree(tmp_path, "leaky-verifier")  # the kernel is present ...
    target = where / "toy_target.py"
    target.write_text("import toykernel  # noqa: F401\n" + target.read_text())  # ... and imported
    out = tmp_path / "leaky.json"
    done = step(where, *verify_args("gate", {"B": programs}, out))
    assert done.returncode == 3, done.stderr
    assert "the code under test is loaded in the verifier (toykernel)" in done.stderr
    assert not out.exists()


def test_programs_on_sys_path_make_the_verifier_refuse(tmp_path: Path) -> None:
    _, programs = export(tmp_path, "good")
    where = tree(tmp_path, "path-verifier", kernel=False)
    out = tmp_path / "p.json"
    done = step(where, *verify_args("gate", {"B": programs}, out), path=(programs,))
    assert done.returncode == 3
    assert "on sys.path is a folder of exported programs" in done.stderr


def test_a_kernel_installed_outside_the_tree_is_refused_by_the_export(tmp_path: Path) -> None:
    """The adopter's silent no-change: both arms imported one installed copy. The export says where
    the kernel came from and refuses."""
    root = tree(tmp_path, "installed")
    site = tmp_path / "site"
    site.mkdir()
    shutil.move(str(root / "toykernel"), str(site / "toykernel"))
    out = tmp_path / "o"
    requests = str(request_file(tmp_path, 1))
    done = step(
        root, "export", "--platform", "cpu", "--requests", requests, "--out", str(out), path=(site,)
    )
    assert done.returncode == 1
    assert f"toykernel: imported from {site}" in done.stderr
    assert "outside the tree under test" in done.stderr
    assert not (out / "manifest.json").exists()


def test_bad_arguments_exit_2_with_one_line(tmp_path: Path) -> None:
    done = step(
        tree(tmp_path, "t"),
        "verify",
        "--mode",
        "measure",
        "--platform",
        "cpu",
        "--draw",
        "1",
        "--arm",
        "A=x",
        "--out",
        "o.json",
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["verify: --mode measure takes 2 to 9 --arm, got 1"]
    done = step(tree(tmp_path, "u"), "frobnicate")
    assert done.returncode == 2
    assert "usage: python -m <target module> requests|export|verify" in done.stderr


def test_help_is_asked_for_and_exits_0(tmp_path: Path) -> None:
    root = tree(tmp_path, "h")
    for flag in ("--help", "-h"):
        done = step(root, flag)
        assert done.returncode == 0, done.stderr
        assert "usage: python -m <target module> requests|export|verify" in done.stdout
        assert "verify" in done.stdout.splitlines()[-1]
    done = step(root, "export", "--help")
    assert done.returncode == 0, done.stderr
    assert "--requests" in done.stdout


def test_the_request_file_says_only_what_to_build(tmp_path: Path) -> None:
    """Arm-blind exports: the request file holds the programs' keys, shapes and argument shapes, and
    nothing an export could tell a run, a draw or an arm by."""
    doc = json.loads(request_file(tmp_path, 5).read_text())
    assert doc["schema"] == "hillclimb.requests/v1"
    assert set(doc) == {"schema", "target", "versions", "requests"}
    assert doc["versions"]["jax"]
    for item in doc["requests"]:
        assert set(item) == {"key", "name", "case", "params", "args"}  # no purpose, no draw
    assert doc["requests"][0]["args"] == {"tuple": [{"shape": [64, 1024], "dtype": "float32"}]}
    done = step(tree(tmp_path, "u"), "export", "--platform", "cpu", "--draw", "5", "--out", "o")
    assert done.returncode == 2
    assert "--requests" in done.stderr


def test_the_export_changes_no_global_jax_option(tmp_path: Path) -> None:
    """The export sets nothing a kernel could read that the suite does not also run under: without
    the harness's environment, the programs keep their source locations (and the export says so)."""
    root = tree(tmp_path, "t")
    out = tmp_path / "o"
    env_free = {k: v for k, v in os.environ.items() if k != "JAX_TRACEBACK_IN_LOCATIONS_LIMIT"}
    done = subprocess.run(
        [sys.executable, "-m", "toy_target", "export", "--platform", "cpu", "--requests",
         str(request_file(tmp_path)), "--out", str(out)],
        cwd=root, env={**env_free, "PYTHONPATH": str(SRC), "JAX_PLATFORMS": "cpu"},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "JAX_TRACEBACK_IN_LOCATIONS_LIMIT is not 0" in done.stderr
    from jax import export as jax_export

    program = next(out.glob("*.jaxexport"))
    text = jax_export.deserialize(bytearray(program.read_bytes())).mlir_module()
    assert "toykernel/__init__.py" in text  # the kernel's own lines: the option was left alone


def witness(tmp: Path, root: Path, variant: str) -> dict[str, Any]:
    """The witness plugin in a pytest run of ``root``: the hashes it records in the JUnit report."""
    (root / "test_softmax.py").write_text(
        "import numpy as np\n"
        "from toykernel import softmax\n\n\n"
        "def test_rows_sum_to_one():\n"
        "    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)\n"
        "    assert np.allclose(np.asarray(softmax(x)).sum(axis=-1), 1.0, atol=1e-5)\n"
    )
    shutil.copy(request_file(tmp), root / ".hillclimb-request.json")
    junit = tmp / f"{root.name}-junit.xml"
    spec = {"module": "toy_target", "platform": "cpu", "requests": ".hillclimb-request.json"}
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), str(root)]),
        "TOY_VARIANT": variant,
        "JAX_PLATFORMS": "cpu",
        "JAX_TRACEBACK_IN_LOCATIONS_LIMIT": "0",
        "PYTEST_PLUGINS": "hillclimb_bench.witness",
        "HILLCLIMB_WITNESS": json.dumps(spec),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_softmax.py",
         f"--junitxml={junit}"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r'<property name="hillclimb-witness" value="([^"]*)"', junit.read_text())
    assert found, junit.read_text()
    import html

    return json.loads(html.unescape(found.group(1)))


def hashes(programs: Path) -> dict[str, str]:
    manifest = json.loads((programs / "manifest.json").read_text())
    return {p["key"]: p["sha256"] for p in manifest["programs"]}


def test_the_witness_sees_the_programs_the_export_wrote(tmp_path: Path) -> None:
    _, programs = export(tmp_path, "good")
    report = witness(tmp_path, tree(tmp_path, "suite"), "good")
    assert report["errors"] == {}
    assert report["programs"] == hashes(programs)


def test_a_kernel_that_reads_how_it_is_run_builds_another_program_for_its_suite(
    tmp_path: Path,
) -> None:
    """Right in both processes, so the verifier passes it: only the witness tells that the program
    the suite's process builds is not the one the export wrote."""
    done, programs = export(tmp_path, "aware", variant="export-aware")
    assert done.returncode == 0, done.stderr
    report = witness(tmp_path, tree(tmp_path, "suite"), "export-aware")
    differ = [k for k, h in hashes(programs).items() if report["programs"].get(k) != h]
    assert sorted(differ) == sorted(hashes(programs))
