"""The command line keeps its documented word (issue 26, items 5–16): the global flags
anywhere, one verdict for --strict in every report, a closed pipe, the history quirks of
a standalone changelog check, help examples that work here, did-you-mean hints that name
what exists, progress in logs, completion of names, the pre-commit hooks' real usage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.cli.common import SETTINGS
from inferencex_tools.cli.main import EXIT_BROKEN_PIPE, run
from tests.changelog.clihelp import cli_env, ixtool
from tests.conftest import TempRepo

ROOT = Path(__file__).resolve().parents[1]

ENTRY = """- config-keys:
    - {key}
  description:
    - "{text}"
  pr-link: {link}
"""


@pytest.fixture(autouse=True)
def _settings() -> object:
    yield None
    SETTINGS.reset()


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        run(args)
    out, err = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 0), out, err


# ------------------------------------------------------------------ 5: -q anywhere

@pytest.mark.parametrize("args", [
    ["rules", "-q", "--area", "ci"],           # after the command
    ["rules", "--area", "ci", "-q"],           # last
    ["sweep", "-q", "explain", "--help"],      # on a group
    ["-q", "rules", "--area", "ci"],           # before the command (as before)
    ["rules", "--quiet", "--area", "ci"],
])
def test_quiet_short_flag_anywhere(args: list[str], capsys: pytest.CaptureFixture[str]
                                   ) -> None:
    code, _out, err = _run(args, capsys)
    assert code == 0, err
    assert SETTINGS.quiet, "the flag was accepted but not applied"
    assert "error" not in err


@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_quiet_that_is_a_value_stays_a_value(flag: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``-d -q``: the description is ``-q`` (the option takes a value), not the flag."""
    (tmp_path / "perf-changelog.yaml").write_text(ENTRY.format(
        key="a", text="x", link="https://github.com/SemiAnalysisAI/InferenceX/pull/1"))
    (tmp_path / "m.yaml").write_text("a:\n  image: x\n")
    code, _, err = _run(["changelog", "add", str(tmp_path / "perf-changelog.yaml"),
                         "--configs", str(tmp_path / "m.yaml"), "-k", "a", "-d", flag], capsys)
    assert not SETTINGS.quiet, err
    assert code == 0, err
    assert f'"{flag}"' in (tmp_path / "perf-changelog.yaml").read_text()


# --------------------------------------------------- 6: --strict and the reports agree

def _warning_repo(temp_repo: TempRepo) -> Path:
    """A change whose only finding is a warning (CL603: no master configs to check keys)."""
    temp_repo.write("perf-changelog.yaml", ENTRY.format(
        key="a", text="first", link="https://github.com/SemiAnalysisAI/InferenceX/pull/1"))
    temp_repo.commit("base")
    with (temp_repo.path / "perf-changelog.yaml").open("a") as fh:
        fh.write("\n" + ENTRY.format(key="b", text="second",
                                     link="https://github.com/SemiAnalysisAI/InferenceX/pull/2"))
    return temp_repo.path


def test_strict_exit_code_and_reports_agree(temp_repo: TempRepo) -> None:
    root = _warning_repo(temp_repo)
    base = ["changelog", "validate", "--base", "HEAD"]
    p = ixtool(root, *base, "--format", "json")
    assert p.returncode == 0 and json.loads(p.stdout)["ok"] is True, p.stdout + p.stderr
    assert json.loads(p.stdout)["summary"]["warnings"] == 1
    p = ixtool(root, *base, "--strict", "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 1
    assert doc["ok"] is False and doc["strict"] is True
    p = ixtool(root, *base, "--strict")
    assert p.returncode == 1
    assert "changelog validate: FAILED: 0 errors, 1 warning" in p.stdout
    p = ixtool(root, *base)
    assert p.returncode == 0 and "changelog validate: ok: 0 errors, 1 warning" in p.stdout
    summary = root / "summary.md"
    p = ixtool(root, *base, "--strict", "--format", "github",
               env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert p.returncode == 1 and summary.read_text().startswith("### ❌")


# ---------------------------------------------------------------- 7: a closed pipe

@pytest.mark.parametrize("args", [["rules"], ["-V"], ["--help"], ["sweep"],
                                  ["rules", "--format", "markdown"]])
def test_closed_pipe_is_not_findings_nor_a_traceback(args: list[str], tmp_path: Path) -> None:
    """``ixtool … | head -1``: the reader is gone before ixtool writes (the read end is
    closed at once), so the first write fails with EPIPE."""
    p = subprocess.Popen([sys.executable, "-m", "inferencex_tools", *args], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env())
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == EXIT_BROKEN_PIPE == 141, err
    assert err == "", err
