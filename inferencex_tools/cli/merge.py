"""``ixtool merge-with-reuse PR``: the reuse-assisted merge (docs/merge-with-reuse.md)."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from inferencex_tools.cli.common import FORMAT_OPTION, Format, emit, info

HELP = """Merge a benchmark PR by reusing its finished full sweep instead of re-running it.

\b
Preconditions (all checked before anything is written; every problem is
reported at once, exit 1):
  - the local checkout is clean; `origin` (--remote) is the GitHub repository
  - the PR is open, targets main and is not from a fork
  - exactly one primary sweep label, and it is a full-sweep one; no
    evals-only / agentx-fast
  - an eligible source run: a completed, successful pull_request run of
    run-sweep.yml on a commit of the PR with unexpired results_bmk /
    eval_results_all / bmk_agentic_* artifacts (--run-id, or a run pinned by an
    existing /reuse-sweep-run comment, is honoured; else the newest eligible)
  - the PR's perf-changelog.yaml change passes the PR-mode gate and
    canonicalizes/resolves cleanly against current main (so pr-link: TBD is
    refused here, before anything is posted)

\b
Side effects (skipped when already done, so re-running resumes):
  1. posts '/reuse-sweep-run RUN_ID' on the PR (pinned to the chosen run)
  2. pushes ONE commit to the PR branch: merge of main (only
     perf-changelog.yaml is auto-resolved), changelog link canonicalized, or an
     empty refresh commit; its message carries [skip-sweep]
  3. waits for check-changelog, then for every check run (live line on stderr)
  4. re-checks the head SHA and squash-merges with a message ixtool writes and
     lints (never [skip-sweep] or other control tokens); prints the merge SHA
Git work happens in a private worktree under .git/ixtool/; your checkout,
branches and index are never changed.

\b
Environment: GITHUB_TOKEN or GH_TOKEN (never printed), GITHUB_API_URL
(GitHub Enterprise: https://HOST/api/v3).

\b
Exit codes: 0 merged (or already merged, or --dry-run plan printed);
1 refused by preflight, a failed/timed-out check, head moved, or declined;
2 usage, git or GitHub API error.
"""


def _progress_printer() -> tuple[Callable[[str], None], Callable[[str], None]]:
    tty = sys.stderr.isatty()
    last: list[str] = [""]

    def progress(line: str) -> None:
        if tty:
            sys.stderr.write("\r\x1b[2K" + line)
            sys.stderr.flush()
        else:
            # One line per change of state; the elapsed time alone is not news.
            key = line.split(";", 1)[-1] if "elapsed" in line else line
            if key != last[0]:
                print(line, file=sys.stderr)
                last[0] = key

    def say(line: str) -> None:
        if tty:
            sys.stderr.write("\r\x1b[2K")
        info(line)

    return progress, say


def merge_with_reuse(
    pr: int = typer.Argument(..., min=1, help="The pull-request number."),
    repo: str | None = typer.Option(
        None, "--repo", help="OWNER/NAME on GitHub (default: from the --remote URL)."),
    run_id: int | None = typer.Option(
        None, "--run-id", min=1,
        help="Reuse this run-sweep.yml run (default: a run already pinned by a "
        "/reuse-sweep-run comment, else the newest eligible run)."),
    dry_run: bool = typer.Option(
        False, "--dry-run",
        help="Run the preflight, print the plan and every API call/push it would make; "
        "change nothing."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    timeout: float = typer.Option(
        1800.0, "--timeout", min=1, help="Seconds to wait for the checks (default 1800)."),
    remote: str = typer.Option("origin", "--remote", help="The git remote of the repository."),
    api_url: str | None = typer.Option(
        None, "--api-url", help="GitHub API root (default: $GITHUB_API_URL or "
        "https://api.github.com)."),
    poll: float = typer.Option(10.0, "--poll", min=0.0, help="Seconds between check polls."),
    debug: bool = typer.Option(
        False, "--debug", help="Log every API call on stderr (the token is redacted)."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    from inferencex_tools.merge.service import Hooks, MergeRequest, run_merge, terminal_confirm

    if debug:
        _enable_debug()
    progress, say = _progress_printer()
    hooks = Hooks(poll_interval=poll, progress=progress, say=say,
                  confirm=terminal_confirm, clock=time.monotonic)
    req = MergeRequest(pr=pr, repo=repo, run_id=run_id, dry_run=dry_run, yes=yes,
                       timeout=timeout, remote=remote, path=Path("."), api_url=api_url)
    result = run_merge(req, hooks)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    if fmt is Format.text:
        _print_text(result.info)
    raise typer.Exit(emit(result, fmt))


def _print_text(data: dict[str, Any]) -> None:
    state = data.get("state")
    if state == "dry-run":
        for title, key in (("plan (dry run, nothing was changed):", "plan"),
                           ("read-only API calls made:", "preflight_calls"),
                           ("calls it would make (writes, then polls):", "would_call")):
            print(title)
            for line in data.get(key, []):
                print(f"  {line}")
    if state in ("merged", "already-merged") and data.get("merge_sha"):
        print(f"merge SHA: {data['merge_sha']}")


def _enable_debug() -> None:
    from inferencex_tools.io.github import RedactingFilter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("ixtool: debug: %(name)s: %(message)s"))
    for secret in (os.environ.get("GITHUB_TOKEN"), os.environ.get("GH_TOKEN")):
        if secret:
            handler.addFilter(RedactingFilter(secret))
    for name in ("ixtool", "github", "urllib3"):
        lg = logging.getLogger(name)
        lg.setLevel(logging.DEBUG)
        lg.addHandler(handler)
