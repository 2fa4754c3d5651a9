"""The fake-GitHub world shared by the merge and the review tests: a bare ``origin``
(branch main) served by the local fake GitHub REST server (``tests/merge/fake_github.py``),
a ``seed`` repository the scenario commits and pushes with, and the user's clone."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from tests.merge.fake_github import FakeGitHub

SLUG = "acme/bench"
PRN = 7


def _git(cwd: Path, env: Mapping[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=dict(env), check=True, capture_output=True)


def init_origin(root: Path, env: Mapping[str, str]) -> tuple[Path, Path]:
    """``root/origin.git`` (bare, branch main) and ``root/seed``: an empty repository on
    branch main whose ``origin`` is the bare one.  Returns (bare, seed)."""
    bare, seed = root / "origin.git", root / "seed"
    _git(root, env, "init", "-q", "--bare", "-b", "main", str(bare))
    seed.mkdir()
    _git(seed, env, "init", "-q", "-b", "main")
    _git(seed, env, "remote", "add", "origin", str(bare))
    return bare, seed


@dataclass
class ForgeWorld:
    """Where a scenario lives: ``tmp`` holds ``origin.git`` (served by ``fake``), the
    ``seed`` the scenario pushes with, and ``user`` (the clone ixtool runs in)."""

    tmp: Path
    bare: Path
    seed: Path
    user: Path
    fake: FakeGitHub
    env: Mapping[str, str]  # of the git commands the world runs

    @classmethod
    def serve(cls, tmp: Path, bare: Path, seed: Path, env: Mapping[str, str],
              slug: str = SLUG) -> Self:
        """The world of ``bare`` and ``seed`` with the fake GitHub started on ``bare``."""
        return cls(tmp=tmp, bare=bare, seed=seed, user=tmp / "user",
                   fake=FakeGitHub(bare, slug).start(), env=env)

    def clone_user(self) -> None:
        _git(self.tmp, self.env, "clone", "-q", str(self.bare), str(self.user))

    def writes(self) -> list[tuple[str, str, int]]:
        """The write requests (POST, PUT, PATCH, DELETE) the fake GitHub answered."""
        return [e for e in self.fake.log if e[0] in ("POST", "PUT", "PATCH", "DELETE")]
