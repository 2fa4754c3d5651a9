"""Terminal conventions (issue 31): NO_COLOR (no-color.org), FORCE_COLOR
(force-color.org), TERM=dumb, and progress lines that are redrawn only where that works.

The end-to-end cases run ``ixtool config validate`` on a repository with a finding, its
stdout a real pseudo-terminal or a pipe, and look for ANSI escapes in what it wrote."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.cli.term import color_wanted, live_line
from tests.changelog.clihelp import cli_env
from tests.conftest import TempRepo

ESC = "\x1b["


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


@pytest.mark.parametrize(("env", "tty", "color"), [
    ({}, True, True),
    ({}, False, False),
    ({"NO_COLOR": "1"}, True, False),
    ({"NO_COLOR": ""}, True, True),  # set but empty: not a request (no-color.org)
    ({"FORCE_COLOR": "1"}, False, True),  # into a pipe or a file (force-color.org)
    ({"FORCE_COLOR": "0"}, False, True),  # any non-empty value
    ({"FORCE_COLOR": ""}, False, False),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, True, False),  # NO_COLOR wins
    ({"TERM": "dumb"}, True, False),
    ({"TERM": "dumb", "FORCE_COLOR": "1"}, True, True),
])
def test_color_wanted(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tty: bool,
                      color: bool) -> None:
    for k in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert color_wanted(_Stream(tty)) is color


@pytest.mark.parametrize(("env", "tty", "live"), [
    ({}, True, True),
    ({}, False, False),
    ({"CI": "true"}, True, False),
    ({"NO_COLOR": "1"}, True, False),
    ({"NO_COLOR": ""}, True, True),
    ({"TERM": "dumb"}, True, False),  # no erase-line on a dumb terminal
])
def test_progress_is_redrawn_only_where_that_works(
        monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tty: bool, live: bool) -> None:
    for k in ("NO_COLOR", "CI", "TERM"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert live_line(_Stream(tty)) is live


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = TempRepo(tmp_path_factory.mktemp("term") / "repo")
    r.write("configs/nvidia-master.yaml", "k-one:\n  image: x\n  model: m\n")
    r.commit("a config with findings")
    return r.path


def _run(repo: Path, env: dict[str, str], *, tty: bool) -> str:
    full = {k: v for k, v in cli_env(env).items()
            if k not in ("NO_COLOR", "FORCE_COLOR", "TERM") or k in env}
    argv = [sys.executable, "-m", "inferencex_tools", "config", "validate"]
    if not tty:
        return subprocess.run(argv, cwd=repo, env=full, capture_output=True,
                              text=True).stdout
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(argv, cwd=repo, env=full, stdout=follower,
                                stderr=subprocess.DEVNULL)
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        proc.wait()
    finally:
        os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize(("env", "tty", "ansi"), [
    ({}, True, True),
    ({"NO_COLOR": ""}, True, True),  # used to turn colour off
    ({"NO_COLOR": "1"}, True, False),
    ({"TERM": "dumb"}, True, False),  # used to get ANSI
    ({}, False, False),
    ({"FORCE_COLOR": "1"}, False, True),  # used to be ignored
])
def test_findings_are_coloured_as_the_conventions_say(repo: Path, env: dict[str, str],
                                                     tty: bool, ansi: bool) -> None:
    out = _run(repo, env, tty=tty)
    assert "error" in out, out
    assert (ESC in out) is ansi, repr(out[:300])
