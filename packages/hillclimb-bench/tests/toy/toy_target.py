"""The package README's target, as a test fixture: a row softmax checked against float64 NumPy."""

import numpy as np

import hillclimb_bench as hb


def make_inputs(rng: np.random.Generator, shape: dict) -> tuple:
    import jax.numpy as jnp

    return (jnp.asarray(rng.standard_normal((shape["rows"], shape["cols"]), np.float32)),)


def large_inputs(rng: np.random.Generator, shape: dict) -> tuple:
    """Logits of magnitude ~100: a softmax that skips the max shift overflows."""
    import jax.numpy as jnp

    x = 100.0 * rng.standard_normal((shape["rows"], shape["cols"]))
    return (jnp.asarray(x, np.float32),)


def reference(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def kernel(shape: dict):
    from toykernel import softmax  # the code under test: imported by the export step only

    return softmax


TARGET = hb.Kernel(
    name="softmax",
    kernel_modules=("toykernel",),
    programs={
        "fwd": hb.Program(
            kernel=kernel,
            reference=reference,
            rel_rms_tol=1e-5,
            flops=lambda s: 5 * s["rows"] * s["cols"],
            tokens=lambda s: s["rows"],
        )
    },
    make_inputs=make_inputs,
    bench={"rows": 64, "cols": 1024},
    gate=[{"rows": 3, "cols": 100}],
    draw=lambda rng: {"rows": int(rng.integers(1, 32)), "cols": int(rng.integers(2, 300))},
    structured_inputs={"large": large_inputs},
)

if __name__ == "__main__":
    hb.cli(TARGET)
