"""Cheap static gates on the editable kernel folder and on what importing it does."""

from __future__ import annotations

import gc
import sys
import time

import jax
import pytest

import kernels.gdn as gdn_pkg
from kernels.harness import guards, spec, static_scan, testing, verify


def test_kernel_sources_pass_the_static_scan():
    findings = static_scan.scan_kernel_dir()
    assert not findings, "\n".join(findings)


@pytest.mark.parametrize(
    "snippet",
    [
        "import time",
        "from kernels.harness import spec",
        "from ..harness import oracle",
        "import hillclimb_bench.checks",
        "jax.config.update('jax_default_matmul_precision', 'bfloat16')",
        "os.environ['XLA_FLAGS'] = ''",
        "sys.modules['kernels.harness.bench'].perf_counter = f",
        "y = jax.pure_callback(f, shape, x)",
        "data = np.load(path)",
        "with open(p) as fh: pass",
        "import threading",
        "sys.settrace(watch)",
        "frame = sys._getframe(2)",
        "jax.monitoring.register_event_listener(f)",
        "gc.callbacks.append(f)",
        "caller = inspect.stack()[1]",
    ],
)
def test_static_scan_flags_a_bad_snippet(snippet):
    assert static_scan.scan_source(snippet), f"not flagged: {snippet!r}"


def test_static_scan_ignores_comments_and_strings():
    source = '"""Uses perf_counter? No: open( only in a docstring."""\nx = 1  # import time\n'
    assert static_scan.scan_source(source) == []


def test_kernel_import_leaves_global_state_alone(globals_before_kernel_import):
    """Timers, jit/vjp/block_until_ready and global JAX options are as they were before
    ``kernels.gdn`` was imported (conftest snapshots them first)."""
    assert gdn_pkg.gdn is not None
    # pytest itself wraps these hooks around each test (the bench runs without pytest).
    pytest_wraps = (
        "module.id.sys.unraisablehook:",
        "module.id.threading.excepthook:",
        "module.id.warnings.",
    )
    changed = guards.changed(globals_before_kernel_import)
    assert [c for c in changed if not c.startswith(pytest_wraps)] == []


def test_guards_notice_a_patched_timer(monkeypatch):
    before = guards.snapshot()
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    assert any(c.startswith("time.perf_counter") for c in guards.changed(before))


def test_guards_notice_hooks_that_would_run_kernel_code_after_compiling():
    """Trace, profile, gc and jax.monitoring hooks run Python later, e.g. while the bench draws its
    seed or compiles the oracle: the bench refuses a kernel that installs any of them."""
    before = guards.snapshot()

    def hook(*args, **kwargs):
        return None

    jax.monitoring.register_event_listener(hook)
    gc.callbacks.append(hook)
    sys.setprofile(hook)
    try:
        changed = guards.changed(before)
    finally:
        sys.setprofile(None)
        gc.callbacks.remove(hook)
        jax.monitoring.unregister_event_listener(hook)
    assert {c.split(":")[0] for c in changed} == {
        "hook.sys.setprofile",
        "hook.gc.callbacks",
        "hook.jax.monitoring",
    }
    assert guards.changed(before) == []


def test_guards_notice_a_swapped_check_or_a_loosened_tolerance(monkeypatch):
    """A kernel that replaced one of the bench's checks, or loosened a tolerance in memory,
    would pass whatever it computes: the guards compare the whole loaded harness."""
    before = guards.snapshot()
    monkeypatch.setattr(verify, "compare", lambda *args, **kwargs: {})
    monkeypatch.setattr(testing, "assert_close", lambda *args, **kwargs: (0.0, 0.0))
    monkeypatch.setitem(spec.TOL_BENCH, "float32", spec.Tol(rel_rms=1e9, atol=1e9))
    changed = {c.split(":")[0] for c in guards.changed(before)}
    assert changed == {
        "harness.id.kernels.harness.verify.compare",
        "harness.id.kernels.harness.testing.assert_close",
        "harness.val.kernels.harness.spec.TOL_BENCH",
    }


def test_guards_notice_a_swapped_part_of_hillclimb_bench(monkeypatch):
    """The bench's timing loop, timed-output check and metrics writer are hillclimb_bench's: a
    kernel that swaps one (or the clock the loop reads) is seen like one that swaps the harness."""
    import hillclimb_bench

    before = guards.snapshot()
    monkeypatch.setattr(hillclimb_bench.checks, "check_kept", lambda *args, **kwargs: 0)
    monkeypatch.setattr(hillclimb_bench.timing, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(hillclimb_bench.metrics, "write", lambda *args, **kwargs: None)
    changed = {c.split(":")[0] for c in guards.changed(before)}
    assert changed == {
        "module.id.hillclimb_bench.checks.check_kept",
        "module.id.hillclimb_bench.checks.check_kept.__code__",
        "module.id.hillclimb_bench.timing.perf_counter",
        "module.id.hillclimb_bench.metrics.write",
        "module.id.hillclimb_bench.metrics.write.__code__",
    }


def test_public_api_surface():
    assert tuple(gdn_pkg.IMPLS) == spec.IMPLS
    for name in ("gdn", "BlockSizes", "recurrent_gdn", "chunk_gdn_xla", "chunk_gdn_pallas"):
        assert name in gdn_pkg.__all__
