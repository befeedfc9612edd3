"""What the bench verifies before a model-level timing counts (protected).

The bench times one AdamW training step of the GDN hybrid (``model.py``) built on the candidate's
``kernels.gdn``: ``train_step(params, opt_state, tokens) -> (params', opt_state', loss)``. The same
model built on the protected fp32 oracle (``verify.segmented_oracle``) is the reference; nothing
else differs between the two programs, so every difference is the kernel's.

From a seed drawn after both programs were compiled: initial parameters and ``spec.MODEL_STEPS``
token batches. The candidate runs that many chained steps; each step's inputs are a timed input
set, and on each the candidate's loss, parameter update and first moment (the gradient's trace in
the optimizer) are compared with the oracle model's step on the *same* inputs, and a second call
must be bit-identical. Then the oracle model runs the same steps on its own, and the loss after
each step and the parameters after the last must agree with the candidate's run
(``spec.TOL_MODEL*``). Timed calls alternate over the input sets; outputs kept from them must be
bit-identical to the verified ones (the bench's spot check).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import spec
from .model import Core, adamw_apply, adamw_init, init_params, make_train_step, random_tokens
from .presets import ModelConfig
from .testing import assert_close
from .verify import MismatchError, segmented_oracle


def kernel_core(gdn: Any, impl: str) -> Core:
    """The candidate's GDN core: ``gdn`` of ``kernels.gdn`` as a model calls it (no initial
    state, no final state)."""

    def core(q, k, v, g, beta):
        o, _ = gdn(q, k, v, g, beta, impl=impl)
        return o

    return core


def oracle_core(q, k, v, g, beta):
    """The protected fp32 oracle as a GDN core: inputs upcast, ``o`` returned in ``v``'s dtype."""
    B, _, H, K = q.shape
    f32 = jnp.float32
    s0 = jnp.zeros((B, H, K, v.shape[-1]), f32)
    o, _ = segmented_oracle(*(x.astype(f32) for x in (q, k, v, g, beta)), s0, scale=K**-0.5)
    return o.astype(v.dtype)


def abstract_step_args(cfg: ModelConfig) -> tuple[Any, Any, jax.ShapeDtypeStruct]:
    """Shapes and dtypes of ``train_step``'s arguments (params, opt_state, tokens)."""
    params = jax.eval_shape(lambda: init_params(cfg, np.random.default_rng(0)))
    opt_state = jax.eval_shape(adamw_init, params)
    tokens = jax.ShapeDtypeStruct((cfg.batch, cfg.seq_len + 1), jnp.int32)
    return params, opt_state, tokens


def compile_step(cfg: ModelConfig, core: Core) -> Any:
    """``train_step`` of the model on ``core``, compiled from abstract shapes. The candidate and
    the oracle model share everything but the core, matmul precision included."""
    return jax.jit(make_train_step(cfg, core)).lower(*abstract_step_args(cfg)).compile()


@dataclasses.dataclass(frozen=True)
class StepInput:
    """One timed input set of the training step: the state before step ``index + 1``."""

    index: int
    args: tuple[Any, Any, jax.Array]  # params, opt_state, tokens

    @property
    def label(self) -> str:
        return f"step {self.index + 1}"


@dataclasses.dataclass(frozen=True)
class ModelVerification:
    """The verified outputs per input set and what the checks measured."""

    sets: list[StepInput]
    verified: list[Any]  # the candidate's output (params', opt_state', loss) on each set
    errors: dict[str, dict[str, float]]
    losses: list[float]  # the candidate's run
    oracle_losses: list[float]  # the oracle model's own run


def leaf_names(tree: Any) -> list[str]:
    """``layers[0].w_qkvz``-style names of a pytree's leaves, in ``jax.tree.leaves`` order."""
    names = []
    for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]:
        name = ""
        for key in path:
            if isinstance(key, jax.tree_util.DictKey):
                name += f".{key.key}" if name else str(key.key)
            elif isinstance(key, jax.tree_util.SequenceKey):
                name += f"[{key.idx}]"
            else:
                name += str(key)
        names.append(name)
    return names


def _tree_errors(
    what: str,
    got: Any,
    want: Any,
    *,
    tol: spec.Tol,
    where: str,
    worst: dict[str, float],
) -> None:
    """Compare two parameter trees leaf by leaf; raise ``MismatchError`` naming the first leaf
    out of tolerance; keep the worst error in ``worst``."""
    for name, x, y in zip(
        leaf_names(got), jax.tree.leaves(got), jax.tree.leaves(want), strict=True
    ):
        try:
            max_abs, rel_rms = assert_close(
                f"train_step {what} of {name} [{where}]", y, x, tol=tol, log=None
            )
        except AssertionError as e:
            raise MismatchError(f"{e} (vs the model on the fp32 oracle)") from None
        worst["max_abs"] = max(worst["max_abs"], max_abs)
        worst["rel_rms"] = max(worst["rel_rms"], rel_rms)


def _loss_error(label: str, got: Any, want: Any, *, tol: spec.Tol, worst: dict[str, float]) -> None:
    try:
        max_abs, rel_rms = assert_close(label, np.float64(want), np.float64(got), tol=tol, log=None)
    except AssertionError as e:
        raise MismatchError(f"{e} (vs the model on the fp32 oracle)") from None
    worst["max_abs"] = max(worst["max_abs"], max_abs)
    worst["rel_rms"] = max(worst["rel_rms"], rel_rms)


