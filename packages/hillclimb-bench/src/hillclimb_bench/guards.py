"""Tripwires against a kernel that tampers with the bench that measures it.

The kernel runs in the bench's process, so this is not a sandbox: it catches the documented cheap
tricks by snapshotting state before kernel code runs and comparing afterwards: patched timers;
changed global JAX options, a swapped ``block_until_ready``; trace, profile, gc and
``jax.monitoring`` hooks and extra Python threads that would run kernel code after it was compiled;
the bench's own functions and in-memory data (``Watch.harness``, ``Watch.data_modules``); and any
function, class, module or other callable rebound, or function whose code was swapped, in a module
loaded before the snapshot (a ``json.dumps`` that forges the metrics, a ``numpy`` function that
blunts the comparison, this package's own checker). What it cannot see (a mutated object behind an
attribute that still points at it, an audit hook) is why a bench also verifies everything it
times. :func:`hillclimb_bench.measure` snapshots when it starts and compares after verifying, after
timing and before returning; a bench that imports its kernel later can take the snapshot itself,
before the import, and pass it as ``measure(guard_from=...)``.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import importlib.util
import sys
import threading
import time
import types
from typing import Any

# JAX options a kernel could flip to speed itself up or to blunt the reference.
JAX_CONFIG_KEYS = (
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
_BOUND_KINDS = (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)
_DATA_TYPES = (bool, int, float, str, bytes, tuple, frozenset, list, dict)


@dataclasses.dataclass(frozen=True)
class Watch:
    """What a snapshot covers beyond the process-wide state.

    ``harness``: module prefixes of the bench's own code; every callable and module bound in them
    is recorded by identity as ``harness.id.<module>.<attr>``. ``data_modules``: modules among
    them whose data (tolerances, shapes, seeds) is recorded by value as ``harness.val.…``.
    ``own``: module prefixes left out of the ``module.id.…`` record of every other loaded module
    (the kernel's package, which may bind what it likes; the harness, recorded apart).
    """

    harness: tuple[str, ...] = ()
    data_modules: tuple[str, ...] = ()
    own: tuple[str, ...] = ()


def snapshot(watch: Watch = Watch()) -> dict[str, Any]:
    """The identities and values the guards compare, right now."""
    snap: dict[str, Any] = {
        "time.perf_counter": time.perf_counter,
        "time.perf_counter_ns": time.perf_counter_ns,
        "time.process_time_ns": time.process_time_ns,
        "time.monotonic": time.monotonic,
        "time.monotonic_ns": time.monotonic_ns,
    }
    # measure() imports JAX when it is installed, and JAX's import rebinds things (gc callbacks,
    # typing helpers): load it before the snapshot, so a snapshot taken before a bench imported JAX
    # (guard_from) does not report JAX's own import as tampering.
    jax = sys.modules.get("jax")
    if jax is None and importlib.util.find_spec("jax") is not None:
        import jax
    if jax is not None:
        snap.update(
            {
                "jax.block_until_ready": jax.block_until_ready,
                "jax.jit": jax.jit,
                "jax.vjp": jax.vjp,
                "jax.profiler.trace": jax.profiler.trace,
            }
        )
        for key in JAX_CONFIG_KEYS:
            snap[f"config.{key}"] = jax.config.values.get(key, "<absent>")
        snap["hook.jax.monitoring"] = _monitoring_listeners()
    # Hooks through which Python code runs later, at times the kernel does not control: after the
    # kernel is compiled nothing of it may run (it would see the inputs and the seed).
    snap["hook.sys.settrace"] = sys.gettrace()
    snap["hook.sys.setprofile"] = sys.getprofile()
    snap["hook.threading.settrace"] = threading.gettrace()
    snap["hook.threading.setprofile"] = threading.getprofile()
    snap["hook.gc.callbacks"] = tuple(gc.callbacks)
    # Threads of Python code: a kernel's own would run on after it was compiled.
    snap["hook.python-threads"] = threading.active_count()
    snap.update(_harness_state(watch))
    snap.update(_loaded_state(watch))
    return snap


def _module_name(key: str, module: Any) -> str:
    # A bench run as __main__ (python -m) has its real name in its spec.
    return getattr(getattr(module, "__spec__", None), "name", None) or key


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _loaded_state(watch: Watch) -> dict[str, Any]:
    """Every callable and module bound in every module loaded so far (json, numpy, jax, the
    standard library, this package...), by identity, and the code object of every plain Python
    function. Modules loaded later (the kernel's own, unless loaded already) are not in it."""
    out: dict[str, Any] = {}
    for key, module in list(sys.modules.items()):
        if module is None or key == "__main__" or _under(key, (*watch.own, *watch.harness)):
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


def _harness_state(watch: Watch) -> dict[str, Any]:
    """The harness as loaded: its callables and modules by identity, its data modules by value.
    A kernel that swaps a check or loosens a tolerance in memory changes one of them."""
    out: dict[str, Any] = {}
    if not watch.harness:
        return out
    for key, module in list(sys.modules.items()):
        name = _module_name(key, module)
        if module is None or not _under(name, watch.harness):
            continue
        for attr, value in list(vars(module).items()):
            if attr.startswith("__"):
                continue
            if callable(value) or isinstance(value, types.ModuleType):
                out[f"harness.id.{name}.{attr}"] = value
            elif name in watch.data_modules and (
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


def changed(before: dict[str, Any], watch: Watch = Watch()) -> list[str]:
    """``key: old -> new`` for every name whose identity or value differs from ``before``."""
    now = snapshot(watch)
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
