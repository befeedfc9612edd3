"""Fixtures shared by the harness tests (protected)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def bench_compile_cache(tmp_path_factory):
    """One JAX compilation cache for the bench processes of a test session: the model programs
    the harness owns (the oracle model, the optimizer) compile once, not once per process."""
    return tmp_path_factory.mktemp("jax-cache")
