"""``ixtool changelog validate`` as a user meets it: exit codes, errors without tracebacks,
GitHub event/env defaults, --repo, merge-base diffs (G4), output plumbing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.changelog.casedata import CASES_DIR, LABEL, MASTER_FILE, huge
from tests.changelog.clihelp import ixtool
from tests.conftest import GIT_ENV, TempRepo

BASE = (CASES_DIR / "pr-append-xxx-ok" / "base.yaml").read_bytes()
R = "https://github.com/SemiAnalysisAI/InferenceX/pull/"


def entry(key: str, link: str, desc: str = "Add it") -> bytes:
    return (f"- config-keys:\n    - {key}\n  description:\n    - \"{desc}\"\n"
            f"  pr-link: {link}\n").encode()


NEW = entry("dsr1-fp4-b200-sglang", "XXX")


def setup_repo(repo: TempRepo, head: bytes | None = None) -> None:
    repo.write("configs/nvidia-master.yaml", MASTER_FILE.read_bytes())
    repo.write(LABEL, BASE)
    repo.commit("base")
    repo.git("checkout", "-q", "-b", "pr")
    if head is not None:
        repo.write(LABEL, head)


def run_json(cwd: Path, *args: str, env: dict[str, str] | None = None
             ) -> tuple[int, dict[str, object], str]:
    p = ixtool(cwd, "changelog", "validate", *args, "--format", "json", env=env)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout) if p.stdout else {}, p.stderr


def rules_of(doc: dict[str, object]) -> list[str]:
    findings = doc["findings"]
    assert isinstance(findings, list)
    return [f["rule"] for f in findings]


# --------------------------------------------------------------------------- exit codes


def test_exit_0_standalone_on_the_real_corpus(corpus: Path) -> None:
    code, doc, _ = run_json(corpus)
    assert code == 0 and doc["ok"] is True
    info = doc["info"]
    assert isinstance(info, dict)
    assert {k: info[k] for k in ("mode", "repo", "entries")} == {
        "mode": "standalone", "repo": "SemiAnalysisAI/InferenceX", "entries": 772}
    # history's quirks are counted, not listed (test_cli_promises: the standalone default)
    assert sum(info["history_quirks"].values()) > 0
    summary = doc["summary"]
    assert summary == {"errors": 0, "warnings": 0, "notes": 0}


def test_exit_1_on_findings_and_strict_on_warnings(temp_repo: TempRepo) -> None:
    setup_repo(temp_repo, BASE + b"\n" + entry("dsr1-fp4-b200-sglang", "TBD"))
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12")
    assert code == 1 and rules_of(doc) == ["CL502"]
    temp_repo.write(LABEL, BASE + b"\n" + NEW.replace(b"Add it\"", b"Add it\"  "))
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12")
    assert code == 0 and rules_of(doc) == ["CL301"]
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12", "--strict")
    assert code == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--base", "no-such-ref"], "unknown git ref 'no-such-ref'"),
        (["--base", "main", "--head", "nope"], "unknown git ref 'nope'"),
        (["missing.yaml"], "missing.yaml: no such file"),
        (["configs"], "configs: is a directory"),
        (["--head", "main"], "--head needs --base"),
        (["--repo", "not a slug"], "invalid repository slug"),
        (["--base", "main", "--head", "main", "other.yaml"], "other.yaml does not exist at main"),
    ],
)
def test_exit_2_user_errors_without_traceback(temp_repo: TempRepo, args: list[str],
                                              message: str) -> None:
    setup_repo(temp_repo, BASE + b"\n" + NEW)
    p = ixtool(temp_repo.path, "changelog", "validate", *args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stdout == ""
    first = p.stderr.splitlines()[0]
    assert first.startswith("ixtool: error: ") and message in first, p.stderr
    assert "Traceback" not in p.stderr


def test_usage_error_from_typer_is_exit_2(temp_repo: TempRepo) -> None:
    setup_repo(temp_repo)
    p = ixtool(temp_repo.path, "changelog", "validate", "--pr", "abc")
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_not_a_repository(tmp_path: Path) -> None:
    (tmp_path / LABEL).write_bytes(BASE)
    p = ixtool(tmp_path, "changelog", "validate", "--base", "main")
    assert p.returncode == 2
    assert p.stderr.startswith("ixtool: error: ") and "not inside a git repository" in p.stderr
    assert "hint: drop --base/--pr" in p.stderr and "Traceback" not in p.stderr
    # standalone needs no git at all
    assert ixtool(tmp_path, "changelog", "validate").returncode == 0


def test_traceback_flag_shows_one(temp_repo: TempRepo) -> None:
    setup_repo(temp_repo)
    p = ixtool(temp_repo.path, "--traceback", "changelog", "validate", "missing.yaml")
    assert p.returncode == 2
    assert "Traceback (most recent call last)" in p.stderr and "InputError" in p.stderr
    assert "ixtool: error: missing.yaml: no such file" in p.stderr


def test_shallow_clone_is_explained(temp_repo: TempRepo, tmp_path: Path) -> None:
    setup_repo(temp_repo)
    temp_repo.commit("pr work 1")
    temp_repo.git("checkout", "-q", "main")
    temp_repo.write("other", "x\n")
    temp_repo.commit("main moves on")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--no-single-branch",
                    f"file://{temp_repo.path}", str(clone)], env=GIT_ENV, check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "pr"], env=GIT_ENV, check=True)
    p = ixtool(clone, "changelog", "validate", "--base", "origin/main")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "shallow" in p.stderr and "fetch-depth: 0" in p.stderr


def test_50mb_file_is_a_clean_error(temp_repo: TempRepo) -> None:
    setup_repo(temp_repo, huge(BASE))
    for args in (["--base", "main"], []):
        p = ixtool(temp_repo.path, "changelog", "validate", *args)
        assert p.returncode == 2, p.stderr
        assert "over the 32 MiB limit" in p.stderr and "Traceback" not in p.stderr


def test_50mb_blob_at_a_ref_is_a_clean_error(temp_repo: TempRepo) -> None:
    setup_repo(temp_repo, huge(BASE))
    temp_repo.commit("huge")
    p = ixtool(temp_repo.path, "changelog", "validate", "--base", "main", "--head", "pr")
    assert p.returncode == 2 and "over the 32 MiB limit" in p.stderr
    assert "Traceback" not in p.stderr


# ------------------------------------------------------------------- GitHub defaults


def test_pr_number_and_base_from_the_pull_request_event(temp_repo: TempRepo,
                                                       tmp_path: Path) -> None:
    setup_repo(temp_repo, BASE + b"\n" + entry("dsr1-fp4-b200-sglang", R + "12"))
    main_sha = temp_repo.git("rev-parse", "main").strip()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": 12, "pull_request": {
        "number": 12, "base": {"ref": "main", "sha": main_sha}}}), encoding="utf-8")
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}
    code, doc, _ = run_json(temp_repo.path, env=env)
    assert code == 0, doc
    info = doc["info"]
    assert isinstance(info, dict)
    assert (info["mode"], info["pr"], info["base"], info["new_entries"]) == ("pr", 12,
                                                                            main_sha, [3])
    # the same link is another PR's for PR 13
    event.write_text(json.dumps({"number": 13, "pull_request": {
        "number": 13, "base": {"sha": main_sha}}}), encoding="utf-8")
    code, doc, _ = run_json(temp_repo.path, env=env)
    assert code == 1 and rules_of(doc) == ["CL502"]
    # not a pull_request event: the payload is ignored (local check of the work tree)
    code, doc, _ = run_json(temp_repo.path, env={**env, "GITHUB_EVENT_NAME": "push"})
    assert code == 0 and doc["info"]["mode"] == "local"  # type: ignore[index]
    assert doc["info"]["pr"] is None  # type: ignore[index]
    # an explicit --pr wins over the event
    code, doc, _ = run_json(temp_repo.path, "--pr", "12", env=env)
    assert code == 0 and doc["info"]["pr"] == 12  # type: ignore[index]


def test_unreadable_event_file_is_a_user_error(temp_repo: TempRepo, tmp_path: Path) -> None:
    setup_repo(temp_repo)
    p = ixtool(temp_repo.path, "changelog", "validate", env={
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(tmp_path / "nope.json")})
    assert p.returncode == 2 and "cannot read $GITHUB_EVENT_PATH" in p.stderr
    assert "Traceback" not in p.stderr


def test_repo_option_is_used_by_the_link_pattern(temp_repo: TempRepo) -> None:
    fork_link = entry("dsr1-fp4-b200-sglang", "https://github.com/acme/bench/pull/12")
    setup_repo(temp_repo, BASE + b"\n" + fork_link)
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12")
    # default: SemiAnalysisAI/InferenceX; another repository's link is CL501 in PR mode
    # as in main mode below (one rule per mistake, issue 31)
    assert code == 1 and rules_of(doc) == ["CL501"]
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12", "--repo",
                            "acme/bench")
    assert code == 0 and doc["info"]["repo"] == "acme/bench"  # type: ignore[index]
    # main mode: canonical means canonical *for this repo*
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--repo", "acme/bench")
    assert code == 0
    code, doc, _ = run_json(temp_repo.path, "--base", "main")
    assert code == 1 and rules_of(doc) == ["CL501"]


def test_default_repo_from_git_remote_and_env(temp_repo: TempRepo) -> None:
    setup_repo(temp_repo, BASE + b"\n" + entry("dsr1-fp4-b200-sglang",
                                               "https://github.com/acme/bench/pull/12"))
    temp_repo.git("remote", "add", "origin", "git@github.com:acme/bench.git")
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12")
    assert code == 0 and doc["info"]["repo"] == "acme/bench"  # type: ignore[index]
    temp_repo.git("remote", "add", "upstream", "https://github.com/acme/upstream.git")
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12")
    assert code == 1 and doc["info"]["repo"] == "acme/upstream"  # type: ignore[index]
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12",
                            env={"GITHUB_REPOSITORY": "acme/bench"})
    assert code == 0 and doc["info"]["repo"] == "acme/bench"  # type: ignore[index]


# --------------------------------------------------------------------- G4: merge-base


def test_branch_behind_main_compares_against_the_merge_base(temp_repo: TempRepo) -> None:
    """main gained an entry after the branch point; the PR appends its own: clean (G4)."""
    setup_repo(temp_repo, BASE + b"\n" + NEW)
    temp_repo.commit("pr entry")
    temp_repo.git("checkout", "-q", "main")
    temp_repo.write(LABEL, BASE + b"\n" + entry("kimik2-fp4-b200-vllm", R + "11"))
    temp_repo.commit("another PR merged")
    temp_repo.git("checkout", "-q", "pr")
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12")
    assert code == 0, doc
    info = doc["info"]
    assert isinstance(info, dict)
    assert info["merge_base"] == temp_repo.git("merge-base", "main", "pr").strip()
    assert info["merge_base"] != temp_repo.git("rev-parse", "main").strip()
    # the same via refs only
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--head", "pr", "--pr", "12")
    assert code == 0, doc


def test_configs_come_from_the_head_ref(temp_repo: TempRepo) -> None:
    """--head REF resolves config keys against REF's master configs, not the work tree."""
    setup_repo(temp_repo, BASE + b"\n" + entry("brand-new-key", "XXX"))
    temp_repo.write("configs/nvidia-master.yaml",
                    MASTER_FILE.read_bytes() + b"brand-new-key:\n  image: x\n")
    temp_repo.commit("pr adds key and entry")
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--head", "pr", "--pr", "12")
    assert code == 0, doc
    shutil.rmtree(temp_repo.path / "configs")  # the work tree no longer has configs
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--head", "pr", "--pr", "12")
    assert code == 0, doc
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12")
    assert code == 0 and rules_of(doc) == ["CL603"]  # work-tree head, no configs: warning


