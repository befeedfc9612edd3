"""What Google's xprof says about XSpace profiles: the reference the trace tests check against.

    .venv/bin/python tests/trace/xprof_reference.py OUT.json XPLANE [XPLANE ...]

For each XSpace, xprof (a pinned dev requirement) converts it with its own tools, exactly as its
web UI would, and this script keeps the numbers the test compares:

- `hlo_ops`: the `hlo_stats` tool, one row per (program id, HLO op): occurrences, total self
  time, and the FLOPs and bytes per occurrence xprof's cost analysis gives (GFLOP/s and GiB/s
  times time);
- `kernels`: the `kernel_stats` tool, one row per (kernel, op): launches and total duration;
- `steps`: the `overview_page` tool's step-time rows (when xprof finds steps) and mean step time;
- from the `trace_viewer` tool: executions of each program on TPU (`XLA Modules` events, per
  device, with their mean duration), GPU host launches (`<module>:XLA GPU module` events and the
  threads that launched them) and the GPUs each module's kernels ran on, and XLA:CPU ops on host
  threads (occurrences and self time, nested ops subtracted; runs per module by `run_id`).

xprof logs to stderr; the JSON goes to OUT.json.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections import defaultdict
from importlib.metadata import version
from typing import Any

from xprof.convert import raw_to_tool_data

GIB = 2**30


def tool(path: str, name: str) -> Any:
    data, _ = raw_to_tool_data.xspace_to_tool_data([path], name, {"use_saved_result": False})
    if isinstance(data, bytes):
        data = data.decode()
    return json.loads(data) if data else None


def table_rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    cols = [c.get("label") or c.get("id") for c in table.get("cols", [])]
    return [
        {c: (cell or {}).get("v") for c, cell in zip(cols, row["c"], strict=False)}
        for row in table.get("rows", [])
    ]


def hlo_ops(path: str) -> list[dict[str, Any]]:
    out = []
    for r in table_rows(tool(path, "hlo_stats") or {}):
        occ = r["#Occurrences"] or 0
        self_us = r["Total self time (us)"] or 0.0
        seconds = self_us * 1e-6
        out.append(
            {
                "program": str(r["Program id"]),
                "op": r["HLO op name"],
                "category": r["HLO op category"],
                "occurrences": occ,
                "selfUs": self_us,
                "flopsPerOccurrence": (r["Model GFLOP/s"] or 0) * 1e9 * seconds / occ if occ else 0,
                "bytesPerOccurrence": (r["Measured memory BW (GiB/s)"] or 0) * GIB * seconds / occ
                if occ
                else 0,
            }
        )
    return out


def kernels(path: str) -> list[dict[str, Any]]:
    data = tool(path, "kernel_stats")
    table = data[0] if isinstance(data, list) else (data or {})
    return [
        {
            "kernel": r["Kernel Name"],
            "op": r["Op Name"],
            "occurrences": r["Occurrences"],
            "totalUs": r["Total Duration (μs)"],
        }
        for r in table_rows(table)
    ]


def steps(path: str) -> dict[str, Any]:
    pages = tool(path, "overview_page") or []
    for page in pages:
        cols = [c.get("id") for c in page.get("cols", [])]
        if "stepnum" in cols:
            p = page.get("p") or {}
            return {
                "count": len(page.get("rows", [])),
                "meanMs": float(p.get("steptime_ms_average", "0") or 0),
            }
    return {"count": 0, "meanMs": 0.0}


def trace_viewer(path: str) -> dict[str, Any]:
    doc = tool(path, "trace_viewer") or {}
    events = doc.get("traceEvents", [])
    process: dict[Any, str] = {}
    thread: dict[tuple[Any, Any], str] = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            process[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            thread[(e["pid"], e["tid"])] = e["args"]["name"]
    modules: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    launches: dict[str, dict[str, Any]] = defaultdict(lambda: {"count": 0, "threads": set()})
    cpu_events: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    cpu_runs: dict[str, set[str]] = defaultdict(set)
    gpu_devices: dict[str, set[str]] = defaultdict(set)
    gpu_memcpy_us = 0.0
    for e in events:
        if e.get("ph") != "X":
            continue
        dev = process.get(e["pid"], "")
        lane = thread.get((e["pid"], e.get("tid")), "")
        name = e.get("name", "")
        if dev.startswith("/device:TPU:") and lane == "XLA Modules":
            modules[name][dev].append((float(e["ts"]), float(e.get("dur", 0))))
        elif dev.startswith("/host:") and name.endswith(":XLA GPU module"):
            launch = launches[name[: -len(":XLA GPU module")]]
            launch["count"] += 1
            launch["threads"].add(lane)
        elif dev.startswith("/host:") and "hlo_op" in (e.get("args") or {}):
            cpu_events[(e["pid"], e.get("tid"))].append(e)
            cpu_runs[e["args"].get("hlo_module", "")].add(e["args"].get("run_id", ""))
        elif dev.startswith("/device:GPU:") and "hlo_module" in (e.get("args") or {}):
            gpu_devices[e["args"]["hlo_module"]].add(dev)
        if dev.startswith("/device:GPU:") and ("(Memcpy" in lane or "(Memset" in lane):
            gpu_memcpy_us += float(e.get("dur", 0))
    return {
        "modules": {m: module_times(devs) for m, devs in modules.items()},
        "launches": {
            m: {"count": v["count"], "threads": len(v["threads"])} for m, v in launches.items()
        },
        "cpuOps": cpu_ops(cpu_events),
        "cpuRuns": {m: len(runs) for m, runs in cpu_runs.items()},
        "gpuModuleDevices": {m: len(devs) for m, devs in gpu_devices.items()},
        # Copies and sets on the GPU's memcpy lines: device time that kernel_stats leaves out.
        "gpuMemcpyUs": gpu_memcpy_us,
    }


def module_times(devs: dict[str, list[tuple[float, float]]]) -> dict[str, Any]:
    """A program's executions per device, their mean length, and the mean over steps (the k-th
    execution on each device) of the slowest device's length: the device that gates the step."""
    runs = {d: [dur for _, dur in sorted(v)] for d, v in devs.items()}
    steps = max(len(v) for v in runs.values())
    slowest = [max(v[k] for v in runs.values() if k < len(v)) for k in range(steps)]
    return {
        "perDevice": {d: len(v) for d, v in runs.items()},
        "meanMs": sum(sum(v) for v in runs.values()) / sum(len(v) for v in runs.values()) / 1e3,
        "slowestMeanMs": sum(slowest) / steps / 1e3,
    }


