"""PR numbers and run ids are canonical and bounded wherever merge/ci code reads them
(security issue 18 item 11), and the token never travels over plain http off
loopback (item 9)."""

from __future__ import annotations

import pytest

from inferencex_tools.ci.event import facts_from_payload
from inferencex_tools.ci.ids import MAX_PR_NUMBER, MAX_RUN_ID, is_pr_number, pr_number, run_id
from inferencex_tools.errors import InputError, UsageError
from inferencex_tools.io.github import api_url_from_env
from tests.merge.conftest import PRN, SLUG, World

BAD_NUMBERS = ["0", "007", "-7", "+7", " 7", "7 ", "7_000", "0x7", "７", "1e3", "",
               "9" * 11, "9" * 5000, str(MAX_PR_NUMBER + 1)]


@pytest.mark.parametrize("text", BAD_NUMBERS)
def test_pr_number_must_be_canonical(text: str) -> None:
    assert pr_number(text) is None


def test_pr_number_bounds() -> None:
    assert pr_number("1") == 1 and pr_number(str(MAX_PR_NUMBER)) == MAX_PR_NUMBER
    assert run_id(str(MAX_RUN_ID)) == MAX_RUN_ID and run_id(str(MAX_RUN_ID + 1)) is None
    assert run_id("0123") is None
    assert is_pr_number(7) and not is_pr_number(True) and not is_pr_number(0)
    assert not is_pr_number(MAX_PR_NUMBER + 1) and not is_pr_number(7.0)


def _pr_event(number: object) -> dict[str, object]:
    return {"action": "synchronize",
            "pull_request": {"number": number, "labels": [],
                             "head": {"sha": "a" * 40, "ref": "f", "repo": {"full_name": SLUG}},
                             "base": {"sha": "b" * 40, "ref": "main",
                                      "repo": {"full_name": SLUG}}}}


@pytest.mark.parametrize("number", [0, -1, True, 2**31, 10**4000, "7", 7.0])
def test_ci_event_pr_number_is_checked(number: object) -> None:
    with pytest.raises(InputError):
        facts_from_payload("pull_request", _pr_event(number))


@pytest.mark.parametrize(("ref", "want"), [
    ("refs/heads/gh-readonly-queue/main/pr-42-" + "a" * 40, 42),
    ("refs/heads/gh-readonly-queue/main/pr-0042-" + "a" * 40, None),
    ("refs/heads/gh-readonly-queue/main/pr-0-" + "a" * 40, None),
    ("refs/heads/gh-readonly-queue/main/pr-" + "9" * 5000 + "-" + "a" * 40, None),
])
def test_merge_queue_pr_number_is_canonical(ref: str, want: int | None) -> None:
    """Was int() on the digits: 5,000 digits raised ValueError (a traceback)."""
    facts = facts_from_payload("merge_group", {"merge_group": {
        "head_ref": ref, "base_sha": "b" * 40, "head_sha": "a" * 40}})
    assert facts.pr_number == want


# ----------------------------------------------------------------------------- API URLs

@pytest.mark.parametrize("url", [
    "https://api.github.com", "https://ghe.example/api/v3/", "http://127.0.0.1:8080",
    "http://127.8.9.10/api/v3", "http://localhost:9/", "http://[::1]:7000"])
def test_api_url_accepted(url: str) -> None:
    assert api_url_from_env(url, {}) == url.rstrip("/")


@pytest.mark.parametrize("url", [
    "http://api.github.com", "http://ghe.example/api/v3", "http://10.0.0.1",
    "http://127.0.0.1.evil.example", "http://localhost.evil.example", "ftp://x",
    "https://user:pw@ghe.example", "https://ghe.example/?x=1", "https://ghe.example/#f",
    "https://", "https://ghe.example:99999", "https://ghe .example", "javascript:alert(1)"])
def test_api_url_refused(url: str) -> None:
    with pytest.raises(UsageError) as ei:
        api_url_from_env(url, {})
    assert ei.value.hint


def test_plain_http_from_the_environment_is_refused_too() -> None:
    with pytest.raises(UsageError) as ei:
        api_url_from_env(None, {"GITHUB_API_URL": "http://ghe.example/api/v3"})
    assert "in clear" in ei.value.message and "https://" in str(ei.value.hint)


# ----------------------------------------------------------------------------- the CLI

def _cli(world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
         *args: str) -> tuple[int, str]:
    from inferencex_tools.cli.main import run

    monkeypatch.chdir(world.user)
    monkeypatch.setenv("GITHUB_TOKEN", world.fake.token)
    monkeypatch.setenv("GITHUB_API_URL", world.fake.url)
    with pytest.raises(SystemExit) as ei:
        run(list(args))
    return int(ei.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize("args", [
    ["007"], ["0"], ["9" * 5000], ["7", "--run-id", "0012"],
    ["7", "--run-id", "9" * 20], ["7", "--api-url", "http://ghe.example/api/v3"]],
    ids=["leading-zeros", "zero", "5000-digits", "run-id-zeros", "run-id-20-digits",
         "plain-http-api"])
def test_cli_refuses_before_any_request(world: World, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str],
                                        args: list[str]) -> None:
    world.open_pr()
    world.clone_user()
    code, err = _cli(world, monkeypatch, capsys, "merge-with-reuse", *args, "--repo", SLUG,
                     "--yes")
    assert code == 2 and "Traceback" not in err and "ixtool: error:" in err, err
    assert world.fake.log == [], "not one request"
    assert world.fake.comments[PRN] == []