# ------------------------------------------------------------------------- plumbing


def test_github_format_and_step_summary(temp_repo: TempRepo, tmp_path: Path) -> None:
    setup_repo(temp_repo, BASE + b"\n" + entry("dsr1-fp4-b200-sglang", "TBD"))
    summary = tmp_path / "summary.md"
    p = ixtool(temp_repo.path, "changelog", "validate", "--base", "main", "--pr", "12",
               "--format", "github", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert lines[0].startswith(f"::error file={LABEL},line=18,col=3,title=CL502::entry 3 ")
    assert lines[-1] == "changelog validate: 1 error, 0 warnings (CL502)"
    md = summary.read_text(encoding="utf-8")
    assert md.startswith("### ❌ `ixtool changelog validate`: 1 error, 0 warnings (CL502)\n")
    assert f"| error | `CL502` | `{LABEL}:18:3` |" in md


def test_text_output_shows_the_offending_line(temp_repo: TempRepo) -> None:
    setup_repo(temp_repo, BASE + b"\n" + entry("dsr1-fp4-b200-sglang", "TBD"))
    p = ixtool(temp_repo.path, "changelog", "validate", "--base", "main", "--pr", "12")
    assert p.returncode == 1
    assert p.stdout.splitlines()[:3] == [
        f"{LABEL}:18:3: error [CL502] entry 3 [dsr1-fp4-b200-sglang] (TBD): pr-link 'TBD' is a "
        f"placeholder ixtool cannot replace at merge; expected 'XXX' or {R}12",
        "       18 |   pr-link: TBD",
        "          |   ^",
    ]
    assert p.stdout.endswith(
        f"changelog validate: FAILED: 1 error, 0 warnings (CL502) in {LABEL} "
        "(main..working tree)\n")


def test_help_is_informative() -> None:
    p = ixtool(Path("."), "changelog", "validate", "--help")
    assert p.returncode == 0
    for word in ("standalone", "--base", "--head", "--pr", "--repo", "--configs", "--fix",
                 "--strict", "--format", "Exit codes"):
        assert word in p.stdout, word


def test_configs_option_overrides_the_master_configs(temp_repo: TempRepo, tmp_path: Path) -> None:
    setup_repo(temp_repo, BASE + b"\n" + entry("custom-key", "XXX"))
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12")
    assert code == 1 and rules_of(doc) == ["CL601"]
    extra = tmp_path / "extra-master.yaml"
    extra.write_text("custom-key:\n  image: x\n", encoding="utf-8")
    code, doc, _ = run_json(temp_repo.path, "--base", "main", "--pr", "12", "--configs",
                            str(extra))
    assert code == 0, doc
    p = ixtool(temp_repo.path, "changelog", "validate", "--base", "main", "--configs",
               str(tmp_path / "missing.yaml"))
    assert p.returncode == 2 and "no such file" in p.stderr and "Traceback" not in p.stderr
