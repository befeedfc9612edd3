"""Toy correctness gate: checks toy.kernel.compute against a protected oracle, writes JUnit XML.

The cases are named after the kernel's ``CASE_LABEL`` when it has one: like a pytest suite collecting
the candidate's own test files, the test names in the report are the candidate's words."""

import argparse
import os
import sys
import time
from xml.sax.saxutils import escape

sys.path.insert(0, os.getcwd())
from toy import kernel  # noqa: E402

TOLERANCE = 0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--junit", required=True)
    args = p.parse_args()
    if getattr(kernel, "HANG_TESTS", False):
        time.sleep(600)
    cases = []
    for n in (1, 5, 10):
        xs = list(range(n))
        want = [2 * x for x in xs]
        got = kernel.compute(xs)
        ok = all(abs(a - b) <= TOLERANCE for a, b in zip(got, want)) and len(got) == len(want)
        label = getattr(kernel, "CASE_LABEL", "n")
        cases.append((f"test_compute[{label}{n}]", ok, f"expected {want}, got {got}"))
    with open(args.junit, "w") as f:
        failures = sum(1 for _, ok, _ in cases if not ok)
        f.write(f'<testsuites><testsuite name="toy" tests="{len(cases)}" failures="{failures}">')
        for name, ok, msg in cases:
            f.write(f'<testcase classname="harness.check" name="{escape(name, {chr(34): "&quot;", chr(10): "&#10;"})}" time="0.001">')
            if not ok:
                f.write(f'<failure message="{escape(msg, {chr(34): "&quot;"})}">{escape(msg)}</failure>')
            f.write("</testcase>")
        f.write("</testsuite></testsuites>")
    print(f"{len(cases) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
