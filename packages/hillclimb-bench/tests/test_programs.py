"""What the verifier believes of an export's folder: only programs that are what they must be.

Each test crafts the folder an attacker's export could write (the export is the candidate's process)
and checks that ``programs.load`` refuses it with a line naming the program and the reason.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

import hillclimb_bench as hb
from hillclimb_bench import VerificationError, programs, timing, verify
from hillclimb_bench.programs import Request

ARGS = (jax.ShapeDtypeStruct((4, 8), jnp.float32),)
REQUEST = Request("fwd", "r4-c8", "bench", ARGS)


def write(folder: Path, fn, *, args=ARGS, platforms=("cpu",), **kw) -> Path:
    exp = export.export(jax.jit(fn), platforms=list(platforms), **kw)(*args)
    programs.write(folder, [(REQUEST, exp)], platform=platforms[0], source={})
    return folder


def test_an_honest_program_loads_with_the_hash_of_its_bytes(tmp_path: Path) -> None:
    folder = write(tmp_path, lambda x: jnp.tanh(x) * 2)
    loaded = programs.load(folder, REQUEST, platform="cpu")
    data = (folder / programs.file_name(REQUEST)).read_bytes()
    assert loaded.sha256 == programs.sha256(data)
    assert loaded.custom_calls == ()
    x = np.ones((4, 8), np.float32)
    np.testing.assert_allclose(loaded.exported.call(x), np.tanh(x) * 2, rtol=1e-6)


def test_the_manifest_cannot_point_at_another_file(tmp_path: Path) -> None:
    folder = write(tmp_path, lambda x: x + 1)
    manifest = json.loads((folder / programs.MANIFEST).read_text())
    manifest["programs"][0]["file"] = "../../etc/passwd"
    (folder / programs.MANIFEST).write_text(json.dumps(manifest))
    # The file name comes from the request, so the manifest's word changes nothing.
    assert programs.load(folder, REQUEST, platform="cpu").size > 0


def test_a_program_for_another_platform_is_refused(tmp_path: Path) -> None:
    folder = write(tmp_path, lambda x: x + 1, platforms=("cpu", "tpu"))
    with pytest.raises(VerificationError, match=r"^fwd@r4-c8: exported for \['cpu', 'tpu'\]"):
        programs.load(folder, REQUEST, platform="cpu")


def test_a_program_at_another_shape_is_refused(tmp_path: Path) -> None:
    folder = write(tmp_path, lambda x: x + 1, args=(jax.ShapeDtypeStruct((2, 8), jnp.float32),))
    with pytest.raises(
        VerificationError,
        match=r"takes \['float32\[2, 8\]'\], the harness passes \['float32\[4, 8\]'\]",
    ):
        programs.load(folder, REQUEST, platform="cpu")


def test_a_program_taking_other_arguments_is_refused(tmp_path: Path) -> None:
    two = (jax.ShapeDtypeStruct((4, 8), jnp.float32), jax.ShapeDtypeStruct((4, 8), jnp.float32))
    folder = write(tmp_path, lambda x, y: x + y, args=two)
    with pytest.raises(VerificationError, match=r"takes arguments .*, the harness passes"):
        programs.load(folder, REQUEST, platform="cpu")


def test_stateful_rng_is_refused(tmp_path: Path) -> None:
    folder = write(tmp_path, lambda x: x + jax.lax.rng_uniform(0.0, 1.0, x.shape))
    with pytest.raises(
        VerificationError, match=r"refused: operation rng \(host round trip or state across calls\)"
    ):
        programs.load(folder, REQUEST, platform="cpu")


def _ffi(target: str, *, side_effect: bool = False):
    def fn(x):
        return jax.ffi.ffi_call(
            target, jax.ShapeDtypeStruct(x.shape, x.dtype), has_side_effect=side_effect
        )(x)

    return fn


@pytest.mark.parametrize(
    "target", ["xla_ffi_python_cpu_callback", "xla_python_cpu_callback", "my_native_kernel"]
)
def test_a_custom_call_off_the_allowlist_is_refused(tmp_path: Path, target: str) -> None:
    """A host callback cannot be serialized by JAX; an export that disables the check (or writes the
    bytes itself) still meets the verifier's own walk of the module."""
    folder = write(
        tmp_path, _ffi(target), disabled_checks=[export.DisabledSafetyCheck.custom_call(target)]
    )
    with pytest.raises(VerificationError, match=rf"custom_call '{target}' is not allowed on cpu"):
        programs.load(folder, REQUEST, platform="cpu")


