"""The code under test of the package's tests: a row softmax with variants (``TOY_VARIANT``).

good: right; wrong: 10% off; stateful: right but draws from XLA's stateful RNG (state across
calls); forge-import: returns zeros, and its import writes a passing "metrics" file next to the
export's output and a JUnit report into the working directory, the way a process that imports
candidate code could lie (the attack of hillclimb issue 20); shape-special: right except at the
bench's shape (64 x 1024), where it skips the normalisation; unshifted: skips the max shift (right
on the random inputs, inf/NaN on large logits); export-aware: right everywhere, but another program
in the export step's process (it reads argv) than in any other.
"""

import os

import jax
import jax.numpy as jnp

VARIANT = os.environ.get("TOY_VARIANT", "good")

if VARIANT == "forge-import":
    import sys

    argv = sys.argv
    if "--out" in argv:
        out = argv[argv.index("--out") + 1]
        with open(out + ".metrics.json", "w") as f:
            f.write('{"measurements": {"fwd": {"median_ms": 0.001}}}')
    with open("junit.xml", "w") as f:
        f.write('<testsuite tests="3" failures="0"><testcase name="t"/></testsuite>')


def softmax(x: jax.Array) -> jax.Array:
    """Softmax over the last axis of ``x`` ``[rows, cols]``."""
    e = jnp.exp(x - x.max(axis=-1, keepdims=True))
    if VARIANT == "unshifted":
        e = jnp.exp(x)
    if VARIANT == "shape-special" and x.shape == (64, 1024):
        return e
    if VARIANT == "export-aware" and "export" in __import__("sys").argv:
        return e * (1.0 / e.sum(axis=-1, keepdims=True))
    y = e / e.sum(axis=-1, keepdims=True)
    if VARIANT == "wrong":
        return y * 1.1
    if VARIANT == "forge-import":
        return y * 0
    if VARIANT == "stateful":
        return y + 0.0 * jax.lax.rng_uniform(0.0, 1.0, y.shape)
    return y