def cpu_ops(by_thread: dict[tuple[Any, Any], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """XLA:CPU ops by (module, op): occurrences and self time (nested ops' time subtracted)."""
    totals: dict[tuple[str, str], dict[str, float]] = defaultdict(
        lambda: {"occurrences": 0, "selfUs": 0.0}
    )
    for events in by_thread.values():
        events.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        stack: list[tuple[float, dict[str, Any], list[float]]] = []  # (end, event, [child time])

        def close(item: tuple[float, dict[str, Any], list[float]]) -> None:
            _, ev, child = item
            key = (ev["args"].get("hlo_module", ""), ev["args"]["hlo_op"])
            totals[key]["occurrences"] += 1
            totals[key]["selfUs"] += max(0.0, float(ev.get("dur", 0)) - child[0])

        for e in events:
            start = float(e["ts"])
            end = start + float(e.get("dur", 0))
            while stack and start >= stack[-1][0]:
                close(stack.pop())
            if stack:
                stack[-1][2][0] += min(end, stack[-1][0]) - start
            stack.append((end, e, [0.0]))
        while stack:
            close(stack.pop())
    return [{"module": m, "op": op, **v} for (m, op), v in sorted(totals.items())]


def reference(xplane: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "host.xplane.pb")
        shutil.copy(xplane, path)
        return {
            "hloOps": hlo_ops(path),
            "kernels": kernels(path),
            "steps": steps(path),
            **trace_viewer(path),
        }


def main(out: str, xplanes: list[str]) -> None:
    result = {"xprof": version("xprof"), "profiles": {x: reference(x) for x in xplanes}}
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
