"""Toy target module for the loop tests: the export/verify protocol of hillclimb_bench, stdlib only.

    python -E -s -m harness.programs requests --draw N --out FILE [-- args]
    python -m harness.programs export --platform cpu --requests FILE --out DIR [-- args]
    python -E -s -m harness.programs verify --mode gate|measure|profile --platform cpu --draw N \
        --arm A=DIR [--arm B=DIR] --out FILE [--rounds R --repeats N --warmup W --min-time-ms T --trace DIR ...]

The export imports the candidate's ``toy.kernel`` and writes its *program*: the factor ``compute``
applies (found by calling it, the way jax.export traces a function) and the delay of one call. The
verifier never imports ``toy``: it runs the program with its own interpreter, checks it against the
protected oracle (2x) on inputs from a fresh seed, and times it; the session document has the same
shape as hillclimb_bench's. Stdlib only, so the loop tests start no JAX.
"""

import argparse
import gzip
import hashlib
import json
import os
import platform
import random
import statistics
import sys
import time
from datetime import datetime, timezone

SESSION = "hillclimb.session/v1"
KEY = "fwd_bwd@toy"
FILE = "fwd_bwd_toy.jaxexport"


def requests(args) -> int:
    """The request file: the one program, its shape, the versions here (no draw, no purpose)."""
    doc = {
        "schema": "hillclimb.requests/v1",
        "target": "toy",
        "versions": {"python": platform.python_version(), "jax": "none", "jaxlib": "none"},
        "requests": [{"key": KEY, "name": "fwd_bwd", "case": "toy", "params": {}, "args": None}],
    }
    with open(args.out, "w") as f:
        json.dump(doc, f)
    return 0


def export(args) -> int:
    with open(args.requests) as f:
        asked = [r["key"] for r in json.load(f)["requests"]]
    if asked != [KEY]:
        print(f"export: failed: asked for {asked}", file=sys.stderr)
        return 2
    sys.path.insert(0, os.getcwd())
    from toy import kernel  # the code under test: only here

    if getattr(kernel, "CRASH_BENCH", False):
        print("export: failed: the kernel asked to crash", file=sys.stderr)
        return 3
    factor = kernel.compute([1])[0]
    program = {
        "factor": factor,
        "delay_s": kernel.DELAY_S,
        "corrupt_trace": bool(getattr(kernel, "CORRUPT_TRACE", False)),
        "unroll": int(getattr(kernel, "UNROLL", 1)),
    }
    slow = getattr(kernel, "SLOW_VERIFY_S", 0)
    if slow:
        program["verify_delay_s"] = slow  # the verifier takes this long before it checks: the suite fails first
    if getattr(kernel, "FAIL_WITH_RIVALS", False):
        program["fail_with_rivals"] = True  # what another arm's programs can do to it in one process
    crash = getattr(kernel, "CRASH_VERIFIER", False)
    if crash:
        program["crash_verifier"] = crash  # True: in every session; "measure": in measurements only
    if getattr(kernel, "NO_METRICS", False):
        return 0
    os.makedirs(args.out, exist_ok=True)
    data = json.dumps(program, sort_keys=True).encode()
    if getattr(kernel, "GARBLED_PROGRAM", False):
        data = b"\x00garbled"
    with open(os.path.join(args.out, FILE), "wb") as f:
        f.write(data)
    manifest = {
        "schema": "hillclimb.programs/v1",
        "platform": args.platform,
        "source": {"kernel_modules": {"toy": "toy/__init__.py"}, "info": {}},
        "programs": [{"key": KEY, "purpose": "bench", "file": FILE, "sha256": hashlib.sha256(data).hexdigest()}],
    }
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    print(f"export: 1 program for {args.platform}", file=sys.stderr)
    return 0


def load(folder, mode):
    """(sha256, program, failure) of an arm's program, read as data."""
    path = os.path.join(folder, FILE)
    if not os.path.isfile(path) or os.path.islink(path):
        return None, None, f"{KEY}: the export wrote no program {FILE}"
    data = open(path, "rb").read()
    try:
        program = json.loads(data)
        if program.get("crash_verifier") in (True, mode):
            # What a hostile program does to a parser written in C++: the process aborts.
            os.abort()
        factor, delay = program["factor"], program["delay_s"]
        if not isinstance(factor, (int, float)) or not isinstance(delay, (int, float)) or not 0 <= delay < 5:
            raise ValueError("bad program")
    except (ValueError, KeyError, TypeError) as e:
        return hashlib.sha256(data).hexdigest(), None, f"{KEY}: does not deserialize: {e}"
    return hashlib.sha256(data).hexdigest(), program, None