def _compare_step(
    out: Any,
    ref: Any,
    expected_params: Any,
    *,
    dtype: str,
    where: str,
    errors: dict[str, dict[str, float]],
) -> None:
    """The candidate's step output against the oracle model's on the same inputs: the loss and
    AdamW's moments (the gradient, linearly and squared); and its parameters against AdamW applied
    to its own verified moments (``expected_params``)."""
    (params, opt, loss), (_, ref_opt, ref_loss) = out, ref

    def worst(key: str) -> dict[str, float]:
        return errors.setdefault(f"train_step.{key}", {"max_abs": 0.0, "rel_rms": 0.0})

    _loss_error(
        f"train_step loss [{where}]",
        loss,
        ref_loss,
        tol=spec.TOL_MODEL_LOSS[dtype],
        worst=worst("loss"),
    )
    for key, what in (("mu", "first moment"), ("nu", "second moment")):
        _tree_errors(
            what,
            opt[key],
            ref_opt[key],
            tol=spec.TOL_MODEL_MOMENT[dtype],
            where=where,
            worst=worst(what.replace(" ", "_")),
        )
    _tree_errors(
        "parameters (vs AdamW of its verified moments)",
        params,
        expected_params,
        tol=spec.TOL_MODEL_UPDATE,
        where=where,
        worst=worst("update"),
    )


def initial_state(cfg: ModelConfig, *, seed: int) -> tuple[Any, Any, list[jax.Array]]:
    """Parameters, optimizer state and ``spec.MODEL_STEPS`` token batches from ``seed``."""
    rng = np.random.default_rng([seed, 7])
    params = init_params(cfg, rng)
    batches = [random_tokens(cfg, rng) for _ in range(spec.MODEL_STEPS)]
    return params, adamw_init(params), batches


def verify_model(
    cfg: ModelConfig,
    candidate: Any,
    oracle: Any,
    optimizer: Any,
    *,
    seed: int,
    identical: Any,
) -> ModelVerification:
    """Run and check the candidate's steps against the oracle model (module docstring). Raises
    ``MismatchError`` naming the quantity, parameter and step of the first failure. ``optimizer``
    is ``adamw_update`` compiled on its own (``compile_optimizer``); ``identical(a, b)`` returns
    per-leaf bitwise equality of two output trees."""
    params, opt_state, batches = initial_state(cfg, seed=seed)
    params0 = params
    sets: list[StepInput] = []
    verified: list[Any] = []
    errors: dict[str, dict[str, float]] = {}
    losses: list[float] = []
    for i, tokens in enumerate(batches):
        step_input = StepInput(i, (params, opt_state, tokens))
        where = step_input.label
        out = jax.block_until_ready(candidate(*step_input.args))
        again = jax.block_until_ready(candidate(*step_input.args))
        if not np.asarray(identical(out, again)).all():
            raise MismatchError(f"train_step is not deterministic: two calls on {where} differ")
        ref = jax.block_until_ready(oracle(*step_input.args))
        expected = optimizer(params, out[1])
        _compare_step(out, ref, expected, dtype=cfg.dtype, where=where, errors=errors)
        sets.append(step_input)
        verified.append(out)
        losses.append(float(out[2]))
        params, opt_state = out[0], out[1]

    # The oracle model on its own: the loss after every step, and where the parameters end up.
    o_params, o_opt = params0, adamw_init(params0)
    oracle_losses = []
    for tokens in batches:
        o_params, o_opt, o_loss = jax.block_until_ready(oracle(o_params, o_opt, tokens))
        oracle_losses.append(float(o_loss))
    n = len(batches)
    for i, (mine, theirs) in enumerate(zip(losses, oracle_losses, strict=True)):
        _loss_error(
            f"train_step loss after step {i + 1} of {n} (each model on its own)",
            mine,
            theirs,
            tol=spec.TOL_MODEL_TRAJECTORY[cfg.dtype],
            worst=errors.setdefault("train_step.trajectory_loss", {"max_abs": 0.0, "rel_rms": 0.0}),
        )
    return ModelVerification(sets, verified, errors, losses, oracle_losses)


def compile_optimizer(cfg: ModelConfig) -> Any:
    """``(params, opt_state') -> params'``: AdamW's parameter update from the moments a step
    returned, compiled apart from the step, to check that a step's new parameters are what its own
    moments imply."""

    def apply(params: Any, new_state: Any) -> Any:
        return adamw_apply(params, new_state, cfg)

    params, opt_state, _ = abstract_step_args(cfg)
    return jax.jit(apply).lower(params, opt_state).compile()


def compile_candidate(cfg: ModelConfig, gdn: Any, impl: str) -> Any:
    return compile_step(cfg, kernel_core(gdn, impl))


def compile_oracle(cfg: ModelConfig) -> Any:
    return compile_step(cfg, oracle_core)


def output_names(out: Any) -> list[str]:
    """Names of a step output's arrays in leaf order: ``params.layers[0].w_qkvz``, ``opt.mu.…``,
    ``loss``."""
    params, opt_state, _ = out
    return [
        *(f"params.{n}" for n in leaf_names(params)),
        *(f"opt_state.{n}" for n in leaf_names(opt_state)),
        "loss",
    ]


def unverified_sets(cfg: ModelConfig, candidate: Any, *, seed: int) -> ModelVerification:
    """The timed input sets without any check (``--no-check``, debug): the candidate's own run."""
    params, opt_state, batches = initial_state(cfg, seed=seed)
    sets, outs, losses = [], [], []
    for i, tokens in enumerate(batches):
        sets.append(StepInput(i, (params, opt_state, tokens)))
        out = jax.block_until_ready(candidate(params, opt_state, tokens))
        outs.append(out)
        losses.append(float(out[2]))
        params, opt_state = out[0], out[1]
    return ModelVerification(sets, outs, {}, losses, [])
