"""Correctness contract of the gdn target: seeds, test shapes and tolerances, in one place.

Protected (``hillclimb.yml``): the agent cannot loosen a tolerance or shrink a shape. Benchmark
shapes live apart, in ``presets.py``.
"""

from __future__ import annotations

import dataclasses

SEED = 20251121

# Implementations the public API must offer; the bench refuses anything else before importing JAX.
IMPLS = ("recurrent", "chunked_xla", "pallas")
# Implementations compared against the oracle by the suite (``recurrent`` is checked separately
# against the NumPy float64 oracle).
CHUNKED_IMPLS = ("chunked_xla", "pallas")


@dataclasses.dataclass(frozen=True)
class Case:
    """One problem shape. ``C`` is the chunk size passed to the implementation (None: default)."""

    B: int
    T: int
    H: int
    K: int
    V: int
    C: int | None = None
    dtype: str = "float32"

    @property
    def id(self) -> str:
        """Parametrize id, e.g. ``B2-T64-H2-K16-V16-C16-float32``; JUnit names carry the shape."""
        chunk = "Cdefault" if self.C is None else f"C{self.C}"
        return f"B{self.B}-T{self.T}-H{self.H}-K{self.K}-V{self.V}-{chunk}-{self.dtype}"


@dataclasses.dataclass(frozen=True)
class Tol:
    """Pass when ``rel_rms <= rel_rms`` or, for near-zero references, ``max_abs <= atol``.

    ``rel_rms = rms(out - ref) / rms(ref)``; both are computed in float64.
    """

    rel_rms: float
    atol: float


# --- tolerances --------------------------------------------------------------------------------
# fp32 JAX oracle vs NumPy float64 oracle, and the product's recurrent impl vs NumPy.
TOL_ORACLE = Tol(rel_rms=1e-5, atol=1e-6)
# Outputs (o, final state) of a chunked implementation vs the fp32 oracle.
TOL_FWD = {"float32": Tol(rel_rms=1e-4, atol=1e-6), "bfloat16": Tol(rel_rms=5e-3, atol=1e-3)}
# Gradients vs autodiff of the fp32 oracle. dg and dbeta collect long sums of products.
TOL_GRAD = {
    "float32": Tol(rel_rms=2e-4, atol=1e-5),
    "bfloat16": Tol(rel_rms=8e-3, atol=1e-3),
}
TOL_GRAD_GATES = {
    "float32": Tol(rel_rms=1e-3, atol=1e-5),
    "bfloat16": Tol(rel_rms=2e-2, atol=1e-3),
}
# Invariants that hold exactly in exact arithmetic.
TOL_INVARIANT = Tol(rel_rms=1e-5, atol=1e-5)
# The bench's checks of everything it times, at the preset's shape and dtype, on its own inputs
# (BENCH_GATES, fresh seeds), against the fp32 oracle. fp32 equals the suite's tolerances. MEASURED
# worst rel_rms of the honest kernels, pallas / chunked_xla / recurrent at tiny (T=256) and cpu-long
# (T=2048), 2 bench processes x 3 input sets each, plus 10 seeds in-process for pallas at tiny:
# o 8.2e-7, final state 5.6e-7, dq dk dv dS0 7.5e-7, dbeta 2.0e-6, dg 5.8e-5 under the layer's gates
# (3.2e-6 under mild and slow): 17x (dg) to 250x below these. bf16 presets run only on a TPU; on CPU
# at B1 H2 K=V=64 bf16, pallas T=512 and chunked_xla T=2048, 3 seeds x 3 sets, every output and
# gradient in bf16 measured 1.7e-3 to 2.5e-3 (dg, layer gates): the rounding of the result to bf16,
# independent of T; the float32 state and dS0 stayed below 6e-7. 4x (8x for dg, dbeta) below these.
TOL_BENCH = {"float32": Tol(rel_rms=1e-4, atol=1e-6), "bfloat16": Tol(rel_rms=1e-2, atol=1e-3)}
TOL_BENCH_GRAD = {"float32": Tol(rel_rms=2e-4, atol=1e-5), "bfloat16": Tol(rel_rms=1e-2, atol=1e-3)}
TOL_BENCH_GRAD_GATES = {
    "float32": Tol(rel_rms=1e-3, atol=1e-5),
    "bfloat16": Tol(rel_rms=2e-2, atol=1e-3),
}