def run(program, xs):
    time.sleep(program["delay_s"])
    step = max(1, int(program.get("unroll", 1)))
    out = []
    for i in range(0, len(xs), step):
        out += [program["factor"] * x for x in xs[i : i + step]]
    return out


def verify_program(program, seed):
    """Inputs drawn from the verifier's seed, checked against the oracle (2x)."""
    time.sleep(min(30, max(0, float(program.get("verify_delay_s", 0)))))
    rng = random.Random(seed)
    for n in (1, 5, 10):
        xs = [rng.randint(-1000, 1000) for _ in range(n)]
        got, want = run(program, xs), [2 * x for x in xs]
        if got != want:
            return f"{KEY}: fwd_bwd o [input set n{n}]: expected {want[:3]}…, got {got[:3]}…"
    return None


def metrics(samples, arm, session, seed, sha):
    med = statistics.median(samples)
    m = {
        "samples_ms": samples,
        "median_ms": med,
        "p10_ms": min(samples),
        "p90_ms": max(samples),
        "flops": 1.0e6,
        "tflops_per_s": 1.0e6 / (med / 1000.0) / 1e12,
        "mfu": None,
        "tokens_per_s": 1000.0 / (med / 1000.0),
    }
    return {
        "schema": "hillclimb.metrics/v1",
        "target": "toy",
        "impl": "python",
        "preset": "tiny",
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "device": {"backend": "cpu", "kind": "cpu", "count": 1, "peak_flops_per_s": None, "interpret": False},
        "shapes": {"B": 1, "T": 10, "H": 1, "K": 1, "V": 1, "chunk_size": 1},
        "dtype": "float32",
        "timing": {"warmup": 1, "repeats": len(samples), "clock": "perf_counter"},
        "measurements": {"fwd": m, "fwd_bwd": m},
        "versions": {"python": platform.python_version(), "jax": "none", "jaxlib": "none"},
        "git": {"commit": None, "dirty": None},
        "trace_dir": None,
        "verification": {
            "seed": seed,
            "seed_source": "os.urandom",
            "input_sets": ["n1", "n5", "n10"],
            "verified": True,
            "timed_outputs_compared": len(samples),
            "errors": {},
        },
        "programs": {"platform": "cpu", "sha256": {KEY: sha}},
        "session": {**session, "arm": arm},
    }


def timed_rounds(args, loaded, doc, seed):
    """``args.rounds`` rounds of the arms in ``loaded``, call by call."""
    rng = random.Random(seed)
    rounds = []
    for r in range(args.rounds):
        first = rng.choice(list(loaded))
        order = [first] + [n for n in loaded if n != first]
        samples = {n: [] for n in loaded}
        for call in range(args.warmup + args.repeats):
            for n in order if call % 2 == 0 else order[::-1]:
                t0 = time.perf_counter()
                run(loaded[n], [1, 2, 3])
                if call >= args.warmup:
                    samples[n].append((time.perf_counter() - t0) * 1000.0)
        session = {"round": r + 1, "rounds": args.rounds, "first": first}
        rounds.append({"first": first, **{n: metrics(samples[n], n, session, seed, doc["arms"][n]["programs"][KEY])
                                          for n in loaded}})
    return rounds


