"""Cheap static gates on the editable kernel folder and on what importing it does."""

from __future__ import annotations

import time

import pytest

import kernels.gdn as gdn_pkg
from kernels.harness import guards, spec, static_scan


def test_kernel_sources_pass_the_static_scan():
    findings = static_scan.scan_kernel_dir()
    assert not findings, "\n".join(findings)


@pytest.mark.parametrize(
    "snippet",
    [
        "import time",
        "from kernels.harness import spec",
        "from ..harness import oracle",
        "jax.config.update('jax_default_matmul_precision', 'bfloat16')",
        "os.environ['XLA_FLAGS'] = ''",
        "sys.modules['kernels.harness.bench'].perf_counter = f",
        "y = jax.pure_callback(f, shape, x)",
        "data = np.load(path)",
        "with open(p) as fh: pass",
        "import threading",
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
    assert guards.changed(globals_before_kernel_import) == []


def test_guards_notice_a_patched_timer(monkeypatch):
    before = guards.snapshot()
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    assert any(c.startswith("time.perf_counter") for c in guards.changed(before))


def test_public_api_surface():
    assert tuple(gdn_pkg.IMPLS) == spec.IMPLS
    for name in ("gdn", "BlockSizes", "recurrent_gdn", "chunk_gdn_xla", "chunk_gdn_pallas"):
        assert name in gdn_pkg.__all__