# --- bench ---------------------------------------------------------------------------------------
# Gate mode of each input set the bench times and verifies (timed calls alternate between them):
# mild gates exercise the intra-chunk algebra, slow decay the cross-chunk carry and the long-range
# gradient terms, which mild gates shrink below any tolerance, and the layer's realistic gates
# (chunk cumulative g in the -100s) the overflow handling, at the shape that is timed.
BENCH_GATES = ("mild", "slow", "layer")
# The rest of the kernel's correctness contract, checked on every exported program (timed and gate,
# both arms) and never timed: what the suite's invariant tests check of the code it ran, asked of
# the bytes that ship. ``one``: alpha = beta = 1 (recall); ``repeated``: one key for every token
# (the chunk's M all ones below the diagonal); ``correlated``: AR(1) keys, beta in [0.7, 1] (large
# off-diagonal M, as real keys give); ``extreme``: g in [-8, -2], beta at 1e-4 or 1 - 1e-6.
# MEASURED, the honest pallas kernel at tiny and the gate matrix (10 shapes, both dtypes), fwd_bwd:
# at most 0.19 of TOL_BENCH* (the bf16 rounding, as on the timed sets); a truncated Neumann inverse
# (I - M)(I + M^2)(I + M^4)(I + M^8), which passes mild, slow, layer and extreme at every shape, is
# off by 1.2x (one) to 1e27x (repeated) its tolerance wherever C > 16.
CONTRACT_GATES = ("one", "repeated", "correlated", "extreme")
# Bits of the seed the bench draws from os.urandom: at most 53, so the seed in the metrics JSON is
# an exact JavaScript number.
SEED_BITS = 53
# Tokens per rematerialised segment of the oracle's backward at the bench's shape.
ORACLE_SEGMENT = 64
# Bytes of timed outputs kept per measurement for the after-timing spot check (all calls fit at the
# CPU presets; at the TPU presets a random subset).
SPOT_CHECK_BYTES = 1 << 30

# --- the model-level measurement (model.py, model_verify.py) ------------------------------------
# Chained training steps the bench verifies (and times, alternating over their inputs).
MODEL_STEPS = 3
# The candidate's training step vs the same model on the fp32 oracle, on the same inputs: the loss,
# and per parameter AdamW's first and second moments (the gradient, linearly and squared). The
# update itself is not compared across the two: Adam's m / sqrt(v) is sign-like in the first steps,
# so an element whose gradient is near zero can flip on rounding noise (measured: 2.5e-3 rel RMS of
# the update at fp32, from flips alone); instead the step's new parameters must be AdamW of its own
# verified moments, computed by a separately compiled program (TOL_MODEL_UPDATE; measured: exact).
# The loss after each of the MODEL_STEPS steps, each model run on its own from the same start, must
# agree within TOL_MODEL_TRAJECTORY (those flips move the two runs apart a little). Relative only
# (atol 0): gradients are ~1e-4, below any absolute floor that would mean something.
# MEASURED worst rel_rms, tiny model on CPU: fp32 pallas over 30 seeds x 3 steps (chunked_xla,
# recurrent: 15 seeds) -- loss 8.6e-8, moments 4.4e-5 (chunked_xla 3.1e-5, recurrent 1.5e-5), loss
# after each step run apart 2.2e-6: 116x, 22x and 46x below these. bf16 (TPU presets; measured on
# CPU with the tiny model in bf16, pallas and chunked_xla, 5 seeds): loss 8.4e-6, moments 6.1e-2
# (the second moment; the rounding of o to bf16), run apart 6.2e-5: 119x, 4x and 32x below these.
TOL_MODEL_LOSS = {"float32": Tol(rel_rms=1e-5, atol=0.0), "bfloat16": Tol(rel_rms=1e-3, atol=0.0)}
TOL_MODEL_MOMENT = {"float32": Tol(rel_rms=1e-3, atol=0.0), "bfloat16": Tol(rel_rms=0.25, atol=0.0)}
TOL_MODEL_UPDATE = Tol(rel_rms=1e-6, atol=0.0)
TOL_MODEL_TRAJECTORY = {
    "float32": Tol(rel_rms=1e-4, atol=0.0),
    "bfloat16": Tol(rel_rms=2e-3, atol=0.0),
}

