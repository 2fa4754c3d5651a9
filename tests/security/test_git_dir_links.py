"""A committed symbolic link into ``.git`` is not repository content (held-out variant of
issue 27, item 5): ``perf-changelog.yaml -> .git/config`` stayed inside the work tree,
so ixtool followed it and printed git's config line by line as source lines of its
findings — ``http.…extraheader = AUTHORIZATION: basic …`` included (what
``actions/checkout`` writes unless ``persist-credentials: false``).  Reads and writes
through such a link are refused like links out of the repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.errors import InputError
from inferencex_tools.io.files import WriteError, atomic_write, read_bytes
from tests.conftest import TempRepo

SECRET = "c2VjcmV0LXRva2Vu"


def _repo(tmp: Path, links: dict[str, str]) -> Path:
    repo = TempRepo(tmp / "repo")
    repo.git("config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {SECRET}")
    for rel, target in links.items():
        (repo.path / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, repo.path / rel)
    repo.commit("links")
    return repo.path


@pytest.mark.parametrize(("command", "rel", "target"), [
    (["changelog", "validate"], "perf-changelog.yaml", ".git/config"),
    (["config", "validate"], "configs/x-master.yaml", "../.git/config"),
    (["changelog", "validate"], "perf-changelog.yaml", "docs/../.git/./config"),
])
def test_no_command_reads_git_s_files_through_a_link(tmp_path: Path, command: list[str],
                                                     rel: str, target: str) -> None:
    path = _repo(tmp_path, {rel: target})
    (path / "docs").mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", *command,
                           "--format", "text"], cwd=path, capture_output=True, text=True,
                          timeout=120, env={k: v for k, v in os.environ.items()
                                            if not k.startswith("GITHUB_")})
    assert SECRET not in proc.stdout + proc.stderr
    assert proc.returncode == 2 and "into" in proc.stderr and ".git" in proc.stderr, \
        proc.stdout[-500:] + proc.stderr


@pytest.mark.parametrize("target", [".git/config", ".git", ".git/hooks/post-checkout"])
def test_reads_and_writes_refuse_git_s_files(tmp_path: Path, target: str) -> None:
    path = _repo(tmp_path, {"out.json": target})
    with pytest.raises(InputError):
        read_bytes(path / "out.json")
    with pytest.raises(WriteError):
        atomic_write(path / "out.json", b"{}\n")
    assert not (path / ".git" / "hooks" / "post-checkout").exists()
    # a link to another file of the repository is still followed
    (path / "data.json").write_text("{}\n")
    os.symlink("data.json", path / "alias.json")
    assert read_bytes(path / "alias.json") == b"{}\n"
