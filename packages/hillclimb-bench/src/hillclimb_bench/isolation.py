"""What the verifier checks about its own process: it never loaded the code under test.

The verifier's tree holds the harness without the editable code, and the harness starts it with
``-E -s`` (no ``PYTHON*`` variables, no user site-packages) in a folder of its own. These checks
make the promise explicit and testable: none of the target's kernel modules is in ``sys.modules``,
and no folder of exported programs (data the export step wrote) is on ``sys.path``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def kernel_modules_loaded(kernel_modules: Sequence[str]) -> list[str]:
    """Loaded modules that are, or are inside, one of ``kernel_modules``."""
    return sorted(
        m for m in list(sys.modules) if any(m == k or m.startswith(k + ".") for k in kernel_modules)
    )


def breaches(kernel_modules: Sequence[str], data_folders: Sequence[Path]) -> list[str]:
    """Why this process may not vouch for a measurement (empty when it may)."""
    found = []
    loaded = kernel_modules_loaded(kernel_modules)
    if loaded:
        found.append(
            f"the code under test is loaded in the verifier ({', '.join(loaded[:5])}): the "
            "target's module must import its kernel only inside kernel() (build() for a Target of "
            "its own)"
        )
    folders = [f.resolve() for f in data_folders]
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        if any(path == f or path.is_relative_to(f) for f in folders):
            found.append(f"{entry!r} on sys.path is a folder of exported programs")
    return found


def describe(kernel_modules: Sequence[str]) -> dict[str, Any]:
    """The process's own account, kept in the session document."""
    return {
        "kernel_modules": list(kernel_modules),
        "kernel_modules_loaded": kernel_modules_loaded(kernel_modules),
        "ignore_environment": bool(sys.flags.ignore_environment),
        "no_user_site": bool(sys.flags.no_user_site),
        "sys_path": list(sys.path),
    }