def verify(args) -> int:
    if any(m == "toy" or m.startswith("toy.") for m in sys.modules):
        print("verify: cannot vouch for this session: the code under test is loaded", file=sys.stderr)
        return 3
    seed = int.from_bytes(os.urandom(6), "big")
    arms = dict(a.split("=", 1) for a in args.arm)
    doc = {"schema": SESSION, "mode": args.mode, "platform": args.platform, "seed": seed, "draw": args.draw,
           "arms": {}, "identical": False, "notes": []}
    loaded = {}
    for name, folder in arms.items():
        sha, program, failure = load(folder, args.mode)
        if failure is None:
            failure = verify_program(program, seed)
        if failure is None and program.get("fail_with_rivals") and len(arms) > 2:
            failure = f"{KEY}: fwd_bwd o [input set n1]: failed beside {len(arms) - 1} other arm(s)"
        loaded[name] = program
        doc["arms"][name] = {"programs": {KEY: sha} if sha else {}, "verified": failure is None,
                             "failure": failure, "compile_ms": {}, "errors": {}}
    failures = {n: a["failure"] for n, a in doc["arms"].items() if a["failure"]}
    if args.mode == "gate":
        arm = doc["arms"][next(iter(arms))]
        doc["gate"] = {"passed": arm["failure"] is None, "total": 1, "failed": int(arm["failure"] is not None),
                       "programs": [{"key": KEY, "purpose": "bench", "status": "failed" if arm["failure"] else "passed",
                                     **({"sha256": arm["programs"][KEY]} if KEY in arm["programs"] else {}),
                                     **({"error": arm["failure"]} if arm["failure"] else {})}]}
    elif args.mode == "measure" and len(arms) > 2:
        # A screening session: the first arm (the champion) and the candidates that verified and are
        # not its bytes are timed; the others are named (as hillclimb_bench's verifier does).
        names = list(arms)
        first_sha = doc["arms"][names[0]]["programs"].get(KEY)
        doc["same_as_first"] = [n for n in names[1:] if not doc["arms"][n]["failure"]
                                and doc["arms"][n]["programs"].get(KEY) == first_sha]
        live = [names[0]] + [n for n in names[1:] if not doc["arms"][n]["failure"] and n not in doc["same_as_first"]]
        if not doc["arms"][names[0]]["failure"] and len(live) >= 2:
            doc["rounds"] = timed_rounds(args, {n: loaded[n] for n in live}, doc, seed)
    elif not failures and args.mode == "measure":
        shas = [a["programs"].get(KEY) for a in doc["arms"].values()]
        doc["identical"] = len(set(shas)) == 1
        if not doc["identical"]:
            doc["rounds"] = timed_rounds(args, loaded, doc, seed)
    elif not failures and args.mode == "profile":
        name = next(iter(arms))
        samples = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            run(loaded[name], [1, 2, 3])
            samples.append((time.perf_counter() - t0) * 1000.0)
        doc_m = metrics(samples, name, {"round": 1, "rounds": 1, "first": name}, seed, doc["arms"][name]["programs"][KEY])
        doc_m["trace_dir"] = args.trace
        write_trace(args.trace, samples, corrupt=loaded[name].get("corrupt_trace", False))
        doc["profile"] = {"metrics": doc_m, "trace_dir": args.trace}
    with open(args.out, "w") as f:
        json.dump(doc, f)
    print(f"verify: {args.mode} done", file=sys.stderr)
    return 0


def write_trace(trace_dir, samples, *, corrupt):
    """A small tsl-shaped Chrome trace (one TPU device, XLA Modules + XLA Ops)."""
    run_dir = os.path.join(trace_dir, "plugins", "profile", "2026_01_01_00_00_00")
    os.makedirs(run_dir, exist_ok=True)
    events = [
        {"ph": "M", "pid": 3, "name": "process_name", "args": {"name": "/device:TPU:0"}},
        {"ph": "M", "pid": 3, "tid": 2, "name": "thread_name", "args": {"name": "XLA Modules"}},
        {"ph": "M", "pid": 3, "tid": 3, "name": "thread_name", "args": {"name": "XLA Ops"}},
    ]
    ts = 10.0
    for s in samples:
        dur = s * 1000.0
        events.append({"ph": "X", "pid": 3, "tid": 2, "ts": ts, "dur": dur + 2.0, "name": "jit_step(123)", "args": {}})
        events.append({"ph": "X", "pid": 3, "tid": 3, "ts": ts + 1.0, "dur": dur, "name": "toy_kernel.1",
                       "args": {"hlo_category": "custom-call", "long_name": 'custom_call_target="tpu_custom_call"'}})
        ts += dur + 10.0
    if corrupt:
        with open(os.path.join(run_dir, "host.trace.json.gz"), "wb") as f:
            f.write(gzip.compress(b'{"traceEvents": [ {"ph": "X", "pid": 3, ')[:-4])
        return
    with gzip.open(os.path.join(run_dir, "host.trace.json.gz"), "wt") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events + [{}]}, f)


def main(argv) -> int:
    if not argv or argv[0] not in ("requests", "export", "verify"):
        print("usage: python -m harness.programs requests|export|verify …", file=sys.stderr)
        return 2
    rest = argv[1:]
    own = rest[: rest.index("--")] if "--" in rest else rest
    p = argparse.ArgumentParser(prog=f"harness.programs {argv[0]}")
    p.add_argument("--out", required=True)
    if argv[0] == "requests":
        p.add_argument("--draw", type=int, required=True)
        return requests(p.parse_args(own))
    p.add_argument("--platform", required=True)
    if argv[0] == "export":
        p.add_argument("--requests", required=True)
        return export(p.parse_args(own))
    p.add_argument("--draw", type=int, required=True)
    p.add_argument("--mode", required=True)
    p.add_argument("--arm", action="append", required=True)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    # Accepted as hillclimb-bench's verifier does; the toy's calls are counted by --repeats alone.
    p.add_argument("--min-time-ms", type=int, default=0)
    p.add_argument("--compile-cache")
    p.add_argument("--pin-cpu", action="store_true")
    p.add_argument("--trace")
    return verify(p.parse_args(own))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
