"""Replay the gate over real history: every first-parent commit that changed the changelog.

Blobs come from one ``git cat-file --batch`` process; each commit is judged in main
mode (no PR number) by the pure core, with the master configs of that commit's own
tree (absent in old commits → CL603 warning, keys unchecked).  A commit's head is
the next commit's base, so its parse is reused.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from inferencex_tools.changelog.configkeys import top_level_keys
from inferencex_tools.changelog.model import Changelog
from inferencex_tools.changelog.validate import Options, analyze_change
from inferencex_tools.report.findings import Finding, Severity
from tests.conftest import GIT_ENV

CHANGELOG = "perf-changelog.yaml"
MASTERS = ("configs/nvidia-master.yaml", "configs/amd-master.yaml")


@dataclass
class Verdict:
    sha: str
    date: str
    subject: str
    findings: list[Finding]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def rules(self) -> set[str]:
        return {f.rule for f in self.errors}

    @property
    def accepted(self) -> bool:
        return not self.errors


class BlobReader:
    """``git cat-file --batch`` as a long-lived process."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=GIT_ENV,
        )

    def get(self, rev: str, path: str) -> bytes | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{rev}:{path}\n".encode())
        self.proc.stdin.flush()
        header = self.proc.stdout.readline()
        if header.endswith(b" missing\n"):
            return None
        size = int(header.split()[2])
        data = self.proc.stdout.read(size)
        self.proc.stdout.read(1)
        return data

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


def changelog_commits(repo: Path) -> list[tuple[str, str, str, str | None]]:
    """(sha, date, subject, first parent) of the first-parent commits that touched the
    changelog, oldest first."""
    out = subprocess.run(
        ["git", "-C", str(repo), "log", "--first-parent", "--reverse",
         "--format=%H%x00%P%x00%ad%x00%s", "--date=short", "--", CHANGELOG],
        capture_output=True, text=True, check=True, env=GIT_ENV,
    ).stdout
    rows: list[tuple[str, str, str, str | None]] = []
    for line in out.splitlines():
        sha, parents, date, subject = line.split("\0")
        rows.append((sha, date, subject, parents.split()[0] if parents else None))
    return rows


def replay(repo: Path, only: set[str] | None = None, since: str = "") -> Iterator[Verdict]:
    """Judge each changelog commit (or only those whose sha starts with one of ``only``,
    or those dated ``since`` or later)."""
    reader = BlobReader(repo)
    prev: Changelog | None = None
    try:
        for sha, date, subject, parent in changelog_commits(repo):
            if (only is not None and not any(sha.startswith(o) for o in only)) or date < since:
                continue
            base = reader.get(parent, CHANGELOG) if parent else None
            head = reader.get(sha, CHANGELOG) or b""
            keys: list[str] | None = None
            for m in MASTERS:
                blob = reader.get(sha, m)
                if blob is not None:
                    keys = (keys or []) + top_level_keys(blob.decode("utf-8", "replace"))
            a = analyze_change(base or b"", head, CHANGELOG, Options(master_keys=keys),
                               base_parsed=prev)
            prev = a.head
            yield Verdict(sha, date, subject, a.findings)
    finally:
        reader.close()


def summarize(verdicts: list[Verdict]) -> tuple[int, int, Counter[str]]:
    """(commits, rejected, commits per error rule)."""
    rules: Counter[str] = Counter()
    for v in verdicts:
        rules.update(v.rules)
    return len(verdicts), sum(1 for v in verdicts if not v.accepted), rules
