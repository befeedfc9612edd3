"""hillclimb-bench: time a kernel, verify every timed output, write hillclimb's metrics JSON.

A repository's bench is a short script that describes its kernel and calls :func:`main`::

    hillclimb_bench.main(
        target="softmax", impl="pallas", preset="small", dtype="float32",
        make_inputs=lambda rng: (rng.standard_normal((8, 128), dtype=np.float32),),
        measurements={"fwd": Measurement(fn=my_softmax, reference=ref_softmax, rel_rms_tol=1e-5)},
    )

One process: draw a seed (``os.urandom``, or ``--seed`` to reproduce), build ``input_sets`` input
sets from it, verify every array each callable returns on every set against the reference
(relative RMS within the stated tolerance), warm up, time ``--repeats`` calls alternating over the
sets (``perf_counter`` around the call and ``jax.block_until_ready`` when JAX is installed), then
check that every timed call's output is bit-identical to the verified one. Guards
(:mod:`hillclimb_bench.guards`) check throughout that the kernel rebound nothing the bench relies on
(timers, ``json``, ``numpy``, this package's checks, JAX options and hooks). Only then is the
metrics JSON written (``schemas/metrics.schema.json`` of hillclimb).

The parts are public for benches that need their own driver (the gdn harness of hillclimb is one):
:mod:`~hillclimb_bench.timing` (the timing loop), :mod:`~hillclimb_bench.checks` (timed outputs vs
verified ones), :mod:`~hillclimb_bench.peaks` (the device peak table, a measured peak, MFU),
:mod:`~hillclimb_bench.metrics` (the document's common parts, its atomic write) and
:mod:`~hillclimb_bench.guards`.

Exit codes of :func:`main`: 0 ok; 1 a verification failed (one ``bench: failed: <quantity>: …``
line, no metrics file); 2 bad arguments (one ``bench: …`` line).
"""

from __future__ import annotations

from . import checks, guards, metrics, peaks, timing
from ._bench import Measurement, main, measure
from .errors import UsageError, VerificationError
from .peaks import device_peak, peak_table_path

__all__ = [
    "Measurement",
    "UsageError",
    "VerificationError",
    "checks",
    "device_peak",
    "guards",
    "main",
    "measure",
    "metrics",
    "peak_table_path",
    "peaks",
    "timing",
]
