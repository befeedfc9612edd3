"""The ``matmul`` target's programs (protected): what the export writes, how the verifier checks it.

    python -E -s -m kernels.matmul_harness.programs requests --draw N --out FILE -- --preset tiny
    python -m kernels.matmul_harness.programs export --platform cpu --requests FILE --out DIR \\
        -- --preset tiny
    python -E -s -m kernels.matmul_harness.programs verify --mode gate ... -- --preset tiny

One program, ``fwd(x, w, b) = act(x @ w + b)`` of ``kernels.matmul.matmul_bias_act``: timed at the
preset's problem (purpose ``bench``) and verified at ``GATE_CASES`` plus ``GATE_DRAWS`` problems
drawn per run (``gate``), each against the ``jnp`` oracle at ``Precision.HIGHEST`` with the preset's
relative RMS tolerance, on two input sets from the verifier's seed. FLOPs ``2·M·N·K`` plus the
epilogue (``presets.Preset.flops``). Nothing here imports ``kernels.matmul`` except
:meth:`MatmulTarget.build`, which only the export step calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import hillclimb_bench
import numpy as np
from hillclimb_bench import Request, Verified, Work

from .presets import EPILOGUE_FLOPS, PRESETS, REL_RMS_TOL

# (M, N, K, dtype, activation): the gate's fixed problems (odd and whole-dim tiles included).
GATE_CASES = (
    (64, 384, 512, "float32", "silu"),
    (128, 256, 384, "bfloat16", "gelu"),
    (48, 200, 72, "float32", "none"),
)
GATE_DRAWS = 1
GATE_DRAW_SPACE = {
    "M": (16, 32, 48, 64, 96, 128),
    "N": (128, 200, 256),
    "K": (64, 72, 128),
    "dtype": ("float32", "bfloat16"),
    "activation": ("gelu", "silu", "none"),
}
INPUT_SETS = 2


def problem(M: int, N: int, K: int, dtype: str, activation: str) -> dict[str, Any]:
    return {"M": M, "N": N, "K": K, "dtype": dtype, "activation": activation}


def case_id(p: Mapping[str, Any]) -> str:
    return f"M{p['M']}-N{p['N']}-K{p['K']}-{p['activation']}-{p['dtype']}"


class MatmulTarget(hillclimb_bench.Target):
    """The matmul target at one preset."""

    pallas = True

    def __init__(self, preset: str) -> None:
        self.name = "matmul"
        self.impl = "pallas"
        self.kernel_modules = ("kernels.matmul",)
        self.preset = preset
        p = PRESETS[preset]
        self.dtype = p.dtype
        self.problem = problem(p.M, p.N, p.K, p.dtype, p.activation)
        self._oracles: dict[str, Any] = {}

    def requests(self, *, draw: int) -> list[Request]:
        problems = [("bench", self.problem)]
        problems += [("gate", problem(*c)) for c in GATE_CASES]
        rng = np.random.default_rng([draw, 0x3A7])
        for _ in range(GATE_DRAWS):
            drawn = {k: v[int(rng.integers(len(v)))] for k, v in GATE_DRAW_SPACE.items()}
            problems.append(("gate", problem(**drawn)))
        out, seen = [], set()
        for purpose, p in problems:
            if case_id(p) in seen:
                continue
            seen.add(case_id(p))
            out.append(Request("fwd", case_id(p), purpose, abstract_args(p), p))
        return out

    def build(self, request: Request, *, platform: str) -> Callable[..., Any]:
        from kernels.matmul import matmul_bias_act

        activation = request.params["activation"]
        interpret = platform != "tpu"

        def fwd(x: Any, w: Any, b: Any) -> Any:
            return matmul_bias_act(x, w, b, activation=activation, interpret=interpret)

        return fwd

    def export_info(self, request: Request, fn: Callable[..., Any]) -> dict[str, Any]:
        """The tiles the kernel chose (informational); a program without a pallas_call is
        refused."""
        from kernels.harness.tpu_rules import find_pallas_calls

        calls = find_pallas_calls(fn, *request.args)
        if not calls:
            raise hillclimb_bench.VerificationError(request.key, "the program has no pallas_call")
        return {
            "tiles": "; ".join(
                f"{c.name}: grid {c.grid}, blocks {[b for _, b, _ in c.blocks]}" for c in calls
            )
        }

    def verify(self, request: Request, program: Any, *, seed: int) -> Verified:
        import jax

        p = request.params
        oracle = self._oracle(p)
        sets, outputs = [], []
        errors: dict[str, dict[str, float]] = {}
        for i in range(INPUT_SETS):
            args = make_inputs(p, np.random.default_rng([seed, i]))
            label = f"input set {i} [{request.case}]"
            out = jax.block_until_ready(program(*args))
            ref = oracle(*args)
            for q, e in hillclimb_bench.compare(
                request.name, out, ref, REL_RMS_TOL[p["dtype"]], where=label
            ).items():
                worst = errors.get(q)
                if worst is None or e["rel_rms"] > worst["rel_rms"]:
                    errors[q] = e
            sets.append((label, args))
            outputs.append((out,))
        return Verified(sets, outputs, [request.name], errors)

    def _oracle(self, p: Mapping[str, Any]) -> Any:
        import jax

        from .oracle import matmul_bias_act_ref

        key = case_id(p)
        if key not in self._oracles:
            activation = p["activation"]
            self._oracles[key] = (
                jax.jit(lambda x, w, b: matmul_bias_act_ref(x, w, b, activation))
                .lower(*abstract_args(p))
                .compile()
            )
        return self._oracles[key]

    def work(self, request: Request, info: Mapping[str, Any]) -> Work:
        p = request.params
        flops = 2 * p["M"] * p["N"] * p["K"] + EPILOGUE_FLOPS[p["activation"]] * p["M"] * p["N"]
        return Work(flops=float(flops), tokens=int(p["M"]))

    def shapes(self) -> dict[str, Any]:
        return {k: self.problem[k] for k in ("M", "N", "K")}

    def document(self, verified: Mapping[str, Verified], info: Mapping[str, Any]) -> dict[str, Any]:
        timed = info.get(f"fwd@{case_id(self.problem)}", {})
        tiles = timed.get("tiles") if isinstance(timed, Mapping) else None
        notes = [f"activation {self.problem['activation']}"]
        if isinstance(tiles, str):
            notes.append(f"tiles as the export reported them: {tiles[:300]}")
        return {"notes": notes}


def abstract_args(p: Mapping[str, Any]) -> tuple[Any, ...]:
    import jax
    import jax.numpy as jnp

    dt = jnp.dtype(p["dtype"])
    return (
        jax.ShapeDtypeStruct((p["M"], p["K"]), dt),
        jax.ShapeDtypeStruct((p["K"], p["N"]), dt),
        jax.ShapeDtypeStruct((p["N"],), jnp.float32),
    )


def make_inputs(p: Mapping[str, Any], rng: np.random.Generator) -> tuple[Any, ...]:
    """x [M, K] ~ N(0, 1), w [K, N] ~ N(0, 1/K), b [N] ~ N(0, 1/4): pre-activations of unit
    scale, so the epilogue works in its nonlinear range."""
    import jax.numpy as jnp

    M, N, K = p["M"], p["N"], p["K"]
    x = rng.standard_normal((M, K), np.float32)
    w = rng.standard_normal((K, N), np.float32) / np.float32(np.sqrt(K))
    b = rng.standard_normal(N, np.float32) / np.float32(2.0)
    return jnp.asarray(x, p["dtype"]), jnp.asarray(w, p["dtype"]), jnp.asarray(b)


def make_target(argv: list[str]) -> MatmulTarget:
    p = hillclimb_bench.ArgumentParser(prog="kernels.matmul_harness.programs (target arguments)")
    p.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    args = p.parse_args(argv)
    return MatmulTarget(args.preset)


if __name__ == "__main__":
    hillclimb_bench.cli(make_target)
