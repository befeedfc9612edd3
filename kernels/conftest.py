"""pytest setup for the kernel workspace (protected).

- Snapshots timers and global JAX options *before* any test imports ``kernels.gdn``; the test
  ``test_kernel_import_leaves_global_state_alone`` compares against it.
- Tests marked ``tpu`` are skipped with a stated reason unless JAX's default backend is a TPU.
"""

from __future__ import annotations

import jax
import pytest

from kernels.harness import guards

GLOBALS_BEFORE_KERNEL_IMPORT = guards.snapshot()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    backend = jax.default_backend()
    if backend == "tpu":
        return
    skip = pytest.mark.skip(
        reason=f"needs a real TPU: JAX backend is {backend!r}; Mosaic compilation and TPU "
        "numerics cannot be checked here (interpret-mode tests cover CPU)"
    )
    for item in items:
        if "tpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def globals_before_kernel_import() -> dict:
    return GLOBALS_BEFORE_KERNEL_IMPORT