# --- the correctness gate's matrix ---------------------------------------------------------------
# The CPU gate's verdict comes from the verifier (``programs.py``): the candidate's exported fwd and
# fwd_bwd programs at these shapes and at GATE_DRAWS shapes drawn per run from GATE_DRAW_SPACE
# (C = 0: the kernel's own chunk), each checked on the BENCH_GATES input sets against the oracle
# with the TOL_BENCH* tolerances. A kernel special-cased to the listed shapes meets drawn ones.
GATE_CASES = (
    Case(B=1, T=37, H=1, K=32, V=32, C=16),  # padded: T is no multiple of the chunk
    Case(B=1, T=64, H=2, K=32, V=32, C=32, dtype="bfloat16"),
    Case(B=2, T=40, H=2, K=16, V=16, C=None),  # the kernel's default block sizes
)
GATE_DRAWS = 2
GATE_DRAW_SPACE = {
    "B": (1, 2),
    "T": (9, 161),  # [low, high)
    "H": (1, 2, 3),
    "K": (16, 32),
    "V": (16, 32),
    "C": (0, 8, 16, 32),
    "dtype": ("float32", "bfloat16"),
}

# --- shapes ------------------------------------------------------------------------------------
# Compile time dominates the suite on CPU, so distinct shapes are few and reused across tests.
ORACLE_CASE = Case(B=1, T=17, H=2, K=8, V=8)
INVARIANT_CASE = Case(B=1, T=96, H=2, K=16, V=16, C=64)  # 2 chunks, the second padded
# chunked == recurrent over chunk sizes (incl. C=1 and an odd T that needs padding) and K != V.
CHUNKED_XLA_CASES = (
    Case(B=2, T=16, H=2, K=16, V=16, C=16),
    Case(B=1, T=37, H=2, K=16, V=16, C=1),
    Case(B=1, T=37, H=2, K=16, V=16, C=8),
    Case(B=1, T=37, H=2, K=16, V=16, C=32),
    Case(B=1, T=64, H=2, K=16, V=16, C=32),
    Case(B=1, T=37, H=2, K=16, V=32, C=16),
)
# Continuation: one pass over T tokens == two passes split at SPLIT carrying the state.
CONTINUATION_CASE = Case(B=1, T=48, H=2, K=16, V=16, C=16)
CONTINUATION_SPLIT = 24  # mid-chunk; both halves have the same shape (one compile)
# Pallas (interpret on CPU) vs the oracle.
PALLAS_CASES = (
    Case(B=2, T=64, H=2, K=16, V=16, C=16),
    Case(B=1, T=37, H=1, K=32, V=32, C=16),  # padded, with an initial state
    Case(B=1, T=128, H=1, K=64, V=64, C=64),  # the reference chunk size
    Case(B=1, T=64, H=2, K=32, V=32, C=32, dtype="bfloat16"),
    Case(B=1, T=40, H=2, K=16, V=16, C=None),  # the kernel's default block sizes
)
# Gates: strong, layer-realistic and extreme values must stay finite and correct.
GATE_CASE = Case(B=1, T=37, H=2, K=16, V=16, C=16)
# "slow" (g ~ -U(0, 1e-3), alpha ~ 1): the state carries across every chunk, so a kernel that
# mishandles the cross-chunk carry fails here even when mild and fast gates hide it.
GATE_MODES = ("strong", "layer", "slow", "extreme")
# Gradients with random cotangents on o and on the final state; GRAD_CASES[0] also with these gates
# (an exp taken before the causal mask overflows there and poisons autodiff gradients with NaN;
# under slow decay the long-range terms, e.g. exp(g_last) dS carried into the previous chunk, are as
# large as the local ones, while under mild gates they are ~1e-4 of them at C = 16).
GRAD_GATE_MODES = ("mild", "layer", "slow")
GRAD_CASES = (
    Case(B=1, T=37, H=2, K=16, V=32, C=16),
    Case(B=1, T=64, H=1, K=32, V=32, C=32, dtype="bfloat16"),
)
# TPU-rules lint and Mosaic lowering: realistic shapes, traced but never run.
LINT_CASES = (
    Case(B=1, T=256, H=2, K=128, V=128, C=None, dtype="bfloat16"),
    Case(B=1, T=200, H=2, K=64, V=64, C=None, dtype="float32"),
    Case(B=1, T=256, H=2, K=64, V=64, C=128, dtype="bfloat16"),
)
# Shapes run with Mosaic on a real TPU (marker ``tpu``).
TPU_CASES = (
    Case(B=2, T=256, H=2, K=128, V=128, C=None, dtype="float32"),
    Case(B=2, T=512, H=4, K=64, V=64, C=None, dtype="bfloat16"),
)

