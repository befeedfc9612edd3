"""Tripwires against a kernel that tampers with its evaluator (protected).

The kernel runs in the harness's process, so this is not a sandbox: it catches the documented
cheap tricks (patched timers, changed global JAX config, swapped ``block_until_ready``) by
snapshotting them *before* ``kernels.gdn`` is imported and comparing afterwards.
"""

from __future__ import annotations

import time
from typing import Any

import jax

# JAX options a kernel could flip at import to speed itself up or to blunt the oracle.
_CONFIG_KEYS = (
    "jax_enable_x64",
    "jax_default_matmul_precision",
    "jax_numpy_dtype_promotion",
    "jax_numpy_rank_promotion",
    "jax_debug_nans",
    "jax_debug_infs",
    "jax_disable_jit",
    "jax_platforms",
    "jax_pallas_enable_debug_checks",
    "jax_pallas_poison_buffers",
)


def snapshot() -> dict[str, Any]:
    """Identities of timing functions and values of global JAX options, right now."""
    snap: dict[str, Any] = {
        "time.perf_counter": time.perf_counter,
        "time.perf_counter_ns": time.perf_counter_ns,
        "time.monotonic": time.monotonic,
        "time.monotonic_ns": time.monotonic_ns,
        "jax.block_until_ready": jax.block_until_ready,
        "jax.jit": jax.jit,
        "jax.vjp": jax.vjp,
        "jax.profiler.trace": jax.profiler.trace,
    }
    for key in _CONFIG_KEYS:
        snap[f"config.{key}"] = jax.config.values.get(key, "<absent>")
    return snap


def changed(before: dict[str, Any]) -> list[str]:
    """Names whose identity or value differs from ``before``."""
    now = snapshot()
    out = []
    for key, old in before.items():
        new = now[key]
        same = new is old if key.startswith(("time.", "jax.")) else new == old
        if not same:
            out.append(f"{key}: {old!r} -> {new!r}")
    return out
