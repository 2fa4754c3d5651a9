"""Loading the data-driven changelog cases of ``tests/cases/changelog`` (see its README)."""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferencex_tools.changelog.configkeys import top_level_keys

CASES_DIR = Path(__file__).resolve().parent.parent / "cases" / "changelog"
MASTER_FILE = CASES_DIR / "_configs" / "nvidia-master.yaml"
DEFAULT_REPO = "SemiAnalysisAI/InferenceX"
LABEL = "perf-changelog.yaml"


def _unescape(s: str) -> bytes:
    """A Python-escaped string (``\\t``, ``\\xff``) → bytes (UTF-8 for the rest)."""
    out: bytes = codecs.escape_decode(s.encode("utf-8"))[0]
    return out


def alias_bomb() -> bytes:
    """A 'billion laughs' document: 9 levels of 9 aliases each (9**9 nodes)."""
    lines = ['- config-keys: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        refs = ", ".join([f"*l{i - 1}"] * 9)
        lines.append(f"  k{i}: &l{i} [{refs}]")
    lines += ["  description:", '    - "boom"', "  pr-link: XXX"]
    return ("\n".join(lines) + "\n").encode()


def huge(base: bytes) -> bytes:
    """50 MB: the base plus one appended entry whose description is enormous."""
    line = b'    - "' + b"x" * 1000 + b'"\n'
    body = line * (50 * 1024 * 1024 // len(line) + 1)
    return (base + b"\n- config-keys:\n    - dsr1-fp4-b200-sglang\n  description:\n" + body
            + b"  pr-link: XXX\n")


@dataclass
class Case:
    name: str
    path: Path
    base: bytes | None  # None: standalone
    head: bytes
    expected: dict[str, Any]
    findings: list[tuple[str, int | None]] = field(default_factory=list)

    @property
    def mode(self) -> str:
        return str(self.expected.get("mode", "standalone" if self.base is None else "main"))

    @property
    def pr(self) -> int | None:
        pr = self.expected.get("pr")
        return int(pr) if pr is not None and self.mode == "pr" else None

    @property
    def repo(self) -> str:
        return str(self.expected.get("repo", DEFAULT_REPO))

    @property
    def master_keys(self) -> list[str] | None:
        if self.expected.get("configs", True) is False:
            return None
        if "master_keys" in self.expected:
            return [str(k) for k in self.expected["master_keys"]]
        return top_level_keys(MASTER_FILE.read_text(encoding="utf-8"))

    @property
    def cli(self) -> bool:
        return bool(self.expected.get("cli", False))


def load_case(path: Path) -> Case:
    expected = json.loads((path / "expected.json").read_text(encoding="utf-8"))
    base_file = path / "base.yaml"
    base = base_file.read_bytes() if base_file.exists() else None
    gen = expected.get("head_generate")
    if gen == "alias_bomb":
        head = (base or b"") + b"\n" + alias_bomb()
    elif gen == "huge":
        head = huge(base or b"")
    elif gen is not None:
        raise ValueError(f"{path.name}: unknown head_generate {gen!r}")
    else:
        head = (path / "head.yaml").read_bytes()
    crlf_from = expected.get("head_crlf_from_line")
    if crlf_from is not None:  # CRLF line endings from that line on (kept out of git)
        lines = head.split(b"\n")
        k = int(crlf_from) - 1
        head = b"\n".join([*lines[:k], *(ln + b"\r" if i < len(lines) - k - 1 else ln
                                         for i, ln in enumerate(lines[k:]))])
    for old, new in expected.get("head_patch", []):
        o, n = _unescape(old), _unescape(new)
        if o not in head:
            raise ValueError(f"{path.name}: head_patch {old!r} not found")
        head = head.replace(o, n, 1)
    findings = [(str(f["rule"]), f.get("line")) for f in expected.get("findings", [])]
    return Case(path.name, path, base, head, expected, findings)


def all_cases() -> list[Case]:
    return [load_case(p) for p in sorted(CASES_DIR.iterdir())
            if p.is_dir() and not p.name.startswith("_")]