# --- static rules for the editable kernel folder -------------------------------------------------
# TPU block rule: the last two block dims are multiples of (sublanes, lanes) or the full array dims.
TPU_SUBLANES = 8
TPU_LANES = 128
# Pallas kernel names must look like this, and each pallas_call must sit in a jax.named_scope.
KERNEL_NAME_PATTERN = r"^gdn_[a-z0-9_]+$"
# Primitives with no Pallas TPU lowering (or that defeat the chunked design) inside a kernel body.
FORBIDDEN_KERNEL_PRIMITIVES = frozenset(
    {
        "cumsum",
        "cumprod",
        "cummax",
        "cummin",
        "cumlogsumexp",
        "rev",
        "dynamic_slice",
        "dynamic_update_slice",
        "gather",
        "scatter",
        "scatter-add",
        "scatter_add",
        "scatter-mul",
        "scatter_mul",
        "scatter-min",
        "scatter-max",
        "triangular_solve",
        "cholesky",
        "lu",
        "qr",
        "svd",
        "eig",
        "eigh",
        "tridiagonal_solve",
        "custom_linear_solve",
        "sort",
        "top_k",
        "pure_callback",
        "io_callback",
    }
)
# Primitives the measured function may not contain anywhere (host round trips can cache results).
FORBIDDEN_BENCH_PRIMITIVES = frozenset({"pure_callback", "io_callback", "callback"})

# Source tripwires for kernels/gdn (a cheap static gate, not a sandbox): the kernel must not reach
# the harness, timers, global JAX config, the environment, the file system or host callbacks.
# Matched against code only (comments and string literals are stripped first).
FORBIDDEN_SOURCE_PATTERNS = {
    r"\bkernels\.harness\b|from\s+\.\.harness\b|\bhillclimb_bench\b": (
        "imports the protected harness"
    ),
    r"\bimport\s+time\b|\bfrom\s+time\s+import\b|perf_counter|monotonic": "touches timers",
    r"\bjax\.config\b|\bconfig\.update\b|default_matmul_precision": "changes global JAX config",
    r"\bos\.environ\b|\bputenv\b|\bimport\s+os\b": "touches the environment",
    r"\bsys\.modules\b|\bimportlib\b|__import__|\bbuiltins\b": "patches modules",
    r"\bthreading\b|\bmultiprocessing\b|\bsubprocess\b|\bsignal\b|\basyncio\b": (
        "runs work outside the timed call"
    ),
    r"pure_callback|io_callback|debug\.callback|host_callback": "calls back to the host",
    r"\bopen\(|\bpathlib\b|\bpickle\b|np\.load|jnp\.load|\bshelve\b": "reads or writes files",
    r"jax\.profiler": "drives the profiler",
    r"\bsettrace\b|\bsetprofile\b|_getframe|\binspect\b|\bgc\.|jax\.monitoring": (
        "hooks the interpreter or reads other frames (the bench's inputs, seed or references)"
    ),
}
# Files allowed under kernels/gdn (no binaries, no data a kernel could load).
ALLOWED_KERNEL_SUFFIXES = (".py", ".md")