def test_an_allowed_custom_call_with_a_side_effect_is_refused(tmp_path: Path) -> None:
    target = "lapack_sgeqrf_ffi"
    checks = [export.DisabledSafetyCheck.custom_call(target)]
    folder = write(tmp_path / "a", _ffi(target, side_effect=True), disabled_checks=checks)
    with pytest.raises(VerificationError, match=r"the program has effects \[FfiEffect\(\)\]"):
        programs.load(folder, REQUEST, platform="cpu")
    # The same program with its effects struck from the metadata: the module still says it.
    exp = export.export(
        jax.jit(_ffi(target, side_effect=True)), platforms=["cpu"], disabled_checks=checks
    )(*ARGS)
    quiet = dataclasses.replace(exp, ordered_effects=(), unordered_effects=())
    programs.write(tmp_path / "b", [(REQUEST, quiet)], platform="cpu", source={})
    with pytest.raises(
        VerificationError, match=r"custom_call 'lapack_sgeqrf_ffi' has a side effect"
    ):
        programs.load(tmp_path / "b", REQUEST, platform="cpu")


def test_damaged_missing_or_linked_programs_are_refused(tmp_path: Path) -> None:
    folder = write(tmp_path / "a", lambda x: x + 1)
    path = folder / programs.file_name(REQUEST)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(
        VerificationError, match=r"^fwd@r4-c8: .*(does not deserialize|does not parse|takes)"
    ):
        programs.load(folder, REQUEST, platform="cpu")
    path.unlink()
    with pytest.raises(
        VerificationError, match=r"the export wrote no program fwd_r4-c8\.jaxexport"
    ):
        programs.load(folder, REQUEST, platform="cpu")
    honest = write(tmp_path / "b", lambda x: x + 1) / programs.file_name(REQUEST)
    path.symlink_to(honest)
    with pytest.raises(VerificationError, match=r"the export wrote no program"):
        programs.load(folder, REQUEST, platform="cpu")


def test_a_program_over_the_size_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write(tmp_path, lambda x: x + 1)
    monkeypatch.setattr(programs, "MAX_PROGRAM_BYTES", 64)
    with pytest.raises(VerificationError, match=r"bytes, over the cap"):
        programs.load(folder, REQUEST, platform="cpu")


def test_the_same_function_gives_the_same_bytes_from_any_folder(tmp_path: Path) -> None:
    """With locations left out (what the export step sets), the bytes depend on the program only:
    that is how the harness tells a change that changed nothing."""
    jax.config.update("jax_traceback_in_locations_limit", 0)
    try:
        a = write(tmp_path / "a", lambda x: jnp.sin(x) * 3)
        b = write(tmp_path / "b", lambda x: jnp.sin(x) * 3)
        c = write(tmp_path / "c", lambda x: jnp.sin(x) * 4)
    finally:
        jax.config.update("jax_traceback_in_locations_limit", 10)
    digest = [programs.load(f, REQUEST, platform="cpu").sha256 for f in (a, b, c)]
    assert digest[0] == digest[1] != digest[2]


def test_requests_name_their_files_safely() -> None:
    request = dataclasses.replace(REQUEST, case="../../x y")
    assert "/" not in programs.file_name(request)
    assert programs.file_name(request).endswith(programs.SUFFIX)


