"""Helpers for the reliability suite: run the real CLI in a subprocess, build changelogs."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
REPO = "SemiAnalysisAI/InferenceX"


def entry(i: int, link: str | None = None, key: str = "dsr1-fp8-b200-sglang",
          desc: str | None = None) -> str:
    link = link if link is not None else f"https://github.com/{REPO}/pull/{i}"
    return (f"- config-keys:\n  - {key}\n  description:\n  - \"{desc or f'Entry {i}'}\"\n"
            f"  pr-link: {link}\n")


def changelog(n: int, start: int = 1) -> bytes:
    return "\n".join(entry(i) for i in range(start, start + n)).encode()


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    @property
    def rules(self) -> set[str]:
        try:
            return {f["rule"] for f in self.json()["findings"]}
        except (ValueError, KeyError, TypeError):
            return set()

    def assert_clean_exit(self) -> None:
        """Exit 0/1/2, never a traceback or an internal error; exit 2 has a message."""
        assert self.code in (0, 1, 2), (self.code, self.err[-2000:])
        assert "Traceback" not in self.err, self.err[-2000:]
        assert "internal error" not in self.err, self.err[-2000:]
        if self.code == 2:
            assert "ixtool: error:" in self.err or "Usage:" in self.err, self.err


def ixtool(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
           timeout: float = 120) -> Run:
    """``python -m inferencex_tools ARGS`` as a child process (the real entry point)."""
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("GITHUB_", "IXTOOL_TRACEBACK"))}
    full["PYTHONPATH"] = str(ROOT) + os.pathsep + full.get("PYTHONPATH", "")
    full.update(env or {})
    p = subprocess.run([sys.executable, "-m", "inferencex_tools", *args], cwd=cwd, env=full,
                       capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return Run(p.returncode, p.stdout, p.stderr)


def replay_harness(name: str = "replay_prs") -> ModuleType:
    """benchmarks/NAME.py as a module (a script, not part of the package): replay_prs
    (merged PRs as squash commits) or pr_heads (PR heads, which imports replay_prs)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
