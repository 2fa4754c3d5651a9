"""The forge adapter against the fake (pagination, GHE URL, errors, secrecy) and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.errors import ForgeError, UsageError
from inferencex_tools.io.github import Forge, RetryPolicy, api_url_from_env, token_from_env
from tests.merge.conftest import PRN, SLUG, World, git

ROOT = Path(__file__).resolve().parents[2]


def forge(world: World, *, api: str | None = None, token: str | None = None) -> tuple[
        Forge, list[float]]:
    delays: list[float] = []
    f = Forge(SLUG, token=token or world.fake.token, api_url=api or world.fake.url,
              retry=RetryPolicy(sleep=delays.append), per_page=2, throttle=False)
    return f, delays


def test_pagination_follows_link_headers(world: World) -> None:
    world.open_pr()
    for i in range(5):
        world.fake.add_comment(PRN, f"comment {i}")
    f, _ = forge(world)
    got = f.comments(PRN)
    assert [c.body for c in got] == [f"comment {i}" for i in range(5)]
    assert all(c.association == "MEMBER" and c.created_at.endswith("Z") for c in got)
    pages = [p for m, p, _ in world.fake.log if p.endswith("/issues/7/comments")]
    assert len(pages) == 3, "5 items in pages of 2"


def test_enterprise_base_url(world: World) -> None:
    world.open_pr()
    world.fake.prefix = "/api/v3"
    f, _ = forge(world, api=world.fake.url + "/api/v3")
    p = f.pull(PRN)
    assert p.head_ref == "feat" and p.labels == ("full-sweep-enabled",) and not p.is_fork
    assert [c.sha for c in f.pull_commits(PRN)] == [git(world.bare, "rev-parse", "feat")]
    runs = f.sweep_runs("feat")
    assert [r.id for r in runs] == [1001]
    assert [a.name for a in f.artifacts(1001)] == ["results_bmk", "changelog-metadata"]
    assert f.run(1001).path == ".github/workflows/run-sweep.yml"
    assert world.fake.log and all(p.startswith("/api/v3/") for _, p, _ in world.fake.log)


def test_bad_token_is_a_clear_error_without_the_token(world: World) -> None:
    world.open_pr()
    f, delays = forge(world, token="wrong-SECRET-token")
    with pytest.raises(ForgeError) as ei:
        f.pull(PRN)
    assert "401" in ei.value.message and "bad credentials" in ei.value.message
    assert "wrong-SECRET-token" not in ei.value.message + str(ei.value.hint) + repr(f)
    assert delays == [], "401 is not retried"


def test_5xx_exhausted(world: World) -> None:
    from tests.merge.fake_github import Fault

    world.open_pr()
    world.fake.faults.append(Fault("GET", r".*/pulls/7", 500, times=99))
    f, delays = forge(world)
    with pytest.raises(ForgeError) as ei:
        f.pull(PRN)
    assert "after 5 attempts" in ei.value.message and "HTTP 500" in ei.value.message
    assert delays == [1.0, 2.0, 4.0, 8.0]


def test_not_found_is_not_retried(world: World) -> None:
    world.open_pr()
    f, delays = forge(world)
    with pytest.raises(ForgeError) as ei:
        f.pull(99)
    assert "HTTP 404" in ei.value.message and delays == []


def test_env_configuration() -> None:
    assert token_from_env({"GH_TOKEN": "a"}) == "a"
    assert token_from_env({"GITHUB_TOKEN": "b", "GH_TOKEN": "a"}) == "b"
    with pytest.raises(UsageError):
        token_from_env({})
    assert api_url_from_env(None, {"GITHUB_API_URL": "https://ghe.example/api/v3/"}) == \
        "https://ghe.example/api/v3"
    assert api_url_from_env(None, {}) == "https://api.github.com"
    with pytest.raises(UsageError):
        api_url_from_env("ftp://x", {})


# ----------------------------------------------------------------------------- CLI

def ixtool(world: World, *args: str, token: str | None = None) -> subprocess.CompletedProcess[
        str]:
    env = {**os.environ, "GITHUB_TOKEN": token or world.fake.token,
           "GITHUB_API_URL": world.fake.url, "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("GH_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "inferencex_tools", *args], cwd=world.user,
                          env=env, capture_output=True, text=True, timeout=120)


def run_cli(world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            *args: str, token: bool = True) -> tuple[int, str, str]:
    """ixtool in-process (the console-script entry, exit-code mapping included)."""
    from inferencex_tools.cli.main import run

    monkeypatch.chdir(world.user)
    if token:
        monkeypatch.setenv("GITHUB_TOKEN", world.fake.token)
    monkeypatch.setenv("GITHUB_API_URL", world.fake.url)
    with pytest.raises(SystemExit) as ei:
        run(list(args))
    out, err = capsys.readouterr()
    return int(ei.value.code or 0), out, err


def test_cli_dry_run_changes_nothing_and_lists_calls(
        world: World, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    world.open_pr()
    world.clone_user()
    head = git(world.bare, "rev-parse", "feat")
    refs = git(world.user, "for-each-ref", "refs/heads", "refs/remotes", "refs/tags")
    code, out, err = run_cli(world, monkeypatch, capsys,
                             "merge-with-reuse", str(PRN), "--repo", SLUG, "--dry-run")
    assert code == 0, err
    assert "plan (dry run, nothing was changed):" in out
    assert "POST /repos/acme/bench/issues/7/comments body='/reuse-sweep-run 1001'" in out
    assert "PUT /repos/acme/bench/pulls/7/merge" in out and "git push" in out
    assert "GET /repos/acme/bench/pulls/7" in out
    assert [e for e in world.fake.log if e[0] != "GET"] == []
    assert git(world.bare, "rev-parse", "feat") == head
    assert git(world.user, "status", "--porcelain") == ""
    assert git(world.user, "for-each-ref", "refs/heads", "refs/remotes", "refs/tags") == refs


def test_cli_full_run_with_debug_never_prints_the_token(world: World) -> None:
    world.open_pr()
    world.clone_user()
    p = ixtool(world, "merge-with-reuse", str(PRN), "--repo", SLUG, "--yes", "--poll", "0",
               "--debug")
    assert p.returncode == 0, p.stderr
    assert world.fake.token not in p.stdout + p.stderr
    assert "debug" in p.stderr and "GET /repos/acme/bench/pulls/7" in p.stderr
    sha = world.fake.prs[PRN].merge_commit_sha
    assert f"merge SHA: {sha}" in p.stdout
    # second run: already merged, exit 0, JSON carries the SHA
    again = ixtool(world, "merge-with-reuse", str(PRN), "--repo", SLUG, "--yes",
                   "--format", "json")
    assert again.returncode == 0
    assert json.loads(again.stdout)["info"]["merge_sha"] == sha


def test_cli_refusal_exit_1_and_usage_exit_2(
        world: World, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    world.open_pr(link="TBD")
    world.clone_user()
    code, out, _ = run_cli(world, monkeypatch, capsys,
                           "merge-with-reuse", str(PRN), "--repo", SLUG, "--yes")
    assert code == 1 and "[MR401]" in out and "[CL502]" in out
    # origin is a local path, so the repository cannot be derived: usage error
    code, _, err = run_cli(world, monkeypatch, capsys, "merge-with-reuse", str(PRN), "--yes")
    assert code == 2 and "--repo" in err and "Traceback" not in err


def test_cli_needs_yes_without_a_terminal(
        world: World, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    world.open_pr()
    world.clone_user()
    code, _, err = run_cli(world, monkeypatch, capsys, "merge-with-reuse", str(PRN),
                           "--repo", SLUG)
    assert code == 2 and "--yes" in err
    assert world.fake.reuse_comments(PRN) == []


def test_cli_without_token_is_a_usage_error(
        world: World, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    world.open_pr()
    world.clone_user()
    code, _, err = run_cli(world, monkeypatch, capsys, "merge-with-reuse", str(PRN),
                           "--repo", SLUG, "--yes", token=False)
    assert code == 2 and "GITHUB_TOKEN" in err


def test_help_documents_preconditions_side_effects_exit_codes(
        capsys: pytest.CaptureFixture[str]) -> None:
    from inferencex_tools.cli.main import run

    with pytest.raises(SystemExit) as ei:
        run(["merge-with-reuse", "--help"])
    out = capsys.readouterr().out
    assert ei.value.code == 0
    for word in ("Preconditions", "Side effects", "Exit codes", "--dry-run", "--run-id",
                 "GH_TOKEN"):
        assert word in out


def test_compat_wrapper(world: World) -> None:
    script = ROOT / "utils" / "merge_with_reuse.sh"
    assert len(script.read_text().splitlines()) == 2
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    p = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0 and "merge-with-reuse" in p.stdout