# --- what the candidate can hand the verifier beyond the programs ---------------------------------


def test_a_manifest_nested_past_the_parser_is_refused_not_a_crash(tmp_path: Path) -> None:
    """The manifest is the export's words: one deep enough to exhaust the JSON parser's recursion
    must end as a refusal (the arm's failure), never as a verifier that died without a session."""
    folder = write(tmp_path / "p", lambda x: x * 2)
    doc = json.loads((folder / "manifest.json").read_text())
    deep = "[" * 200_000 + "]" * 200_000
    text = json.dumps(doc)[:-1] + ', "source": {"info": ' + deep + "}}"
    (folder / "manifest.json").write_text(text)
    with pytest.raises(VerificationError, match="is not JSON"):
        programs.read_manifest(folder)
    assert verify.reported_info(folder) == {}


def test_a_program_that_raises_while_timed_is_its_arm_s_failure() -> None:
    calls = {"B": 0}

    def b(x):
        calls["B"] += 1
        if calls["B"] == 3:
            raise RuntimeError("device lost")
        return x

    with pytest.raises(timing.ProgramCallError) as failed:
        timing.time_interleaved(
            "fwd",
            {"A": lambda x: x, "B": b},
            {"A": [(1,)], "B": [(1,)]},
            repeats=4,
            warmup=1,
            block=lambda out: out,
            keep={},
        )
    assert failed.value.arm == "B"
    assert "raised RuntimeError: device lost" in str(failed.value)


def test_time_the_process_did_not_run_is_on_the_wall_clock_only() -> None:
    """A preempted call waits as a sleeping one does: the wall clock counts it, CPU time not."""
    import time

    def waits(x):
        time.sleep(0.02)
        return x

    def works(x):
        end = time.perf_counter() + 0.02
        while time.perf_counter() < end:
            pass
        return x

    times, _ = timing.time_interleaved(
        "fwd",
        {"A": works, "B": waits},
        {"A": [(1,)], "B": [(1,)]},
        repeats=3,
        warmup=0,
        block=lambda out: out,
        keep={},
    )
    assert min(times["B"].wall) >= 20.0
    assert max(times["B"].cpu) < 5.0  # the sleep is not the process's time
    assert min(times["A"].wall) >= 20.0
    # Busy, it ran (almost) all the time the wall clock saw; on a loaded machine, less, never more.
    assert all(c <= w + 0.5 for c, w in zip(times["A"].cpu, times["A"].wall, strict=True))
    assert times["A"].on("cpu") is times["A"].cpu
    assert times["A"].on("wall") is times["A"].wall


def test_the_decisive_clock_is_cpu_time_only_on_a_pinned_cpu() -> None:
    def args(platform: str) -> argparse.Namespace:
        return argparse.Namespace(platform=platform)

    assert verify.decisive_clock(args("cpu"), 1) == "cpu"
    assert verify.decisive_clock(args("cpu"), None) == "wall"  # threads in parallel add CPU time up
    assert verify.decisive_clock(args("tpu"), 0) == "wall"  # the host's CPU time misses the device
    assert hb.metrics.clock_names("cpu") == {
        "clock": "process_time+block_until_ready (one pinned core)",
        "wall_clock": "perf_counter+block_until_ready",
    }
    assert hb.metrics.clock_names("wall") == {"clock": "perf_counter+block_until_ready"}


def test_a_target_document_cannot_overwrite_what_the_verifier_measured() -> None:
    class Forging(hb.Target):
        def document(self, verified, info):
            return {"notes": ["fine"], "measurements": {"fwd": {"median_ms": 0.001}}}

    arm = verify.Arm("B", Path("."))
    with pytest.raises(verify.BrokenError, match=r"may not set: \['measurements'\]"):
        verify.target_document(Forging(), arm)
    assert hb.Target().document({}, {}) == {}


