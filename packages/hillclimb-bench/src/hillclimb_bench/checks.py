"""Outputs checked after timing: every kept timed output bit-identical to the verified one.

A kernel that is right on the calls that are verified and computes something else (or nothing) on
later calls is caught here. Outputs are pytrees (an array, tuples/lists and dicts of them);
:func:`leaves` names their arrays ``<measurement>.<key or index>…``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import VerificationError

# Compares two outputs' leaves: one truth value per leaf, True where bit-identical.
Identical = Callable[[Sequence[Any], Sequence[Any]], Sequence[bool]]


def leaves(out: Any, name: str) -> list[tuple[str, Any]]:
    """``(quantity, array)`` of every array in ``out`` (an array, a tuple/list or dict of them),
    dicts in sorted key order."""
    if isinstance(out, dict):
        return [leaf for k in sorted(out) for leaf in leaves(out[k], f"{name}.{k}")]
    if isinstance(out, tuple | list):
        return [leaf for i, x in enumerate(out) for leaf in leaves(x, f"{name}.{i}")]
    return [(name, out)]


def identical_on_host(a: Sequence[Any], b: Sequence[Any]) -> list[bool]:
    """Per leaf: same dtype, shape and bytes (so -0.0 != 0.0 and NaN payloads count)."""

    def key(x: Any) -> tuple[str, tuple[int, ...], bytes]:
        h = np.ascontiguousarray(np.asarray(x))
        return str(h.dtype), h.shape, h.tobytes()

    return [key(x) == key(y) for x, y in zip(a, b, strict=True)]


def identity_program(out_info: Any) -> Any:
    """A JAX program compiled ahead from output shapes: ``(a, b) -> bool[n]``, is each leaf of two
    output tuples bit-identical? Comparing on the device after timing then compiles nothing."""
    import jax
    import jax.numpy as jnp

    def bits(x: Any) -> Any:
        width = jnp.dtype(x.dtype).itemsize * 8
        return jax.lax.bitcast_convert_type(x, jnp.dtype(f"uint{width}"))

    def same(a: Any, b: Any) -> Any:
        return jnp.stack([jnp.array_equal(bits(x), bits(y)) for x, y in zip(a, b, strict=True)])

    info = tuple(jax.ShapeDtypeStruct(o.shape, o.dtype) for o in out_info)
    return jax.jit(same).lower(info, info).compile()


def spot_check_indices(
    repeats: int, bytes_per_call: int, rng: np.random.Generator, *, budget: int
) -> list[int]:
    """Timed calls whose outputs are kept and compared after timing: all of them when their
    outputs fit in ``budget`` bytes, else a random subset (at least one) the kernel cannot
    predict, since ``rng`` derives from the unpredictable seed."""
    n = max(1, min(repeats, budget // max(1, bytes_per_call)))
    if n >= repeats:
        return list(range(repeats))
    return sorted(int(i) for i in rng.choice(repeats, size=n, replace=False))


def check_kept(
    name: str,
    kept: dict[int, Sequence[Any]],
    verified: Sequence[Sequence[Any]],
    *,
    labels: Sequence[str],
    names: Sequence[str],
    repeats: int,
    identical: Identical = identical_on_host,
) -> int:
    """Each kept output (leaves, in the order of ``names``) of timed call ``r`` must be
    bit-identical to ``verified[r % len(verified)]``, the verified output for the same inputs;
    raises :class:`VerificationError` naming the call, its input set and the arrays that differ.
    Returns how many outputs were compared."""
    for r, out in sorted(kept.items()):
        i = r % len(verified)
        equal = list(np.asarray(identical(out, verified[i])))
        if not all(equal):
            differ = [q for q, ok in zip(names, equal, strict=True) if not ok]
            more = f" and {len(differ) - 5} more" if len(differ) > 5 else ""
            raise VerificationError(
                name,
                f"timed call {r + 1} of {repeats} ({labels[i]}) returned "
                f"{', '.join(differ[:5])}{more} bit-different from the verified call on the same "
                "inputs",
            )
    return len(kept)
