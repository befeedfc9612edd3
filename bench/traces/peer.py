"""The Python peer for the trace benchmark: what marin's profiling ingest does first.

`json.load` of the whole (gzipped) Chrome trace, then pure-Python aggregation of complete events by
name. Prints one JSON line with wall and CPU seconds, peak RSS, bytes, events and distinct names.

    python bench/traces/peer.py <trace.json.gz>
"""

import gzip
import json
import resource
import sys
import time


def main(path: str) -> None:
    t0 = time.perf_counter()
    c0 = time.process_time()
    with gzip.open(path, "rb") as f:
        raw = f.read()
    nbytes = len(raw)
    doc = json.loads(raw)
    del raw
    totals: dict[str, float] = {}
    events = 0
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        events += 1
        name = e.get("name", "")
        totals[name] = totals.get(name, 0.0) + float(e.get("dur", 0))
    print(
        json.dumps(
            {
                "kind": "python-peer",
                "wallS": time.perf_counter() - t0,
                "cpuS": time.process_time() - c0,
                "maxRssMB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "bytes": nbytes,
                "events": events,
                "names": len(totals),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