# --- allowed custom calls, held to their documented signatures (issue 35) ------------------------

SQUARE = jax.ShapeDtypeStruct((64, 64), jnp.float32)
SQUARE_REQUEST = Request("fwd", "n64", "bench", (SQUARE,))


def _getrf(pivots: int, *, alias: bool):
    """LU through the allowed ``lapack_sgetrf_ffi``, with the caller's result shapes and alias."""
    results = (
        jax.ShapeDtypeStruct((64, 64), jnp.float32),
        jax.ShapeDtypeStruct((pivots,), jnp.int32),
        jax.ShapeDtypeStruct((), jnp.int32),
    )
    aliases = {0: 0} if alias else {}
    return lambda x: jax.ffi.ffi_call("lapack_sgetrf_ffi", results, input_output_aliases=aliases)(x)


@pytest.mark.parametrize(
    ("label", "fn", "args"),
    [
        ("lu", jax.lax.linalg.lu, (SQUARE,)),
        ("qr", jnp.linalg.qr, (SQUARE,)),
        ("cholesky", jnp.linalg.cholesky, (SQUARE,)),
        ("eigh", jnp.linalg.eigh, (SQUARE,)),
        ("svd", jnp.linalg.svd, (SQUARE,)),
        (
            "svd-reduced-batched",
            lambda x: jnp.linalg.svd(x, full_matrices=False),
            (jax.ShapeDtypeStruct((3, 8, 5), jnp.float32),),
        ),
        (
            "triangular-solve-right",
            lambda a, b: jax.lax.linalg.triangular_solve(a, b, left_side=False, transpose_a=True),
            (jax.ShapeDtypeStruct((5, 5), jnp.float32), jax.ShapeDtypeStruct((8, 5), jnp.float32)),
        ),
        ("getrf-as-jax-emits-it", _getrf(64, alias=True), (SQUARE,)),
        ("qr-wide", jnp.linalg.qr, (jax.ShapeDtypeStruct((5, 8), jnp.float32),)),
        (
            "qr-tall-complete",
            lambda x: jnp.linalg.qr(x, mode="complete"),
            (jax.ShapeDtypeStruct((8, 5), jnp.float32),),
        ),
    ],
)
def test_linear_algebra_as_jax_lowers_it_passes_its_signature(label: str, fn, args) -> None:
    exp = export.export(jax.jit(fn), platforms=["cpu"])(*args)
    calls = programs.scan_module(exp.mlir_module_serialized, platform="cpu", key=label)
    assert calls
    assert all(c.startswith("lapack_") for c in calls)


@pytest.mark.parametrize(
    ("fn", "caught"),
    [
        # The pivots of a 64 x 64 LU in an int32[1]: getrf would write 63 ints past the buffer.
        (_getrf(1, alias=False), r"result 1 is \[1\] i32, expected \[64\] i32"),
        (_getrf(64, alias=False), r"the in-place alias of result 0 to operand 0 is missing"),
    ],
)
def test_an_allowed_call_off_its_signature_is_refused_before_it_compiles(
    tmp_path: Path, fn, caught: str
) -> None:
    exp = export.export(jax.jit(fn), platforms=["cpu"])(SQUARE)
    programs.write(tmp_path, [(SQUARE_REQUEST, exp)], platform="cpu", source={})
    with pytest.raises(
        VerificationError, match=rf"^fwd@n64: refused: custom_call 'lapack_sgetrf_ffi' .*{caught}"
    ):
        programs.load(tmp_path, SQUARE_REQUEST, platform="cpu")


