"""Tripwires against a kernel that tampers with its evaluator (protected).

The kernel runs in the harness's process, so this is not a sandbox: it catches the documented
cheap tricks by snapshotting state *before* ``kernels.gdn`` is imported and comparing afterwards:
patched timers, changed global JAX config, a swapped ``block_until_ready``; trace, profile, gc and
``jax.monitoring`` hooks and extra Python threads that would run kernel code after it was compiled;
swapped harness functions and in-memory tolerances; and any function, class or module rebound, or
function whose code was swapped, in a module loaded before the kernel (a ``json.dumps`` that forges
the metrics, a ``numpy`` function that blunts the comparison). What it cannot see (a mutated object
behind an attribute that still points at it, an audit hook) is why the bench also verifies
everything it times against the oracle, and leaves without running atexit handlers.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import sys
import threading
import time
import types
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
    # Hooks through which Python code runs later, at times the kernel does not control: after the
    # kernel is compiled nothing of it may run (it would see the inputs and the seed).
    snap["hook.sys.settrace"] = sys.gettrace()
    snap["hook.sys.setprofile"] = sys.getprofile()
    snap["hook.threading.settrace"] = threading.gettrace()
    snap["hook.threading.setprofile"] = threading.getprofile()
    snap["hook.gc.callbacks"] = tuple(gc.callbacks)
    snap["hook.jax.monitoring"] = _monitoring_listeners()
    # Threads of Python code: a kernel's own would run on after it was compiled (at exit, the bench
    # leaves without running atexit handlers at all: see bench.py).
    snap["hook.python-threads"] = threading.active_count()
    snap.update(_harness_state())
    snap.update(_loaded_state())
    return snap


_BOUND_KINDS = (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)


def _loaded_state() -> dict[str, Any]:
    """Every function, class and module bound in every module loaded so far (json, numpy, jax, the
    standard library...), by identity, and the code object of every plain Python function. The
    harness calls into these (``json.dumps`` writes the metrics, ``numpy`` compares the outputs): a
    kernel that rebinds one, or swaps a function's code, to forge what the harness computes changes
    one of them. Modules loaded later (the kernel's own) are not in it."""
    out: dict[str, Any] = {}
    for key, module in list(sys.modules.items()):
        own = key.startswith(("kernels.harness", "kernels.gdn")) or key == "__main__"
        if module is None or own:
            continue
        try:
            members = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in members:
            if attr.startswith("__"):
                continue
            # Every callable: functions, classes, modules and objects such as numpy's ufuncs.
            if isinstance(value, _BOUND_KINDS) or callable(value):
                out[f"module.id.{key}.{attr}"] = value
                if isinstance(value, types.FunctionType):
                    out[f"module.id.{key}.{attr}.__code__"] = value.__code__
    return out


# Harness modules whose data (tolerances, shapes, seeds, presets) must stay as written.
_DATA_MODULES = ("kernels.harness.spec", "kernels.harness.presets")
_DATA_TYPES = (bool, int, float, str, bytes, tuple, frozenset, list, dict)


def _harness_state() -> dict[str, Any]:
    """The harness as loaded: every function, class and module bound in a loaded
    ``kernels.harness`` module (by identity), and the data of ``spec`` and ``presets`` (by value).
    A kernel that swaps a check (``verify.compare``, ``assert_close``) or loosens a tolerance in
    memory changes one of them."""
    out: dict[str, Any] = {}
    for key, module in list(sys.modules.items()):
        # The bench runs as __main__ (python -m): its real name is in its spec.
        name = getattr(getattr(module, "__spec__", None), "name", None) or key
        if module is None or not (name == "kernels.harness" or name.startswith("kernels.harness.")):
            continue
        for attr, value in list(vars(module).items()):
            if attr.startswith("__"):
                continue
            if callable(value) or isinstance(value, types.ModuleType):
                out[f"harness.id.{name}.{attr}"] = value
            elif name in _DATA_MODULES and (
                isinstance(value, _DATA_TYPES) or dataclasses.is_dataclass(value)
            ):
                out[f"harness.val.{name}.{attr}"] = copy.deepcopy(value)
    return out


def _monitoring_listeners() -> tuple[Any, ...]:
    """Every listener registered with ``jax.monitoring`` (called on compiles and cache events)."""
    from jax._src import monitoring

    getters = (
        "get_event_listeners",
        "get_event_duration_listeners",
        "get_event_time_span_listeners",
        "get_scalar_listeners",
    )
    return tuple(tuple(getattr(monitoring, g)()) for g in getters if hasattr(monitoring, g))


def changed(before: dict[str, Any]) -> list[str]:
    """Names whose identity or value differs from ``before``."""
    now = snapshot()
    out = []
    for key, old in before.items():
        new = now.get(key)
        if key not in now:
            same = False
            new = "<gone>"
        elif key.startswith(("time.", "jax.", "harness.id.", "module.id.")):
            same = new is old
        elif key.startswith("hook."):  # a hook, or a list of them: the same objects in order
            same = _same(new, old)
        else:  # config values, harness data
            same = new == old
        if not same:
            out.append(f"{key}: {old!r} -> {new!r}")
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a is b
