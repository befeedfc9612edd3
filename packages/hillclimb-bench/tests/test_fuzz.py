"""Fuzzing the verifier's first steps with hostile bytes (issue 35), bounded in time.

An export's folder is the candidate's: its ``.jaxexport`` bytes and manifest can be anything. Each
mutation of an honest program (bytes flipped, cut, spliced, inserted) goes through the verifier's
first steps in another process, so a crash cannot take the test with it: loaded and compiled as the
verifier loads an arm (:func:`hillclimb_bench.verify.load_arm`: deserialize, parse, walk, check
calls, compile), then called once on an input, as verification calls it. Every case must end one
of three ways:

- ran (the mutation kept a valid program, which verification then judges on its outputs);
- refused: the arm's failure naming the program, or the call raising (the verifier turns both into
  the candidate's ``invalid``);
- the process killed by a signal (a C++ abort in MLIR's parser, a fault in XLA): the engine runs
  the same session over the champion's programs and, when that ends cleanly, makes the candidate
  ``invalid``
  (``tests/security/hostile-programs.int.test.ts``).

What must never happen is anything else: an exception the verifier did not turn into a refusal (a
traceback for the user, a harness bug), or a verifier that hangs.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from hillclimb_bench import programs
from hillclimb_bench.programs import Request

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
MUTATIONS = 600
RANDOM_FILES = 24
RAN, REFUSED, OTHER = 0, 10, 11

# Exported in a child process, like every load below: a crash there cannot end the test.
EXPORT = """
import sys, jax, jax.numpy as jnp
from jax import export
from hillclimb_bench import programs
from hillclimb_bench.programs import Request
args = (jax.ShapeDtypeStruct((8, 8), jnp.float32),)
request = Request("fwd", "n8", "bench", args)
fn = lambda x: jnp.tanh(x @ x.T) + jax.lax.linalg.lu(x)[0]
exp = export.export(jax.jit(fn), platforms=["cpu"])(*args)
programs.write(__import__("pathlib").Path(sys.argv[1]), [(request, exp)], platform="cpu", source={})
"""


def _request() -> Request:
    import jax
    import jax.numpy as jnp

    return Request("fwd", "n8", "bench", (jax.ShapeDtypeStruct((8, 8), jnp.float32),))


def _mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    kind = rng.choice(("flip", "cut", "splice", "insert", "zero"))
    at = rng.randrange(len(b))
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif kind == "cut":
        del b[at:]
    elif kind == "splice":
        src = rng.randrange(len(b))
        n = rng.randint(1, 64)
        b[at : at + n] = b[src : src + n]
    elif kind == "insert":
        b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
    else:
        n = rng.randint(1, 64)
        b[at : at + n] = bytes(min(n, len(b) - at))
    return bytes(b)


# Takes each folder named on stdin through the verifier's steps and prints "<index> <outcome>"; a
# crash ends the process, and the test starts another one after the folder that killed it
# (importing JAX once per process, not once per mutation).
WORKER = f"""
import sys
import jax, jax.numpy as jnp, numpy as np
from pathlib import Path
from hillclimb_bench import verify
from hillclimb_bench.programs import Request
request = Request("fwd", "n8", "bench", (jax.ShapeDtypeStruct((8, 8), jnp.float32),))
x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
for line in sys.stdin:
    index, folder = line.split(maxsplit=1)
    try:
        arm = verify.Arm("B", Path(folder.strip()))
        arm.info = verify.reported_info(arm.folder)  # the manifest, read as a session reads it
        verify.load_arm(arm, [request], platform="cpu", continue_on_failure=False)
        if arm.failure is not None:
            code = {REFUSED}
        else:
            try:  # a program that raises is its failure (verify.verify_one)
                jax.block_until_ready(arm.compiled[request.key](x))
                code = {RAN}
            except Exception:
                code = {REFUSED}
    except BaseException:
        code = {OTHER}
    print(index, code, flush=True)
