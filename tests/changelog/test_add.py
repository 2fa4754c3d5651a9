"""``ixtool changelog add``: pure rendering/appending and the command end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferencex_tools.changelog.add import EntrySpec, append_entry, render_entry
from inferencex_tools.changelog.model import parse
from inferencex_tools.changelog.validate import Options, analyze_change
from inferencex_tools.errors import UsageError
from inferencex_tools.report.findings import Severity
from tests.conftest import GIT_ENV, TempRepo

F = "perf-changelog.yaml"
U = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
MASTER = ["dsr1-fp8-b200-sglang", "dsr1-fp8-h200-sglang", "gptoss-fp4-b200-vllm"]
BASE = (f'- config-keys:\n    - dsr1-fp8-b200-sglang\n  description:\n    - "first"\n'
        f"  pr-link: {U}10\n")


def ixtool(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inferencex_tools", *args], cwd=cwd,
                          env=GIT_ENV, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def repo(temp_repo: TempRepo) -> TempRepo:
    temp_repo.write("configs/nvidia-master.yaml",
                    "".join(f"{k}:\n  image: x\n" for k in MASTER[:2]))
    temp_repo.write("configs/amd-master.yaml", f"{MASTER[2]}:\n  image: y\n")
    temp_repo.write(F, BASE)
    temp_repo.commit("base")
    return temp_repo


# ------------------------------------------------------------------------------- pure

def test_render_entry_house_style() -> None:
    spec = EntrySpec(["dsr1-fp8-*-sglang", "*-b300-*"], ['say "hi"', "two"],
                     ["agentic-coding"], pr=7)
    assert render_entry(spec) == (
        b"- config-keys:\n    - dsr1-fp8-*-sglang\n    - \"*-b300-*\"\n"
        b"  scenario-type:\n    - agentic-coding\n"
        b'  description:\n    - "say \\"hi\\""\n    - "two"\n'
        b"  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/7\n")


def test_append_one_empty_line_and_final_newline() -> None:
    out = append_entry(BASE.encode(), EntrySpec(["gptoss-fp4-b200-vllm"], ["x"]),
                       master_keys=MASTER, label=F)
    assert out.data == BASE.encode() + b"\n" + out.entry
    assert out.entry.endswith(b"  pr-link: XXX\n")
    assert out.message == "appended entry 2 (gptoss-fp4-b200-vllm) with pr-link XXX"


def test_append_after_a_trailing_empty_line_adds_no_second_one() -> None:
    raw = BASE.encode() + b"\n"
    out = append_entry(raw, EntrySpec(["gptoss-fp4-b200-vllm"], ["x"]), master_keys=MASTER,
                       label=F)
    assert out.data == raw + out.entry


def test_append_to_a_new_file() -> None:
    out = append_entry(b"", EntrySpec(["gptoss-fp4-b200-vllm"], ["x"]), master_keys=MASTER,
                       label=F)
    assert out.data == out.entry


def test_unknown_key_and_empty_glob_are_refused() -> None:
    out = append_entry(BASE.encode(), EntrySpec(["dsr1-fp8-b200-sglan", "zz-*"], ["x"]),
                       master_keys=MASTER, label=F)
    assert out.data is None
    assert [(f.rule, f.message, f.hint) for f in out.findings] == [
        ("CL601", "config key 'dsr1-fp8-b200-sglan' is not defined in the master configs",
         "did you mean 'dsr1-fp8-b200-sglang'?"),
        ("CL602", "pattern 'zz-*' matches no key of the master configs",
         "fix the pattern ('*' is the only wildcard)"),
    ]


def test_missing_final_newline_is_refused() -> None:
    out = append_entry(BASE.encode().rstrip(b"\n"), EntrySpec(["gptoss-fp4-b200-vllm"], ["x"]),
                       master_keys=MASTER, label=F)
    assert out.data is None
    assert [f.rule for f in out.findings] == ["CL101"]


@pytest.mark.parametrize(("spec", "message"), [
    (EntrySpec([], ["x"]), "at least one --config-key is required"),
    (EntrySpec(["k"], []), "at least one --description is required"),
    (EntrySpec(["k"], ["  "]), "a --description may not be empty"),
    (EntrySpec([" k"], ["x"]), "invalid config key ' k'"),
    (EntrySpec(["k"], ["x"], ["agentic"]), "unknown scenario type 'agentic'"),
    (EntrySpec(["k"], ["x"], ["fixed-seq-len", "fixed-seq-len"]),
     "a --scenario-type was given twice"),
])
def test_usage_errors(spec: EntrySpec, message: str) -> None:
    with pytest.raises(UsageError) as exc:
        append_entry(BASE.encode(), spec, master_keys=MASTER, label=F)
    assert exc.value.message == message


@settings(max_examples=80, deadline=None)
@given(keys=st.lists(st.sampled_from([*MASTER, "dsr1-*", "*-vllm", "*"]), min_size=1,
                     max_size=3),
       descriptions=st.lists(st.text(min_size=1).filter(str.strip), min_size=1, max_size=3),
       scenarios=st.sampled_from([[], ["fixed-seq-len"], ["agentic-coding", "fixed-seq-len"]]),
       pr=st.one_of(st.none(), st.integers(min_value=1, max_value=10**6)))
def test_any_text_appends_a_valid_entry(keys: list[str], descriptions: list[str],
                                        scenarios: list[str], pr: int | None) -> None:
    out = append_entry(BASE.encode(), EntrySpec(keys, descriptions, scenarios, pr),
                       master_keys=MASTER, label=F)
    assert out.data is not None and out.data.startswith(BASE.encode())
    e = parse(out.data, F).entries[-1].mapping
    assert e["config-keys"] == keys and e["description"] == descriptions
    a = analyze_change(BASE.encode(), out.data, F,
                       Options(pr=pr or 1, master_keys=MASTER))
    assert [f.message for f in a.findings if f.severity is Severity.ERROR] == []


# ---------------------------------------------------------------------------- command

def test_add_command_then_validate(repo: TempRepo) -> None:
    r = ixtool(repo.path, "changelog", "add", "-k", "gptoss-fp4-b200-vllm", "-d", "Bump image",
               "-d", "Second line", "--scenario-type", "fixed-seq-len", "--pr", "12")
    assert r.returncode == 0, r.stderr
    assert "appended entry 2 (gptoss-fp4-b200-vllm) with pr-link " + U + "12\n" in r.stdout
    assert "appended" not in r.stderr  # said once, on stdout
    assert (repo.path / F).read_text() == BASE + (
        '\n- config-keys:\n    - gptoss-fp4-b200-vllm\n  scenario-type:\n    - fixed-seq-len\n'
        '  description:\n    - "Bump image"\n    - "Second line"\n'
        f"  pr-link: {U}12\n")
    assert ixtool(repo.path, "changelog", "validate").returncode == 0
    v = ixtool(repo.path, "changelog", "validate", "--base", "HEAD", "--pr", "12")
    assert v.returncode == 0, v.stdout


def test_add_placeholder_passes_pr_mode_validation(repo: TempRepo) -> None:
    r = ixtool(repo.path, "changelog", "add", "-k", "dsr1-fp8-*-sglang", "-d", "glob")
    assert r.returncode == 0, r.stderr
    assert (repo.path / F).read_text().endswith("  pr-link: XXX\n")
    v = ixtool(repo.path, "changelog", "validate", "--base", "HEAD", "--pr", "3")
    assert v.returncode == 0, v.stdout


def test_add_command_refuses_unknown_key(repo: TempRepo) -> None:
    r = ixtool(repo.path, "changelog", "add", "-k", "nope-key", "-d", "x")
    assert r.returncode == 1
    assert "[CL601] config key 'nope-key' is not defined in the master configs" in r.stdout
    assert (repo.path / F).read_text() == BASE


def test_add_command_needs_a_description_without_a_terminal(repo: TempRepo) -> None:
    r = ixtool(repo.path, "changelog", "add", "-k", "gptoss-fp4-b200-vllm")
    assert r.returncode == 2
    assert r.stderr.splitlines() == ["ixtool: error: at least one --description is required",
                                     "ixtool: hint: add -d 'what changed' (repeatable, one "
                                     "line each)"]


def test_add_command_without_master_configs(tmp_path: Path) -> None:
    (tmp_path / F).write_text(BASE)
    r = ixtool(tmp_path, "changelog", "add", "-k", "a", "-d", "x", "--repo", "o/r")
    assert r.returncode == 2
    assert "no master configs found" in r.stderr
