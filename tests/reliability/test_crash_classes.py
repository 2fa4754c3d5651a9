"""Regression tests for every crash class the spec lists for the reference.

CHANGELOG.md §12 G6/G18 and SWEEP.md §10 (items 1, 3, 6, 12, 24): the reference
crashes with a traceback, or silently gives a wrong verdict, on these inputs.
ixtool must give a clean result (findings, exit 1) or a clean error (exit 2 with
an ``ixtool: error:`` line) — through the real CLI entry point.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import GIT_ENV, TempRepo
from tests.reliability.helpers import REPO, Run, changelog, entry, ixtool

MASTER = """\
dsr1-fp8-b200-sglang:
  image: lmsysorg/sglang:v0.5
  model: deepseek-ai/DeepSeek-R1
  model-prefix: dsr1
  runner: b200
  precision: fp8
  framework: sglang
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - {tp: 8, conc-start: 4, conc-end: 16}
"""
RUNNERS = "labels:\n  b200:\n  - b200-nv_0\n"
KEY = "dsr1-fp8-b200-sglang"


def _validate(cwd: Path, *args: str) -> Run:
    r = ixtool("changelog", "validate", "perf-changelog.yaml", "--repo", REPO,
               "--format", "json", *args, cwd=cwd)
    r.assert_clean_exit()
    return r


def _from_changelog(cwd: Path) -> Run:
    r = ixtool("sweep", "from-changelog", "--base", "main", cwd=cwd)
    r.assert_clean_exit()
    return r


@pytest.fixture
def repo(temp_repo: TempRepo) -> TempRepo:
    temp_repo.write("configs/b200-master.yaml", MASTER)
    temp_repo.write("configs/runners.yaml", RUNNERS)
    temp_repo.write("perf-changelog.yaml", changelog(2).replace(
        b"dsr1-fp8-b200-sglang", KEY.encode()))
    temp_repo.commit("base")
    temp_repo.git("checkout", "-q", "-b", "pr")
    return temp_repo


def _append(repo: TempRepo, block: bytes) -> None:
    p = repo.path / "perf-changelog.yaml"
    repo.write("perf-changelog.yaml", p.read_bytes() + b"\n" + block)


# ------------------------------------------------------------ G18: odd YAML roots

@pytest.mark.parametrize("raw,what", [
    (b"42\n", "found an integer"), (b"just a string\n", "found a string"),
    (b"config-keys: [a]\npr-link: XXX\n", "found a mapping"), (b"~\n", "found empty"),
    (b"3.5\n", "found a number"), (b"true\n", "found a boolean"), (b"- a\n- 1\n", None),
])
def test_odd_root_standalone(tmp_path: Path, raw: bytes, what: str | None) -> None:
    (tmp_path / "perf-changelog.yaml").write_bytes(raw)
    r = _validate(tmp_path)
    assert r.code == 1
    if what is None:  # a list of scalars: every item is reported, not iterated per char
        assert "CL115" in r.rules
    else:
        assert "CL113" in r.rules
        assert any(what in f["message"] for f in r.json()["findings"])


@pytest.mark.parametrize("raw", [b"42\n", b"just a string\n", b"a: 1\n"])
def test_odd_root_in_diff_mode(repo: TempRepo, raw: bytes) -> None:
    repo.write("perf-changelog.yaml", raw)
    r = _validate(repo.path, "--base", "main")
    assert r.code == 1 and "CL113" in r.rules
    s = _from_changelog(repo.path)
    assert s.code == 2 and "ixtool: error:" in s.err


# ------------------------------------------------------------------- G6: encoding

def test_latin1_byte_is_a_finding_not_a_decode_traceback(repo: TempRepo) -> None:
    _append(repo, entry(3, link="XXX", key=KEY, desc="caf\xe9").encode("latin-1"))
    r = _validate(repo.path, "--base", "main")
    assert r.code == 1 and "CL105" in r.rules
    line = next(f["line"] for f in r.json()["findings"] if f["rule"] == "CL105")
    assert line == 16
    s = _from_changelog(repo.path)
    assert s.code == 2 and "UTF-8" in s.err


def test_nul_byte_that_makes_git_call_the_file_binary(repo: TempRepo) -> None:
    _append(repo, entry(3, link="XXX", key=KEY, desc="a\0b").encode())
    repo.commit("nul")
    numstat = subprocess.run(["git", "diff", "--numstat", "main", "HEAD"], cwd=repo.path,
                             env=GIT_ENV, capture_output=True, text=True, check=True).stdout
    assert numstat.startswith("-\t-\t")  # git: binary, no lines to see
    r = _validate(repo.path, "--base", "main")
    assert r.code == 1 and "CL104" in r.rules  # not "no additions found"
    assert any(f["line"] == 16 for f in r.json()["findings"] if f["rule"] == "CL104")
    s = _from_changelog(repo.path)
    assert s.code == 2 and "ixtool: error:" in s.err  # a clear refusal, not "no additions"


# ------------------------------------------------- G6: '++' / '--' line prefixes

PLUS = (f"- config-keys:\n  - {KEY}\n  description:\n  - \"first line\n++ continued\"\n"
        "  pr-link: XXX\n").encode()


def test_added_line_starting_with_plusplus_is_seen(repo: TempRepo) -> None:
    _append(repo, PLUS)
    r = _validate(repo.path, "--base", "main")
    assert r.json()["info"]["new_entries"] == [3]
    assert "CL110" not in r.rules
    s = _from_changelog(repo.path)
    assert s.code == 0, s.err
    meta = json.loads(s.out)["changelog_metadata"]
    assert any(KEY in json.dumps(m) for m in (meta if isinstance(meta, list) else [meta]))


def test_added_unknown_key_on_plusplus_entry_is_flagged(repo: TempRepo) -> None:
    _append(repo, PLUS.replace(KEY.encode(), b"no-such-key"))
    r = _validate(repo.path, "--base", "main")
    assert r.code == 1 and "CL601" in r.rules


def test_deleted_line_starting_with_minusminus_is_seen(repo: TempRepo) -> None:
    hist = (f"- config-keys:\n  - {KEY}\n  description:\n  - \"old\n-- note\"\n"
            f"  pr-link: https://github.com/{REPO}/pull/50\n").encode()
    repo.git("checkout", "-q", "main")
    _append(repo, hist)
    repo.commit("history with a -- line")
    repo.git("checkout", "-q", "-B", "pr")
    p = repo.path / "perf-changelog.yaml"
    repo.write("perf-changelog.yaml", p.read_bytes().replace(b"-- note", b"note"))
    r = _validate(repo.path, "--base", "main")
    assert r.code == 1
    assert r.rules & {"CL401", "CL402", "CL403", "CL404", "CL405"}, r.rules


# ------------------------------------------------------ G6: colour in git config

def test_color_diff_always_does_not_change_the_verdict(repo: TempRepo) -> None:
    _append(repo, entry(3, link="XXX", key=KEY).encode())
    before = _validate(repo.path, "--base", "main")
    before_sweep = _from_changelog(repo.path)
    repo.git("config", "color.diff", "always")
    repo.git("config", "color.ui", "always")
    after = _validate(repo.path, "--base", "main")
    after_sweep = _from_changelog(repo.path)
    assert (after.code, after.rules) == (before.code, before.rules)
    assert after.json()["info"]["new_entries"] == [3]
    assert (after_sweep.code, after_sweep.out) == (before_sweep.code, before_sweep.out)
    assert before_sweep.code == 0 and json.loads(before_sweep.out)


# -------------------------------------------- SWEEP.md §10: master-config crashes

BAD_MASTERS = {
    "string-isl": MASTER.replace("isl: 1024", "isl: '1024'"),
    "string-osl-word": MASTER.replace("osl: 1024", "osl: long"),
    "tp-zero": MASTER.replace("tp: 8", "tp: 0"),
    "ep-negative": MASTER.replace("tp: 8,", "tp: 8, ep: -3,"),
    "conc-start-zero": MASTER.replace("conc-start: 4", "conc-start: 0"),
    "conc-list-null": MASTER.replace("conc-start: 4, conc-end: 16", "conc-list: null"),
    "empty-file": "",
    "root-list": "- a\n",
    "root-int": "7\n",
    "duplicate-key": MASTER + MASTER.split("\n", 1)[1].replace("  image", "image", 1)[:0]
    + "dsr1-fp8-b200-sglang:\n  image: x\n",
    "agentic-style-mismatch": MASTER.replace(
        "    fixed-seq-len:\n", "    agentic-coding:\n    - prefill: {num-worker: 1}\n"
        "    fixed-seq-len:\n"),
    "nul": MASTER.replace("image: lmsys", "image: lm\0sys"),
}


@pytest.mark.parametrize("name", sorted(BAD_MASTERS))
def test_bad_master_config_is_a_clean_error(tmp_path: Path, name: str) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "b200-master.yaml").write_text(BAD_MASTERS[name])
    (tmp_path / "configs" / "runners.yaml").write_text(RUNNERS)
    codes: dict[str, int] = {}
    for args in (["sweep", "full"],
                 ["sweep", "test-config", "--config-keys", "dsr1-*"],
                 ["config", "validate", "--format", "json"]):
        r = ixtool(*args, cwd=tmp_path)
        r.assert_clean_exit()  # never a traceback; exit 2 always has a message
        codes[args[1]] = r.code
    # the validator reports an error for every one of them, with a line; generation
    # either refuses cleanly or (tp 0, ep -3) mirrors the reference's lax output
    assert codes["validate"] == 1, codes
    errors = [f for f in r.json()["findings"] if f["severity"] == "error"]
    assert errors and all(f["rule"].startswith("SW") for f in errors)


def test_valid_master_still_generates(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "b200-master.yaml").write_text(MASTER)
    (tmp_path / "configs" / "runners.yaml").write_text(RUNNERS)
    r = ixtool("sweep", "full", cwd=tmp_path)
    r.assert_clean_exit()
    assert r.code == 0 and len(json.loads(r.out)) == 3  # conc 4, 8, 16
