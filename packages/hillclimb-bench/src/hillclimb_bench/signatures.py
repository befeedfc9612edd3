"""The documented signatures of the custom calls a verified program may contain (CPU: LAPACK).

A custom call runs native code on buffers XLA allocates from the shapes the program declares. A
program that names an allowed target with a result too small for what the routine writes (pivots as
``int32[1]`` for a 64 x 64 LU), or without the alias that makes it work in place, has the routine
write past a buffer inside the verifier — the process whose numbers decide. So every allowed call is
checked here, before anything is compiled, against what JAX's own lowering emits
(``jax._src.lax.linalg``): operand and result shapes and dtypes, the input/output alias, and the
options in its backend config. A call that does not match is refused by name.

Shapes: ``A`` is ``[*batch, m, n]`` (square where the routine needs it); ``k = min(m, n)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

# A tensor type as VHLO prints it: (shape, element type), e.g. ((64, 64), "f32").
Tensor = tuple[tuple[int, ...], str]

_TENSOR = re.compile(r"^!vhlo\.tensor_v1<(?P<dims>(?:\d+x)*)!vhlo\.(?P<dtype>\w+?)_v1>$")
_ALIAS = re.compile(
    r"output_operand_alias_v1<outputTupleIndices = \[(?P<out>[\d, ]*)\], operandIndex = (?P<op>\d+)"
)
_OPTION = re.compile(r'#vhlo\.string_v1<"(?P<key>\w+)"> = #vhlo\.integer_v1<(?P<value>\d+) : ui8>')


def parse_tensor(text: str) -> Tensor | None:
    """``!vhlo.tensor_v1<64x8x!vhlo.f32_v1>`` → ``((64, 8), "f32")``; None for anything else
    (dynamic dimensions, tuples, tokens)."""
    m = _TENSOR.match(text.strip())
    if m is None:
        return None
    dims = tuple(int(d) for d in m.group("dims").split("x") if d)
    return dims, m.group("dtype")


def parse_aliases(text: str) -> list[tuple[tuple[int, ...], int]]:
    """``output_operand_aliases`` → ``[(output tuple index, operand index)]``."""
    out = []
    for m in _ALIAS.finditer(text):
        index = tuple(int(i) for i in m.group("out").replace(" ", "").split(",") if i)
        out.append((index, int(m.group("op"))))
    return out


def parse_options(text: str) -> dict[str, str]:
    """The one-character options of ``mhlo.backend_config`` (``uplo``, ``mode``, …) as letters."""
    return {m.group("key"): chr(int(m.group("value"))) for m in _OPTION.finditer(text)}


Check = Callable[[Sequence[Tensor], Sequence[Tensor], dict[str, str]], str | None]


def _matrix(t: Tensor, dtype: str, *, square: bool = False) -> str | None:
    shape, dt = t
    if dt != dtype:
        return f"element type {dt}, expected {dtype}"
    if len(shape) < 2:
        return f"shape {list(shape)} is not a matrix"
    if 0 in shape:
        # JAX lowers empty matrices without a call; LAPACK's workspace query on one is undefined.
        return f"shape {list(shape)} is empty"
    if square and shape[-1] != shape[-2]:
        return f"shape {list(shape)} is not square"
    return None


def _expect(got: Sequence[Tensor], want: Sequence[Tensor], what: str) -> str | None:
    if len(got) != len(want):
        return f"{len(got)} {what}, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g != w:
            return f"{what} {i} is {list(g[0])} {g[1]}, expected {list(w[0])} {w[1]}"
    return None


def _lapack(dtype: str, routine: str) -> Check:
    i32 = "i32"

    def check(ops: Sequence[Tensor], res: Sequence[Tensor], opt: dict[str, str]) -> str | None:
        if not ops:
            return "no operand"
        a = ops[0]
        bad = _matrix(a, dtype, square=routine in ("potrf", "syevd"))
        if bad:
            return f"operand 0: {bad}"
        *batch, m, n = a[0]
        b, k = tuple(batch), min(m, n)
        if routine == "getrf":
            want_ops, want_res = [a], [a, ((*b, k), i32), (b, i32)]
        elif routine == "geqrf":
            want_ops, want_res = [a], [a, ((*b, k), dtype)]
        elif routine == "orgqr":
            if m < n:
                return f"a is {list(a[0])}: orgqr needs at least as many rows as columns"
            if len(ops) != 2 or len(ops[1][0]) != len(b) + 1 or ops[1][0][:-1] != b:
                return "expects (a, tau[*batch, k])"
            if ops[1][1] != dtype or ops[1][0][-1] > k:
                return f"tau is {list(ops[1][0])} {ops[1][1]}, expected [*batch, ≤{k}] {dtype}"
            want_ops, want_res = list(ops[:2]), [a]
        elif routine == "potrf":
            want_ops, want_res = [a], [a, (b, i32)]
            if opt.get("uplo") not in ("L", "U"):
                return f"uplo {opt.get('uplo')!r} is not L or U"
        elif routine == "syevd":
            want_ops, want_res = [a], [a, ((*b, n), dtype), (b, i32)]
            if opt.get("uplo") not in ("L", "U") or opt.get("mode") not in ("V", "N"):
                return f"options {opt} are not uplo L/U and mode V/N"
        elif routine == "gesdd":
            mode = opt.get("mode")
            shapes = {"A": ((m, m), (n, n)), "S": ((m, k), (k, n)), "N": ((m, m), (n, n))}
            if mode not in shapes:
                return f"mode {mode!r} is not A, S or N"
            u, vt = shapes[mode]
            want_ops = [a]
            want_res = [a, ((*b, k), dtype), ((*b, *u), dtype), ((*b, *vt), dtype), (b, i32)]
        elif routine == "trsm":
            if len(ops) != 2:
                return "expects (a, b)"
            rhs = ops[1]
            bad = _matrix(rhs, dtype)
            if bad:
                return f"operand 1: {bad}"
            side = opt.get("side")
            size = rhs[0][-2] if side == "L" else rhs[0][-1] if side == "R" else None
            if size is None or a[0] != (*rhs[0][:-2], size, size):
                return f"a is {list(a[0])}, not square {size} for side {side!r} of b {list(rhs[0])}"
            if opt.get("uplo") not in ("L", "U") or opt.get("diag") not in ("N", "U"):
                return f"options {opt} are not uplo L/U and diag N/U"
            if opt.get("trans_x") not in ("N", "T", "C"):
                return f"trans_x {opt.get('trans_x')!r} is not N, T or C"
            want_ops, want_res = list(ops), [rhs]
        else:
            return f"no signature for {routine}"
        return _expect(ops, want_ops, "operand") or _expect(res, want_res, "result")

    return check


# Which result works in place on which operand: LAPACK overwrites its input, so JAX aliases them.
_IN_PLACE = {"getrf": 0, "geqrf": 0, "orgqr": 0, "potrf": 0, "syevd": 0, "gesdd": 0, "trsm": 1}

SIGNATURES: dict[str, tuple[Check, int]] = {
    f"lapack_{p}{r}_ffi": (_lapack({"s": "f32", "d": "f64"}[p], r), _IN_PLACE[r])
    for p in ("s", "d")
    for r in ("getrf", "geqrf", "orgqr", "potrf", "syevd", "gesdd", "trsm")
}


def check_call(
    target: str,
    operands: Sequence[str],
    results: Sequence[str],
    aliases: str,
    backend_config: str,
) -> str | None:
    """Why a custom call to ``target`` (types as VHLO prints them) is not its documented signature,
    or None. Targets without a signature here (Mosaic on TPU) are checked by their own rules."""
    entry = SIGNATURES.get(target)
    if entry is None:
        return None
    check, aliased_operand = entry
    ops = [parse_tensor(t) for t in operands]
    res = [parse_tensor(t) for t in results]
    if any(t is None for t in (*ops, *res)):
        return f"custom_call {target!r}: an operand or result is not a static tensor"
    problem = check([t for t in ops if t], [t for t in res if t], parse_options(backend_config))
    if problem:
        return f"custom_call {target!r} does not match its signature: {problem}"
    alias = parse_aliases(aliases)
    one_result = len(res) == 1
    expected = ((() if one_result else (0,)), aliased_operand)
    if alias != [expected]:
        return (
            f"custom_call {target!r} does not match its signature: the in-place alias of result 0 "
            f"to operand {aliased_operand} is {alias or 'missing'}"
        )
    return None
