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
  - the token's user has write or admin permission (else its comment would
    not authorize anything)
  - an eligible source run: a completed, successful pull_request run of
    run-sweep.yml from the PR's head repository and branch on a commit of the
    PR with unexpired results_bmk / eval_results_all / bmk_agentic_* artifacts
    (--run-id, or a run pinned by the authorization in force, is honoured; else
    the newest eligible; a pinned run that failed or was cancelled only with
    --allow-failed-run)
  - the head's PR content is what the run benchmarked: the same changes
    against main, apart from main merged in and the changelog's links (else
    refused, unless --allow-unbenchmarked)
  - the run's throughput jobs served the acceptance length their launches
    forced (ixtool al audit RUN_ID; unless --allow-al-mismatch)
  - the PR's perf-changelog.yaml change passes the PR-mode gate and
    canonicalizes/resolves cleanly against current main (so pr-link: TBD is
    refused here, before anything is posted); merging main conflicts nowhere
    else (git merge-tree)
  - git can commit as you (user.name/user.email from your git configuration,
    never guessed) and push to the PR branch (git push --dry-run)

\b
Side effects (skipped when already done, so re-running resumes):
  1. builds ONE commit on the PR head locally: merge of main (only
     perf-changelog.yaml is auto-resolved), changelog link canonicalized, or an
     empty refresh commit; its message carries [skip-sweep]
  2. posts '/reuse-sweep-run RUN_ID' on the PR (pinned to the chosen run, and
     recording the commit's SHA) -- the first write
  3. pushes the commit to the PR branch (only if the branch did not move)
  4. waits for check-changelog, then for every check run (live line on stderr)
  5. re-checks the head SHA and squash-merges with a message ixtool writes and
     lints (never [skip-sweep] or other control tokens); prints the merge SHA
Git work happens in a private worktree under .git/ixtool/; your checkout,
branches and index are never changed. Fetch, commit and push run with your own
git configuration (identity, credential helpers, insteadOf, proxies, ssh).

\b
Environment: GITHUB_TOKEN or GH_TOKEN (never printed), GITHUB_API_URL
(GitHub Enterprise: https://HOST/api/v3; plain http only to a loopback address).

\b
Examples:
  ixtool merge-with-reuse 1234 --dry-run
  GH_TOKEN=$(gh auth token) ixtool merge-with-reuse 1234 --yes

\b
Exit codes: 0 merged (or already merged, or --dry-run plan printed);
1 refused by preflight, a failed/timed-out check, head moved, or declined;
2 usage, git or GitHub API error.
"""


def _progress_printer() -> tuple[Callable[[str], None], Callable[[str], None]]:
    from inferencex_tools.cli.progress import progress_mode

    mode = progress_mode(sys.stderr)  # None under --quiet
    tty = mode == "line"
    last: list[str] = [""]

    def progress(line: str) -> None:
        if mode is None:
            return
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
    pr: str = typer.Argument(..., help="The pull-request number."),
    repo: str | None = typer.Option(
        None, "--repo", help="OWNER/NAME on GitHub (default: from the --remote URL)."),
    run_id: str | None = typer.Option(
        None, "--run-id", metavar="ID",
        help="Reuse this run-sweep.yml run (default: a run already pinned by a "
        "/reuse-sweep-run comment, else the newest eligible run)."),
    allow_unbenchmarked: bool = typer.Option(
        False, "--allow-unbenchmarked",
        help="Merge even though the PR head changes more than the benchmarked commit did "
        "(the commits are named in the squash commit)."),
    allow_failed_run: bool = typer.Option(
        False, "--allow-failed-run",
        help="Reuse a PINNED run that concluded failure or cancelled when its result "
        "artifacts are there (said in the squash commit)."),
    allow_al_mismatch: bool = typer.Option(
        False, "--allow-al-mismatch",
        help="Merge even though throughput jobs of the reused run did not serve the "
        "acceptance length their launch forced (they are named in the squash commit)."),
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
    from inferencex_tools.ci.ids import pr_number
    from inferencex_tools.ci.ids import run_id as parse_run_id
    from inferencex_tools.errors import UsageError
    from inferencex_tools.merge.service import Hooks, MergeRequest, run_merge

    number = pr_number(pr)
    if number is None:
        raise UsageError(f"invalid PR number {pr[:40]!r}",
                         hint="give the number as GitHub shows it, e.g. 1234 "
                         "(no sign, no leading zeros)")
    run = None
    if run_id is not None:
        run = parse_run_id(run_id)
        if run is None:
            raise UsageError(f"invalid --run-id {run_id[:40]!r}",
                             hint="copy the number from the run's URL (…/actions/runs/ID)")
    if debug:
        _enable_debug()
    progress, say = _progress_printer()
    hooks = Hooks(poll_interval=poll, progress=progress, say=say,
                  confirm=terminal_confirm, clock=time.monotonic)
    req = MergeRequest(pr=number, repo=repo, run_id=run, dry_run=dry_run, yes=yes,
                       allow_unbenchmarked=allow_unbenchmarked,
                       allow_failed_run=allow_failed_run,
                       allow_al_mismatch=allow_al_mismatch, timeout=timeout,
                       remote=remote, path=Path("."), api_url=api_url,
                       env=dict(os.environ))
    result = run_merge(req, hooks)
    from inferencex_tools.cli.progress import progress_mode

    if progress_mode(sys.stderr) == "line":
        sys.stderr.write("\n")
    if fmt is Format.text:
        _print_text(result.info)
    raise typer.Exit(emit(result, fmt))


def terminal_confirm(plan: list[str]) -> bool:
    """Ask on the terminal; without one, refuse (pass --yes)."""
    from inferencex_tools.errors import UsageError

    if not sys.stdin.isatty():
        raise UsageError("merge-with-reuse needs confirmation",
                         hint="pass --yes when not running on a terminal")
    sys.stderr.write("Proceed? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


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
