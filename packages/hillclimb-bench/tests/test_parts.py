"""The public parts a bench with its own driver builds on (the gdn harness of hillclimb does)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from hillclimb_bench import VerificationError, checks, timing


def test_time_calls_alternates_sets_keeps_the_chosen_calls_and_checks_warmups() -> None:
    seen: list[int] = []
    warm: list[tuple[int, Any]] = []

    def fn(x: int) -> int:
        seen.append(x)
        return x * 10

    samples, kept = timing.time_calls(
        "fwd",
        fn,
        [(0,), (1,), (2,)],
        repeats=5,
        warmup=2,
        block=lambda out: out,
        keep={1, 4},
        on_warmup=lambda k, out: warm.append((k, out)),
    )
    assert seen == [0, 1, 0, 1, 2, 0, 1]  # two warm-ups, then repeats alternating over the sets
    assert warm == [(0, 0), (1, 10)]
    assert len(samples) == 5
    assert all(s >= 0 for s in samples)
    assert kept == {1: 10, 4: 10}


def test_time_calls_refuses_samples_longer_than_the_wall_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast = itertools.count(step=1.0)  # a second per reading: a clock that runs ahead
    monkeypatch.setattr(timing, "perf_counter", lambda: next(fast))
    with pytest.raises(VerificationError, match=r"^fwd: timer mismatch: samples sum 3000\.000 ms"):
        timing.time_calls("fwd", abs, [(1,)], repeats=3, warmup=0, block=lambda out: out)


def test_a_raising_call_is_a_failed_check_naming_the_measurement() -> None:
    def boom(x: int) -> int:
        raise RuntimeError("out of memory")

    with pytest.raises(VerificationError, match=r"^step: raised RuntimeError: out of memory$"):
        timing.time_calls("step", boom, [(1,)], repeats=1, warmup=0, block=lambda out: out)


def test_check_kept_names_the_call_the_input_set_and_the_arrays_that_differ() -> None:
    a = [np.array([1.0, 2.0], np.float32), np.array([0.0], np.float32)]
    verified = [a, [x + 1 for x in a]]
    same_bits = {0: [x.copy() for x in a], 1: [x + 1 for x in a]}
    assert (
        checks.check_kept(
            "fwd", same_bits, verified, labels=["s0", "s1"], names=["o", "s"], repeats=2
        )
        == 2
    )
    # One ulp off in o, and -0.0 for 0.0 in s: bit-different, though within any tolerance.
    drift = {2: [np.nextafter(a[0], np.float32(9)), np.array([-0.0], np.float32)]}
    with pytest.raises(
        VerificationError,
        match=r"^fwd: timed call 3 of 3 \(s0\) returned o, s bit-different from the verified call",
    ):
        checks.check_kept("fwd", drift, verified, labels=["s0", "s1"], names=["o", "s"], repeats=3)
