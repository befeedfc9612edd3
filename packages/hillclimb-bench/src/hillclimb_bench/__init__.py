"""hillclimb-bench: export a kernel's programs, verify and time them where the kernel can't reach.

A target module (protected harness code) describes the kernel: which programs to export at which
shapes, the inputs, the reference and the tolerance. hillclimb runs it twice, in two processes:

- ``python -m <module> export`` imports the kernel and writes each program with ``jax.export``
  (:mod:`~hillclimb_bench.export`); this is the only process that runs the candidate's code, and
  nothing it says is believed;
- ``python -E -s -m <module> verify`` never imports the kernel (:mod:`~hillclimb_bench.isolation`),
  reads the programs as data (:mod:`~hillclimb_bench.programs`: hashed, checked for host round trips
  and foreign custom calls), verifies every output of every program on inputs from a seed drawn
  there, and times exactly the verified programs: both arms of a comparison call by call in one
  process (:mod:`~hillclimb_bench.verify`).

:class:`Kernel` describes a kernel in one call (see the README); :class:`Target` is the base for a
harness with needs of its own (hillclimb's gdn target: an oracle program, a model-level training
step). The parts stay public: :mod:`~hillclimb_bench.timing`, :mod:`~hillclimb_bench.checks`,
:mod:`~hillclimb_bench.peaks`, :mod:`~hillclimb_bench.metrics`, :mod:`~hillclimb_bench.guards`.
"""

from __future__ import annotations

from . import checks, guards, isolation, metrics, peaks, programs, timing
from .command_line import ArgumentParser, cli
from .errors import UsageError, VerificationError
from .peaks import device_peak, peak_table_path
from .programs import Request
from .target import Kernel, Program, Target, Verified, Work, case_id, compare, named_leaves

__all__ = [
    "ArgumentParser",
    "Kernel",
    "Program",
    "Request",
    "Target",
    "UsageError",
    "VerificationError",
    "Verified",
    "Work",
    "case_id",
    "checks",
    "cli",
    "compare",
    "device_peak",
    "guards",
    "isolation",
    "metrics",
    "named_leaves",
    "peak_table_path",
    "peaks",
    "programs",
    "timing",
]