def _out_of_range(x):
    """Indexing far outside ``x`` ([64, 8]) by every op that takes indices, with every promise a
    program can make about them: what a candidate would write to reach memory past its buffers."""
    far = jnp.array([[2**31 - 1], [-(2**31) + 1], [70], [3]], dtype=jnp.int32)
    promise = jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS
    scatter_dims = jax.lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    gather_dims = jax.lax.GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)
    )
    flags = {"indices_are_sorted": True, "unique_indices": True, "mode": promise}
    scattered = jax.lax.scatter(x, far, jnp.full((4, 8), 7.0), scatter_dims, **flags)
    gathered = jax.lax.gather(x, far, gather_dims, (1, 8), **flags)
    updated = jax.lax.dynamic_update_slice(x, jnp.ones((4, 8)), (2**31 - 1, 0))
    sliced = jax.lax.dynamic_slice(x, (-(2**31) + 1, 0), (4, 8))
    return scattered, gathered, updated, sliced


def test_indices_out_of_range_stay_inside_the_buffers_xla_gave_them(tmp_path: Path) -> None:
    """Why the verifier's own memory is not the candidate's to write (docs/security.md, What is
    left, "The verifier trusts XLA and LAPACK"): a verified program is XLA operations, whose
    indices XLA clamps or drops whatever the program promises, plus allowed calls whose signatures
    were checked. This holds the jaxlib in use to the first half: if a release wrote where these
    indices point, it fails."""
    args = (jax.ShapeDtypeStruct((64, 8), jnp.float32),)
    request = Request("fwd", "n64", "bench", args)
    exp = export.export(jax.jit(_out_of_range), platforms=["cpu"])(*args)
    programs.write(tmp_path, [(request, exp)], platform="cpu", source={})
    loaded = programs.load(tmp_path, request, platform="cpu")  # nothing here to refuse
    x = np.arange(64 * 8, dtype=np.float32).reshape(64, 8)
    scattered, gathered, updated, sliced = (np.asarray(o) for o in loaded.exported.call(x))
    rows = x.copy()
    rows[3] = 7.0  # the one update in range; the others are dropped
    np.testing.assert_array_equal(scattered, rows)
    np.testing.assert_array_equal(gathered, x[[63, 0, 63, 3]])  # clamped to the first and last row
    rows = x.copy()
    rows[60:] = 1.0  # the window clamped to end at the last row
    np.testing.assert_array_equal(updated, rows)
    np.testing.assert_array_equal(sliced, x[:4])
    # The input, which the CPU client may have used in place, is untouched.
    np.testing.assert_array_equal(x, np.arange(64 * 8, dtype=np.float32).reshape(64, 8))


@pytest.mark.parametrize(
    ("target", "operands", "results", "caught"),
    [
        # orgqr of a wide matrix: JAX never asks for one (it takes m >= n), LAPACK misbehaves on it.
        (
            "lapack_sorgqr_ffi",
            ["!vhlo.tensor_v1<8x64x!vhlo.f32_v1>", "!vhlo.tensor_v1<8x!vhlo.f32_v1>"],
            ["!vhlo.tensor_v1<8x64x!vhlo.f32_v1>"],
            "orgqr needs at least as many rows as columns",
        ),
        # An empty matrix: JAX lowers it without a call; LAPACK's workspace query is undefined.
        (
            "lapack_sgesdd_ffi",
            ["!vhlo.tensor_v1<0x8x!vhlo.f32_v1>"],
            [
                "!vhlo.tensor_v1<0x8x!vhlo.f32_v1>",
                "!vhlo.tensor_v1<0x!vhlo.f32_v1>",
                "!vhlo.tensor_v1<0x0x!vhlo.f32_v1>",
                "!vhlo.tensor_v1<8x8x!vhlo.f32_v1>",
                "!vhlo.tensor_v1<!vhlo.i32_v1>",
            ],
            r"shape \[0, 8\] is empty",
        ),
    ],
)
def test_calls_jax_never_emits_are_refused(target, operands, results, caught) -> None:
    from hillclimb_bench import signatures

    problem = signatures.check_call(target, operands, results, "", "")
    assert problem is not None
    assert re.search(caught, problem), problem
