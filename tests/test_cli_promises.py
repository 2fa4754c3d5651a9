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


@pytest.mark.parametrize("read", [10, 100_000])
def test_a_pipe_closed_mid_output_is_141(read: int, tmp_path: Path) -> None:
    """``ixtool sweep full | head -c N`` (issue 31): the reader leaves after N bytes of a
    1 MB write.  A partial write used to be taken as the whole (Python's buffered stdout
    returns the bytes written before EPIPE and the text layer drops the rest): exit 0."""
    from tests.conftest import extract_real_tree

    root = extract_real_tree(tmp_path)
    p = subprocess.Popen([sys.executable, "-m", "inferencex_tools", "sweep", "full"],
                         cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=cli_env())
    assert p.stdout is not None and p.stderr is not None
    got = p.stdout.read(read)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert len(got) == read
    assert p.wait() == EXIT_BROKEN_PIPE == 141, err
    assert err == "", err


# ------------------------------------- 9: the help's examples work here, hints name keys

@pytest.fixture(scope="module")
def own_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project's repository as a clone has it: its tracked files committed, with
    ``origin/main`` at that commit (the tests and the package left out: ``python -m``
    in it must run the code under test, not a copy of the last commit's)."""
    import shutil

    from tests.conftest import git

    dest = tmp_path_factory.mktemp("own") / "ixtool"
    files = git(ROOT, "ls-files", "-z").split("\0")
    for rel in files:
        if rel and not rel.startswith(("tests/", "inferencex_tools/")) \
                and (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    repo = TempRepo(dest)
    repo.commit("ixtool")
    repo.git("update-ref", "refs/remotes/origin/main", "HEAD")
    return dest


def _root_examples(capsys: pytest.CaptureFixture[str]) -> list[list[str]]:
    code, out, _ = _run(["--help"], capsys)
    assert code == 0
    lines = out.split("Examples:", 1)[1].splitlines()
    examples = [ln.split()[1:] for ln in lines if ln.strip().startswith("ixtool ")]
    assert len(examples) >= 3, out
    return examples


def test_root_help_examples_work_in_this_repository(own_repo: Path,
                                                    capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    for args in _root_examples(capsys):
        p = ixtool(own_repo, *args)
        assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr)
        assert "ixtool: error" not in p.stderr, (args, p.stderr)


@pytest.mark.parametrize("wrong", ["dsr1-fp8-h200-sglang", "qqqqqqqq"])
def test_unknown_key_hint_names_the_closest_keys(own_repo: Path, wrong: str) -> None:
    """Nothing is close: the hint still names the keys that are nearest (never none)."""
    from inferencex_tools.sweep.load import load_masters

    p = ixtool(own_repo, "sweep", "explain", wrong)
    assert p.returncode == 2
    hint = next(ln for ln in p.stderr.splitlines() if ln.startswith("ixtool: hint:"))
    keys = load_masters(sorted((own_repo / "configs").glob("*-master.yaml"))).keys
    named = [k for k in keys if f"'{k}'" in hint]
    assert named, hint


# ---------------------------------------------- 14: baseline counts = the summary's

def test_baseline_count_agrees_with_the_summary(real_tree: Path, tmp_path: Path) -> None:
    """config validate on the real tree has notes (SW407): the summary counts them, so
    "N recorded in baseline" is the summary's total."""
    import re

    p = ixtool(real_tree, "config", "validate")
    last = p.stdout.splitlines()[-1]
    m = re.search(r"(\d+) errors?, (\d+) warnings?(?:, (\d+) notes?)?", last)
    assert m and m.group(3), last  # the real tree has notes: they are in the count
    shown = sum(int(g or 0) for g in m.groups())
    doc = json.loads(ixtool(real_tree, "config", "validate", "--format", "json").stdout)
    assert shown == sum(doc["summary"].values()) == len(doc["findings"])
    p = ixtool(real_tree, "config", "validate", "--write-baseline",
               "--baseline", str(tmp_path / "baseline.json"))
    recorded = re.search(r"(\d+) recorded in baseline", p.stdout)
    assert recorded and int(recorded.group(1)) == shown, (last, p.stdout[-300:])


# -------------------------------------- 8: standalone and history nobody can act on

def test_standalone_counts_history_quirks_without_listing_or_failing(corpus: Path) -> None:
    """The real changelog outside git: its quirks (immutable history) are one count on
    the summary line, never a wall of warnings, and --strict does not fail on them."""
    for strict in ([], ["--strict"]):
        p = ixtool(corpus, "changelog", "validate", *strict)
        assert p.returncode == 0, p.stdout[-500:]
        assert p.stdout.count("\n") == 1, p.stdout[:2000]  # the summary line alone
        assert "warning" not in p.stdout.replace("0 warnings", "")
        assert "history quirks not listed" in p.stdout and "--history" in p.stdout
    listed = ixtool(corpus, "changelog", "validate", "--history", "--strict",
                    "--format", "json")
    doc = json.loads(listed.stdout)
    assert listed.returncode == 0 and doc["ok"] is True
    assert doc["summary"]["warnings"] == 0 and doc["summary"]["notes"] > 50
    assert {f["severity"] for f in doc["findings"]} == {"note"}


def test_standalone_still_fails_on_what_is_broken(tmp_path: Path) -> None:
    """Folding covers history's quirks only: a schema error still fails."""
    (tmp_path / "perf-changelog.yaml").write_text(
        "- config-keys: [a]\n  description: []\n"
        "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1   \n")
    p = ixtool(tmp_path, "changelog", "validate")
    assert p.returncode == 1 and "CL201" in p.stdout and "1 history quirk not listed" in p.stdout


# ------------------------------------------------------------- 10: progress in logs

class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_progress_in_a_log_is_periodic_lines() -> None:
    """stderr not a terminal: a line after log_first seconds, then one per log_every,
    however often the work ticks (here 10 ticks a second for five minutes)."""
    import io

    from inferencex_tools.cli.progress import ProgressLine

    clock, log = _Clock(), io.StringIO()
    line = ProgressLine("policy check", stream=log, mode="log", clock=clock)
    line(0, 3000, "script traces")
    for done in range(1, 3001):
        clock.now += 0.1
        line(done, 3000, "script traces")
    lines = log.getvalue().splitlines()
    assert 9 <= len(lines) <= 11, lines  # 10 s, then every 30 s of 300 s
    assert lines[0].startswith("policy check: 100/3000 script traces, 10.0/s, ~4m50s left")
    assert all("\r" not in ln and "\x1b" not in ln for ln in lines)


def test_progress_on_a_terminal_rate_is_sane_from_the_first_tick() -> None:
    """The first trace ends a few milliseconds after the phase starts: no absurd rate
    (the issue saw 1582279.3/s), and a rate measured from the phase's start after."""
    import io
    import re

    from inferencex_tools.cli.progress import ProgressLine

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    clock, tty = _Clock(), Tty()
    line = ProgressLine("policy check", stream=tty, mode="line", clock=clock)
    clock.now += 5.0  # reading configs, deriving jobs: not part of the rate
    line(0, 40, "launcher traces")
    clock.now += 0.000001
    line(1, 40, "launcher traces")
    for done in range(2, 41):
        clock.now += 0.5
        line(done, 40, "launcher traces")
    rates = [float(r) for r in re.findall(r"([\d.]+)/s", tty.getvalue())]
    assert rates and max(rates) <= 4.0, rates  # 2 traces in 0.5 s at worst
    assert rates[-1] == 2.1, rates  # 40 in 19.5 s


def test_policy_check_reports_phases_whose_totals_do_not_jump(own_repo: Path) -> None:
    from inferencex_tools.policy.service import CheckRequest, run_check

    calls: list[tuple[int, int | None, str]] = []
    run_check(CheckRequest(root=own_repo, allow_unsandboxed=True,
                           progress=lambda d, t, w="": calls.append((d, t, w))))
    phases: dict[str, list[tuple[int, int | None]]] = {}
    for done, total, what in calls:
        phases.setdefault(what, []).append((done, total))
    assert "launcher traces" in phases and "script traces" in phases, calls
    for what, seen in phases.items():
        assert seen[0][0] == 0, (what, seen)  # each phase announces itself
        assert len({t for _, t in seen}) == 1, (what, seen)  # one total per phase
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)
        assert seen[-1][0] == seen[-1][1], (what, seen)


def test_policy_check_prints_progress_lines_to_a_log(own_repo: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    from inferencex_tools.cli.progress import ProgressLine

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(ProgressLine, "log_first", 0.0)
    monkeypatch.setattr(ProgressLine, "log_every", 0.0)
    code, _, err = _run(["policy", "check", "--root", str(own_repo),
                         "--allow-unsandboxed"], capsys)
    assert code == 0, err
    assert "policy check: 0/" in err and "launcher traces" in err, err
    code, _, err = _run(["policy", "check", "--root", str(own_repo), "--allow-unsandboxed",
                         "-q"], capsys)
    assert code == 0 and "traces" not in err, err


def test_a_quiet_step_still_beats_in_a_log() -> None:
    """One long step without counts (a whole gate stage, the base's configs): the log
    gets a line after log_first seconds and then one per log_every while it lasts."""
    import io

    from inferencex_tools.cli.progress import ProgressLine

    clock, log = _Clock(), io.StringIO()
    line = ProgressLine("config validate", stream=log, mode="log", clock=clock)
    line(0, None, "the merge-base of origin/main and HEAD")
    for _ in range(95):  # 95 s, a beat a second
        clock.now += 1.0
        line.beat()
    lines = log.getvalue().splitlines()
    assert lines == ["config validate: the merge-base of origin/main and HEAD (10s in this step)",
                     "config validate: the merge-base of origin/main and HEAD (40s in this step)",
                     "config validate: the merge-base of origin/main and HEAD (1m10s in this "
                     "step)"], lines


@pytest.mark.parametrize(("argv", "steps"), [
    (["config", "validate", "--base", "main"], ["the working tree", "the merge-base of main"]),
    (["review", "--base", "main"], ["changelog", "the gate"]),
])
def test_long_commands_say_where_they_are_in_a_log(
        own_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], argv: list[str], steps: list[str]) -> None:
    """config validate --base and review (each can take more than 5 s) print their steps
    to a log as policy check does; nothing under -q (they used to print nothing, or two
    lines whatever -q said)."""
    import shutil

    from inferencex_tools.cli.progress import ProgressLine
    from tests.conftest import git

    root = tmp_path / "repo"
    shutil.copytree(own_repo, root)
    git(root, "checkout", "-q", "-b", "pr")
    with (root / "configs" / "nvidia-master.yaml").open("a") as fh:
        fh.write("# reviewed\n")
    git(root, "commit", "-qam", "touch a config")
    monkeypatch.chdir(root)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(ProgressLine, "log_first", 0.0)
    monkeypatch.setattr(ProgressLine, "log_every", 0.0)
    label = argv[0] if argv[0] == "review" else " ".join(argv[:2])
    _code, _out, err = _run(argv, capsys)
    for step in steps:
        assert f"{label}: {step}" in err, err
    _code, _out, err = _run([*argv, "-q"], capsys)
    assert f"{label}:" not in err, err


# ------------------------------------------------------------- 11: completion of names

def _complete(cwd: Path, line: str) -> list[str]:
    """What bash completion offers for the last word of ``line`` (click's protocol)."""
    words = line.split(" ")
    p = subprocess.run([sys.executable, "-m", "inferencex_tools"], cwd=cwd,
                       capture_output=True, text=True, timeout=60,
                       env=cli_env({"_IXTOOL_COMPLETE": "complete_bash",
                                    "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)}))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return p.stdout.split()


@pytest.mark.parametrize(("line", "expected"), [
    ("ixtool sweep explain minimaxm3-fp8-h200-vllm-agentic-",
     ["minimaxm3-fp8-h200-vllm-agentic-mtp"]),
    ("ixtool sweep explain ", ["minimaxm3-fp8-h200-vllm-agentic",
                               "minimaxm3-fp8-h200-vllm-agentic-mtp"]),
    ("ixtool policy check --config-keys minimaxm3-fp8-h200-vllm-agentic minimaxm3-fp8-h200-v",
     ["minimaxm3-fp8-h200-vllm-agentic", "minimaxm3-fp8-h200-vllm-agentic-mtp"]),
    ("ixtool launch render --config-key minimaxm3-fp8-h200-vllm-agentic-",
     ["minimaxm3-fp8-h200-vllm-agentic-mtp"]),
    ("ixtool changelog add -k minimaxm3-fp8-h200-vllm-agentic-",
     ["minimaxm3-fp8-h200-vllm-agentic-mtp"]),
    ("ixtool sweep full --runner-type clu", ["cluster:h200-dgxc"]),
    ("ixtool ci gate --allow-runner clu", ["cluster:h200-dgxc"]),
    ("ixtool launch render --runner h200-dgxc-slurm_", ["h200-dgxc-slurm_0", "h200-dgxc-slurm_1",
                                                        "h200-dgxc-slurm_2", "h200-dgxc-slurm_3"]),
    ("ixtool labels explain full-sweep-fail-fast",
     ["full-sweep-fail-fast", "full-sweep-fail-fast-no-canary"]),
    ("ixtool ci gate --label sweep-en", ["sweep-enabled"]),
    ("ixtool rules CL50", ["CL501", "CL502", "CL503"]),
    ("ixtool rules cl50", ["cl501", "cl502", "cl503"]),
    ("ixtool rules --area chan", ["changelog"]),
])
def test_completion_of_keys_labels_and_rule_ids(own_repo: Path, line: str,
                                                expected: list[str]) -> None:
    assert _complete(own_repo, line) == expected


def test_completion_reads_the_repository_lazily(real_tree: Path) -> None:
    """A <TAB> reads the master configs' top-level names by a line scan: no YAML parser
    is imported, and it finds every key a full load finds."""
    code = ("import sys\nfrom inferencex_tools.cli import complete\n"
            "keys = complete.config_keys(None, '')\n"
            "print(len(keys), 'ruamel' in sys.modules, 'yaml' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], cwd=real_tree, capture_output=True,
                       text=True, check=True, env=cli_env())
    count, ruamel, yaml = p.stdout.split()
    from inferencex_tools.sweep.load import load_masters

    full = load_masters(sorted((real_tree / "configs").glob("*-master.yaml"))).keys
    assert int(count) == len(set(full)) > 100
    assert ruamel == yaml == "False"


# ------------------------------------------------- 12: the pre-commit hooks, for real

def _manifest() -> list[dict[str, object]]:
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert isinstance(hooks, list)
    return hooks


def test_pre_commit_usage_names_the_real_repository() -> None:
    """The manifest's and docs' `repo:` is ixtool's repository (the one action.yml's
    `uses:` names), not a placeholder."""
    import re

    slug = re.search(r"uses: ([\w.-]+/[\w.-]+)@", (ROOT / "action.yml").read_text())
    assert slug, "action.yml names its repository in its usage comment"
    for path in (ROOT / ".pre-commit-hooks.yaml", ROOT / "docs" / "ci.md"):
        repos = re.findall(r"- repo: (\S+)", path.read_text(encoding="utf-8"))
        assert f"https://github.com/{slug.group(1)}" in repos, (path, repos)
        assert not [r for r in repos if "<" in r or "owner" in r.lower()], (path, repos)


def test_policy_hook_checks_only_what_the_commit_changes(real_tree: Path,
                                                        tmp_path: Path) -> None:
    """The hook's entry on the real tree with one staged recipe change: only the rows
    that run that script are traced (the whole check traces every spec-decoding row)."""
    from tests.conftest import clone_real_tree, git

    entry = next(h["entry"] for h in _manifest() if h["id"] == "ixtool-policy-check")
    assert isinstance(entry, str)
    root = clone_real_tree(real_tree, tmp_path / "tree")
    script = "benchmarks/single_node/fixed_seq_len/dsr1_fp4_b200_mtp.sh"
    with (root / script).open("a") as fh:
        fh.write("export IX_TOUCHED=1\n")  # a comment alone reaches no trace
    git(root, "add", "-A")
    p = ixtool(root, *entry.split()[1:], script, "--format", "json")  # pre-commit's call
    assert p.returncode == 0, p.stderr
    assert "what the commit changes against HEAD" in p.stderr
    info = json.loads(p.stdout)["info"]
    assert info["base"]["changed-files"] == [script]
    keys = set(info["base"]["traced-keys"])
    assert keys and all(k.startswith("dsr1-fp4-b200") for k in keys), keys
    assert info["traces"] < 60, info["traces"]


def test_policy_hook_on_a_first_commit_checks_everything(own_repo: Path,
                                                        tmp_path: Path) -> None:
    """Before the first commit HEAD has nothing: every recipe is new (not exit 2)."""
    import shutil

    from tests.conftest import git

    fresh = tmp_path / "fresh"
    shutil.copytree(own_repo, fresh, ignore=shutil.ignore_patterns(".git"))
    git(fresh, "init", "-q", "-b", "main")
    git(fresh, "add", "-A")
    entry = next(h["entry"] for h in _manifest() if h["id"] == "ixtool-policy-check")
    assert isinstance(entry, str)
    p = ixtool(fresh, *entry.split()[1:], "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert "base" not in doc["info"] and doc["info"]["traces"] > 0
    assert "every file (the repository's first commit)" in p.stderr


# ------------------------------------------------------- 13: ci gate says why it skipped

@pytest.mark.parametrize(("labels", "matrix_why"), [
    ([], "no primary sweep label"),
    (["--label", "sweep-enabled"], "perf-changelog.yaml is unchanged"),
])
def test_ci_gate_says_why_a_stage_was_skipped(own_repo: Path, tmp_path: Path,
                                             labels: list[str], matrix_why: str) -> None:
    import shutil

    from tests.conftest import git

    root = tmp_path / "repo"
    shutil.copytree(own_repo, root)
    git(root, "checkout", "-q", "-b", "pr")
    script = next((root / "benchmarks").rglob("*.sh"))
    with script.open("a") as fh:
        fh.write("# a comment\n")
    git(root, "commit", "-qam", "touch a script")
    p = ixtool(root, "ci", "gate", "--base", "main", "--no-policy", *labels)
    stages = next(ln for ln in p.stdout.splitlines() if ln.startswith("stages:"))
    assert "policy skipped (--no-policy)" in stages, stages
    assert f"matrix skipped ({matrix_why}" in stages, stages
    doc = json.loads(ixtool(root, "ci", "gate", "--base", "main", "--no-policy", *labels,
                            "--format", "json").stdout)
    assert doc["info"]["skipped"]["matrix"].startswith(matrix_why)


# ---------------------------------- 13: launch render follows a multi-node launcher

def test_launch_render_multinode_shows_what_the_launcher_submits(real_tree: Path) -> None:
    """The real gb300 launcher, traced with the row's workflow environment, reaches
    `srtctl apply -f recipes/…`: the render says so and names the vendored recipe."""
    p = ixtool(real_tree, "launch", "render", "--config-key",
               "qwen3.5-fp4-gb300-dynamo-trt-mtp", "--arm", "1", "--conc", "48")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr
    assert "(unresolved)" not in p.stdout
    submits = next(ln for ln in p.stdout.splitlines() if ln.startswith("submits "))
    assert "srtctl apply -f recipes/" in submits, submits
    recipe = next(ln for ln in p.stdout.splitlines() if ln.startswith("recipe "))
    assert (real_tree / recipe.split()[1]).is_file(), recipe
    doc = json.loads(ixtool(real_tree, "launch", "render", "--config-key",
                            "qwen3.5-fp4-gb300-dynamo-trt-mtp", "--arm", "1", "--conc", "48",
                            "--format", "json").stdout)
    job = doc["info"]["jobs"][0]
    assert job["submission"].startswith("srtctl apply -f ")
    assert job["recipe"] == recipe.split()[1]


def test_launch_render_multinode_unreached_submission_is_a_warning(real_tree: Path) -> None:
    """The gb200 launcher reads its recipes from a clone made at run time: the trace ends
    before the submission, and the render says so (a warning naming the clone), not
    "script (unresolved)" and a clean summary."""
    p = ixtool(real_tree, "launch", "render", "--config-key", "dsr1-fp4-gb200-dynamo-trt",
               "--arm", "1", "--conc", "48")
    assert p.returncode == 0 and "(unresolved)" not in p.stdout
    assert "warning [LA206]" in p.stdout and "clones https://github.com/" in p.stdout
    assert "launch render: ok: 0 errors, 1 warning" in p.stdout
    assert ixtool(real_tree, "launch", "render", "--config-key", "dsr1-fp4-gb200-dynamo-trt",
                  "--arm", "1", "--conc", "48", "--strict").returncode == 1


# ------------------------------------------------- 16: start-up of -V and --help

def _imports(*args: str, env: dict[str, str] | None = None) -> tuple[str, list[str]]:
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "inferencex_tools", *args],
                       capture_output=True, text=True, check=True,
                       env=cli_env({"COLUMNS": "80", **(env or {})}))
    mods = [ln.split("|")[-1].strip() for ln in p.stderr.splitlines()
            if ln.startswith("import time:") and not ln.endswith("package")]
    return p.stdout, mods


@pytest.mark.parametrize("args", [["-V"], ["--version"], ["--help"], ["-h"],
                                  ["sweep", "full", "--help"], ["policy", "check", "-h"],
                                  ["sweep", "--help"]])
def test_version_and_help_import_no_cli_framework(args: list[str]) -> None:
    """`ixtool -V` / `--help` answer from constants: no Typer, no command module (the
    slow part of start-up: `benchmarks/startup.py` measures the whole process)."""
    out, mods = _imports(*args)
    assert out.startswith(("ixtool ", "Usage: ixtool")), out
    heavy = [m for m in mods if m.split(".")[0] in ("typer", "click", "ruamel", "git",
                                                     "github", "jsonschema", "json")
             or m.startswith("inferencex_tools.cli.main")]
    assert heavy == [], heavy
    assert len([m for m in mods if m.startswith("inferencex_tools")]) <= 4, mods


def test_fast_help_is_the_cli_help() -> None:
    """The stored root help is what the full CLI prints (80 columns); narrower output
    takes the full path."""
    from inferencex_tools.cli import roothelp

    assert roothelp.render() == roothelp.TEXT, "stale: python -m inferencex_tools.cli.roothelp"
    paths = roothelp.command_paths()
    assert sorted(roothelp.COMMANDS) == sorted(paths), "stale: python -m …cli.roothelp"
    for path in paths:
        assert roothelp.render(path) == roothelp.COMMANDS[path], (
            f"ixtool {path} --help is stale: python -m inferencex_tools.cli.roothelp")
    fast, _ = _imports("--help")
    assert fast == roothelp.TEXT
    narrow, mods = _imports("--help", env={"COLUMNS": "60"})
    assert "typer" in {m.split(".")[0] for m in mods}  # the full path
    assert narrow != fast and narrow.startswith("Usage: ixtool")


@pytest.mark.slow
def test_startup_benchmark_within_four_times_python() -> None:
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "startup.py"),
                        "--rounds", "10"], capture_output=True, text=True, env=cli_env())
    assert p.returncode == 0, p.stdout + p.stderr


def test_ci_gate_policy_stage_prints_progress_to_a_log(own_repo: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """The gate runs the policy check in CI, where stderr is a log: it says how far."""
    import shutil

    from inferencex_tools.cli.progress import ProgressLine
    from tests.conftest import git

    root = tmp_path / "repo"
    shutil.copytree(own_repo, root)
    git(root, "checkout", "-q", "-b", "pr")
    script = next(p for p in (root / "benchmarks").rglob("*mtp*.sh"))
    with script.open("a") as fh:
        fh.write("export IX_TOUCHED=1\n")  # a comment alone reaches no trace
    git(root, "commit", "-qam", "touch a recipe")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(ProgressLine, "log_first", 0.0)
    monkeypatch.setattr(ProgressLine, "log_every", 0.0)
    _code, out, err = _run(["ci", "gate", "--root", str(root), "--base", "main"], capsys)
    assert "policy ok" in out or "policy 1 finding" in out, out
    assert "ci gate: 0/" in err and "traces" in err, err
    for stage in ("changelog", "configs", "policy"):  # each stage says it started
        assert f"ci gate: {stage} stage" in err, err
