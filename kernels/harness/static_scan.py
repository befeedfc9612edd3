"""Static tripwires over the editable kernel sources (protected; see ``spec``)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from . import spec

KERNEL_DIR = Path(__file__).resolve().parents[1] / "gdn"


def code_lines(source: str) -> list[tuple[int, str]]:
    """``(line number, code)`` with comments and string literals (docstrings too) blanked out."""
    lines = source.splitlines()
    blank = {tokenize.COMMENT, tokenize.STRING}
    blank.update(
        getattr(tokenize, n)
        for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
        if hasattr(tokenize, n)
    )
    for tok in reversed(list(tokenize.generate_tokens(io.StringIO(source).readline))):
        if tok.type not in blank:
            continue
        (r0, c0), (r1, c1) = tok.start, tok.end
        if r0 == r1:
            line = lines[r0 - 1]
            lines[r0 - 1] = line[:c0] + " " * (c1 - c0) + line[c1:]
        else:
            lines[r0 - 1] = lines[r0 - 1][:c0]
            for r in range(r0, r1 - 1):
                lines[r] = ""
            lines[r1 - 1] = " " * c1 + lines[r1 - 1][c1:]
    return [(n, line.strip()) for n, line in enumerate(lines, 1) if line.strip()]


def scan_source(source: str, *, path: str = "<source>") -> list[str]:
    """Findings ``path:line: reason: code`` for every forbidden pattern in the code."""
    findings = []
    for lineno, code in code_lines(source):
        for pattern, reason in spec.FORBIDDEN_SOURCE_PATTERNS.items():
            if re.search(pattern, code):
                findings.append(f"{path}:{lineno}: {reason}: {code}")
    return findings


def scan_kernel_dir(root: Path = KERNEL_DIR) -> list[str]:
    """Scan every file under ``kernels/gdn``: disallowed file types and forbidden code."""
    findings = []
    for path in sorted(root.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root.parents[1]).as_posix()
        if path.suffix not in spec.ALLOWED_KERNEL_SUFFIXES:
            findings.append(f"{rel}: file type {path.suffix or '<none>'} not allowed")
            continue
        if path.suffix == ".py":
            findings.extend(scan_source(path.read_text(), path=rel))
    return findings