"""


def _outcomes(folders: list[Path], env: dict[str, str]) -> list[int]:
    """Each folder's outcome: RAN, REFUSED, OTHER, or -signal where it killed the verifier's
    steps."""
    results: list[int] = []
    timeout_s = 120 + 2 * len(folders)
    while len(results) < len(folders):
        rest = folders[len(results) :]
        stdin = "".join(f"{len(results) + i} {f}\n" for i, f in enumerate(rest))
        done = subprocess.run(
            [sys.executable, "-c", WORKER],
            input=stdin, env=env, capture_output=True, text=True, timeout=timeout_s, check=False,
        )  # fmt: skip
        before = len(results)
        for line in done.stdout.splitlines():
            index, code = line.split()
            assert int(index) == len(results), done.stdout
            results.append(int(code))
        if len(results) < len(folders):
            # The folder after the last answered one ended the process.
            assert done.returncode != 0, f"the loader stopped early without failing: {done.stderr}"
            results.append(done.returncode if done.returncode < 0 else OTHER)
        assert len(results) > before
    return results


def test_mutated_programs_run_are_refused_or_crash_but_never_anything_else(
    tmp_path: Path,
) -> None:
    honest = tmp_path / "honest"
    env = {**os.environ, "PYTHONPATH": str(SRC), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", EXPORT, str(honest)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    name = programs.file_name(_request())
    data = (honest / name).read_bytes()
    manifest = (honest / programs.MANIFEST).read_bytes()
    rng = random.Random(20261206)
    # The manifest is the candidate's too, read for information only: honest, mutated or another
    # document (its own generator, so the programs' mutations stay the same).
    manifests = random.Random(35)
    folders = []
    for i in range(MUTATIONS):
        folder = tmp_path / f"m{i}"
        folder.mkdir()
        (folder / name).write_bytes(_mutate(data, rng))
        wrong = [json.dumps({"schema": i}).encode(), _mutate(manifest, manifests), manifest][i % 3]
        (folder / programs.MANIFEST).write_bytes(wrong)
        folders.append(folder)
    # Files that were never a program: random bytes of random lengths, no manifest.
    for i in range(RANDOM_FILES):
        folder = tmp_path / f"r{i}"
        folder.mkdir()
        (folder / name).write_bytes(manifests.randbytes(manifests.randint(1, 4096)))
        folders.append(folder)
    # The honest program first: it must run, or every refusal below says nothing about the checks.
    first, *rest = _outcomes([honest, *folders], env)
    assert first == RAN, f"the honest program did not run through the verifier's steps: {first}"
    outcomes: dict[int, list[int]] = {}
    for i, outcome in enumerate(rest):
        outcomes.setdefault(outcome, []).append(i)
    summary = {k: len(v) for k, v in sorted(outcomes.items())}
    randoms = {k: sum(i >= MUTATIONS for i in v) for k, v in sorted(outcomes.items())}
    print(
        f"outcomes of {MUTATIONS} mutations and {RANDOM_FILES} random files (0 ran, 10 refused, "
        f"-N signal N): {summary}, of which random files: {randoms}"
    )
    raised = outcomes.get(OTHER)
    assert not raised, f"cases {raised} raised past the verifier's steps: {summary}"
    assert set(outcomes) <= {RAN, REFUSED} | {k for k in outcomes if k < 0}
    assert outcomes.get(REFUSED), "no mutation was refused: the fuzzing did not reach the checks"


def test_empty_and_zeroed_programs_are_refused_not_a_crash(tmp_path: Path) -> None:
    folders = []
    for cut in (0, 1, 16, 100):
        folder = tmp_path / f"zeros{cut}"
        folder.mkdir()
        (folder / programs.file_name(_request())).write_bytes(b"\x00" * cut)
        folders.append(folder)
    env = {**os.environ, "PYTHONPATH": str(SRC), "JAX_PLATFORMS": "cpu"}
    assert _outcomes(folders, env) == [REFUSED] * len(folders)
