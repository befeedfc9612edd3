"""The gdn target's programs: what the export step writes and how the verifier checks them.

    python -E -s -m kernels.harness.programs requests --draw N --out FILE \\
        -- --preset tiny --model tiny
    python -m kernels.harness.programs export --platform cpu --requests FILE --out DIR \\
        -- --preset tiny --model tiny
    python -E -s -m kernels.harness.programs verify --mode measure --platform cpu --draw N \\
        --arm A=DIR --arm B=DIR --out session.json -- --preset tiny --model tiny

hillclimb runs them (``hillclimb_bench``'s requests, export and verify steps); nothing here imports
``kernels.gdn`` except :meth:`GdnTarget.build`, which only the export step calls.

Programs, each built from the public ``gdn`` API (``verify.py`` says what each returns):

- ``fwd(q, k, v, g, beta, s0) -> (o, S_T)`` and ``fwd_bwd(..., dO, dS)`` (the vjp of both outputs):
  timed at the preset's shape (purpose ``bench``) and verified at the correctness matrix
  (``gate``): ``spec.GATE_CASES`` plus ``spec.GATE_DRAWS`` shapes drawn per run;
- ``train_step(params, opt_state, tokens)``: one AdamW step of the GDN hybrid model on the kernel,
  with ``--model``.

Every program is verified on every input set the bench times (``spec.BENCH_GATES``: mild gates, slow
decay, the layer's gates; seeds the verifier draws) and on the rest of the kernel's correctness
contract (``spec.CONTRACT_GATES``: alpha = beta = 1, repeated and correlated keys, extreme gates;
verified, never timed) against the protected fp32 oracle, and the training step against the same
model on the oracle (``model_verify.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import hillclimb_bench
import numpy as np
from hillclimb_bench import Request, Verified, Work

from . import presets as _presets
from . import spec

MEASUREMENTS = ("fwd", "fwd_bwd")
MODEL_MEASUREMENT = "train_step"
KERNEL_MODULES = ("kernels.gdn",)


class GdnTarget(hillclimb_bench.Target):
    """The gdn target at one preset (and optionally one model preset)."""

    pallas = True

    def __init__(self, preset: str, model: str | None = None, impl: str = "pallas") -> None:
        self.name = "gdn"
        self.kernel_modules = KERNEL_MODULES
        self.impl = impl
        self.preset = preset
        self.kernel_preset = _presets.PRESETS[preset]
        self.dtype = self.kernel_preset.dtype
        self.model = None if model is None else _presets.MODEL_PRESETS[model]
        self.case = case_of(self.kernel_preset)
        self._oracles: dict[tuple[spec.Case, str], Any] = {}
        self._model_programs: dict[str, Any] = {}

    # -- what to export ------------------------------------------------------------------------

    def requests(self, *, draw: int) -> list[Request]:
        from . import verify

        out = [self._kernel_request(name, self.case, "bench") for name in MEASUREMENTS]
        if self.model is not None:
            from . import model_verify

            out.append(
                Request(
                    MODEL_MEASUREMENT,
                    self.model.name,
                    "bench",
                    tuple(model_verify.abstract_step_args(self.model)),
                    {"model": self.model.name},
                )
            )
        seen = {self.case}
        for case in (*spec.GATE_CASES, *gate_draws(draw)):
            if case in seen:
                continue
            seen.add(case)
            out += [self._kernel_request(name, case, "gate") for name in MEASUREMENTS]
        del verify
        return out

    def _kernel_request(self, name: str, case: spec.Case, purpose: str) -> Request:
        from . import verify

        return Request(
            name, case.id, purpose, verify.abstract_args(case, name), dataclasses.asdict(case)
        )

    def build(self, request: Request, *, platform: str) -> Callable[..., Any]:
        import jax

        from kernels import gdn as gdn_pkg

        interpret = platform != "tpu"
        if request.name == MODEL_MEASUREMENT:
            from . import model, model_verify

            assert self.model is not None
            core = model_verify.kernel_core(
                lambda *a, **kw: gdn_pkg.gdn(*a, **kw, interpret=interpret), self.impl
            )
            return model.make_train_step(self.model, core)
        case = spec.Case(**request.params)
        impl = self.impl

        def fwd(q, k, v, g, beta, s0):
            return gdn_pkg.gdn(
                q,
                k,
                v,
                g,
                beta,
                initial_state=s0,
                output_final_state=True,
                impl=impl,
                chunk_size=case.C,
                interpret=interpret,
            )

        def fwd_bwd(q, k, v, g, beta, s0, do, ds):
            out, vjp = jax.vjp(fwd, q, k, v, g, beta, s0)
            # o, S_T and all six gradients are outputs: nothing is dead code, and all are verified.
            return (*out, *vjp((do, ds)))

        return fwd if request.name == "fwd" else fwd_bwd

    def export_info(self, request: Request, fn: Callable[..., Any]) -> dict[str, Any]:
        """The kernel's chunk (second-to-last dim of the first pallas_call's first block) and
        whether a pallas_call ran in interpret mode; refuses a program with host callbacks or, for
        the pallas impl, no pallas_call. Read in the export process: informational only."""
        import jax

        from . import tpu_rules

        jaxpr = jax.make_jaxpr(fn)(*hillclimb_bench.programs.tuple_args(request.args))
        eqns = list(tpu_rules.iter_eqns(jaxpr.jaxpr))
        bad = sorted({e.primitive.name for e in eqns} & spec.FORBIDDEN_BENCH_PRIMITIVES)
        if bad:
            raise hillclimb_bench.VerificationError(
                request.key, f"the program contains host callbacks {bad}"
            )
        calls = [tpu_rules.describe(e) for e in eqns if e.primitive.name == "pallas_call"]
        if self.impl == "pallas" and not calls:
            raise hillclimb_bench.VerificationError(request.key, "the program has no pallas_call")
        chunk = None
        for info in calls:
            if info.blocks and len(info.blocks[0][1]) >= 2:
                chunk = int(info.blocks[0][1][-2])
                break
        return {"chunk_size": chunk, "interpret": any(bool(c.interpret) for c in calls)}

    # -- how to check it (the verifier) ---------------------------------------------------------

    def verify(self, request: Request, program: Any, *, seed: int) -> Verified:
        if request.name == MODEL_MEASUREMENT:
            return self._verify_model(program, seed=seed)
        return self._verify_kernel(request, program, seed=seed)

    def _oracle(self, case: spec.Case, name: str) -> Any:
        from . import verify

        oracle_name = "fwd_bwd"  # its o and S_T serve fwd too; one compile per case
        key = (case, oracle_name)
        if key not in self._oracles:
            self._oracles[key] = verify.oracle_program(case, oracle_name)
        del name
        return self._oracles[key]

    def _verify_kernel(self, request: Request, program: Any, *, seed: int) -> Verified:
        import jax

        from . import verify

        case = spec.Case(**request.params)
        oracle = self._oracle(case, request.name)
        sets = verify.input_sets(case, seed=seed)
        contract = verify.contract_sets(case, seed=seed)
        outputs = []
        errors: dict[str, dict[str, float]] = {}
        for timed, input_set in [(True, s) for s in sets] + [(False, s) for s in contract]:
            want = tuple(jax.block_until_ready(oracle(*input_set.call_args("fwd_bwd"))))
            out = tuple(
                jax.tree.leaves(jax.block_until_ready(program(*input_set.call_args(request.name))))
            )
            try:
                result = verify.compare(request.name, input_set, out, want, dtype=case.dtype)
            except verify.MismatchError as e:
                raise hillclimb_bench.VerificationError(request.key, str(e)) from None
            if timed:  # timed calls must equal these outputs bit for bit
                outputs.append(out)
            for quantity, (max_abs, rel_rms) in result.items():
                worst = errors.setdefault(
                    f"{request.name}.{quantity}", {"max_abs": 0.0, "rel_rms": 0.0}
                )
                worst["max_abs"] = max(worst["max_abs"], max_abs)
                worst["rel_rms"] = max(worst["rel_rms"], rel_rms)
        return Verified(
            sets=[(s.label, s.call_args(request.name)) for s in sets],
            outputs=outputs,
            names=list(verify.QUANTITIES[request.name]),
            errors=errors,
            details={"gates": [s.gates for s in sets]},
            structured=[f"{s.gates} gates" for s in contract],
        )

    def _verify_model(self, program: Any, *, seed: int) -> Verified:
        import jax

        from . import model_verify, verify

        assert self.model is not None
        if not self._model_programs:
            self._model_programs["oracle"] = model_verify.compile_step(
                self.model, model_verify.oracle_core
            )
            self._model_programs["optimizer"] = model_verify.compile_optimizer(self.model)
        try:
            check = model_verify.verify_model(
                self.model,
                program,
                self._model_programs["oracle"],
                self._model_programs["optimizer"],
                seed=seed,
                identical=lambda a, b: hillclimb_bench.checks.identical_on_host(
                    jax.tree.leaves(a), jax.tree.leaves(b)
                ),
            )
        except verify.MismatchError as e:
            raise hillclimb_bench.VerificationError(MODEL_MEASUREMENT, str(e)) from None
        return Verified(
            sets=[(s.label, s.args) for s in check.sets],
            outputs=[tuple(jax.tree.leaves(out)) for out in check.verified],
            names=model_verify.output_names(check.verified[0]),
            errors=check.errors,
            details={"losses": check.losses, "oracle_losses": check.oracle_losses},
        )

    # -- what the metrics say --------------------------------------------------------------------

    def work(self, request: Request, info: Mapping[str, Any]) -> Work:
        from . import flops

        if request.name == MODEL_MEASUREMENT:
            assert self.model is not None
            return Work(flops=flops.train_step_flops(self.model), tokens=self.model.tokens_per_step)
        c = self.case
        chunk = reported_chunk(info, c)
        return Work(
            flops=flops.model_flops(B=c.B, T=c.T, H=c.H, K=c.K, V=c.V, measurement=request.name),
            tokens=c.B * c.T,
            executed_flops=None
            if chunk is None
            else flops.executed_flops(
                impl=self.impl,
                B=c.B,
                T=c.T,
                H=c.H,
                K=c.K,
                V=c.V,
                chunk_size=chunk,
                measurement=request.name,
            ),
        )

    def shapes(self) -> dict[str, Any]:
        c = self.case
        return {"B": c.B, "T": c.T, "H": c.H, "K": c.K, "V": c.V}

    def document(self, verified: Mapping[str, Verified], info: Mapping[str, Any]) -> dict[str, Any]:
        """``shapes`` with the chunk the export reported, ``executed_flops`` from it, the model
        section and notes."""
        timed = info.get(f"fwd@{self.case.id}") or info.get(f"fwd_bwd@{self.case.id}") or {}
        chunk = reported_chunk(timed, self.case)
        extra: dict[str, Any] = {"notes": []}
        if chunk is not None:
            extra["shapes"] = {**self.shapes(), "chunk_size": chunk}
            extra["notes"].append(
                f"chunk size {chunk} as the export reported it (informational: executed_flops)"
            )
        timed_kernel = next(
            (v for k, v in verified.items() if not k.startswith(MODEL_MEASUREMENT)), None
        )
        if timed_kernel is not None:
            extra["notes"].append(
                f"inputs alternate between {len(timed_kernel.sets)} sets "
                f"({', '.join(timed_kernel.details.get('gates', []))} gates); every returned array "
                "verified against the fp32 oracle on each"
            )
        step = verified.get(f"{MODEL_MEASUREMENT}@{self.model.name}") if self.model else None
        if self.model is not None and step is not None:
            extra["model"] = model_section(self.model, step)
            extra["notes"].append(
                f"train_step: one AdamW step of the {self.model.name} GDN hybrid on the kernel; "
                f"timed calls alternate over the inputs of its first {spec.MODEL_STEPS} steps, "
                "each verified against the same model on the fp32 oracle"
            )
        return extra


def model_section(cfg: Any, step: Verified) -> dict[str, Any]:
    """``model`` of the metrics: what was trained and how its step was counted and checked."""
    from . import flops, model, model_verify

    per_token = flops.model_flops_per_token(cfg)
    return {
        "preset": cfg.name,
        "config": cfg.as_dict(),
        "params": model.param_count(model_verify.abstract_step_args(cfg)[0]),
        "gdn_layers": cfg.gdn_layers,
        "gdn_layer_shape": {
            "B": cfg.batch,
            "T": cfg.seq_len,
            "H": cfg.heads,
            "K": cfg.head_dim,
            "V": cfg.head_dim,
        },
        "tokens_per_step": cfg.tokens_per_step,
        "flops_per_token": {**per_token, "total": sum(per_token.values())},
        "optimizer": (
            f"AdamW lr={cfg.learning_rate:g} b1={cfg.b1:g} b2={cfg.b2:g} eps={cfg.eps:g} "
            f"weight_decay={cfg.weight_decay:g}"
        ),
        "verification": {
            "steps": spec.MODEL_STEPS,
            "verified": True,
            "losses": list(step.details.get("losses", [])),
            "oracle_losses": list(step.details.get("oracle_losses", [])),
        },
    }


def reported_chunk(info: Mapping[str, Any], case: spec.Case) -> int | None:
    """The chunk size the export reported, if it is a plausible one (the export is the
    candidate's process: anything else is ignored)."""
    chunk = info.get("chunk_size") if isinstance(info, Mapping) else None
    if isinstance(chunk, int) and not isinstance(chunk, bool) and 1 <= chunk <= max(8, 2 * case.T):
        return chunk
    return None


def case_of(preset: Any) -> spec.Case:
    return spec.Case(
        B=preset.B, T=preset.T, H=preset.H, K=preset.K, V=preset.V, C=None, dtype=preset.dtype
    )


def gate_draws(draw: int) -> list[spec.Case]:
    """``spec.GATE_DRAWS`` shapes drawn from ``draw`` (the run's, unknown to the candidate in
    advance): odd lengths, any head count and head dims, both dtypes, the kernel's own chunk or
    one the caller picks."""
    rng = np.random.default_rng([draw, 0x6D])
    cases = []
    for _ in range(spec.GATE_DRAWS):
        cases.append(
            spec.Case(
                B=int(rng.choice(spec.GATE_DRAW_SPACE["B"])),
                T=int(rng.integers(*spec.GATE_DRAW_SPACE["T"])),
                H=int(rng.choice(spec.GATE_DRAW_SPACE["H"])),
                K=int(rng.choice(spec.GATE_DRAW_SPACE["K"])),
                V=int(rng.choice(spec.GATE_DRAW_SPACE["V"])),
                C=_chunk(rng.choice(spec.GATE_DRAW_SPACE["C"])),
                dtype=str(rng.choice(spec.GATE_DRAW_SPACE["dtype"])),
            )
        )
    return cases


def _chunk(x: Any) -> int | None:
    return None if int(x) == 0 else int(x)


def make_target(argv: list[str]) -> GdnTarget:
    p = hillclimb_bench.ArgumentParser(prog="kernels.harness.programs (target arguments)")
    p.add_argument("--preset", required=True, choices=sorted(_presets.PRESETS))
    p.add_argument("--model", default=None, choices=sorted(_presets.MODEL_PRESETS))
    p.add_argument("--impl", default="pallas", choices=spec.IMPLS)
    args = p.parse_args(argv)
    if args.model is not None:
        model_dtype = _presets.MODEL_PRESETS[args.model].dtype
        preset_dtype = _presets.PRESETS[args.preset].dtype
        if model_dtype != preset_dtype:
            raise hillclimb_bench.UsageError(
                f"--model {args.model} is {model_dtype} but --preset {args.preset} is "
                f"{preset_dtype}: MFU of both levels is against one peak, pick presets of one dtype"
            )
    return GdnTarget(args.preset, args.model, args.impl)


if __name__ == "__main__":
    hillclimb_bench.cli(make_target)
