"""``ixtool review``: one review of a recipe change (docs/review.md)."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from inferencex_tools.cli.common import actions_env, adopter, info, write_summary

if TYPE_CHECKING:
    from inferencex_tools.io.github import Forge
    from inferencex_tools.review.service import ReviewRequest

HELP = """One deterministic review of a recipe change: inline fix suggestions, the gate
verdict, the golden-AL table, the serve-shape delta against sibling recipes, the matrix at
a glance, the label and CODEOWNER-checklist advice.

\b
Reviews the checkout's HEAD against merge-base(--base, HEAD). Without --post the review
is printed (Markdown or JSON): a local pre-push check, or a job summary. With --post it
goes to the PR: one review with line comments per head SHA (a re-run on the same SHA
posts nothing) and one sticky summary comment, edited in place on every new head.

\b
Environment (--pr/--post): GITHUB_TOKEN or GH_TOKEN (never printed), GITHUB_API_URL
(GitHub Enterprise: https://HOST/api/v3).

Exit codes: 0 the gate passes, 1 it fails (errors found), 2 usage or input error (git,
GitHub).

\b
Examples:
  ixtool review --base origin/main
  ixtool review --pr 1234 --post
"""


class ReviewFormat(StrEnum):
    markdown = "markdown"
    json = "json"


def review(
    base: str | None = typer.Option(
        None, "--base", help="Base ref (default: origin/main, else main)."),
    pr: int | None = typer.Option(
        None, "--pr", min=1, help="The PR number (default: the pull_request event's). "
        "Its URL goes into pr-link suggestions; its labels and body are read (with a token; "
        "else from its pull_request event)."),
    fmt: ReviewFormat = typer.Option(
        ReviewFormat.markdown, "--format", "-f", case_sensitive=False,
        help="Output: markdown (the summary and every line comment) or json."),
    post: bool = typer.Option(
        False, "--post", help="Post the review and the sticky summary to the PR."),
    repo: str | None = typer.Option(
        None, "--repo", help="OWNER/NAME (default: $GITHUB_REPOSITORY, else the upstream/"
        "origin remote)."),
    root: Path = typer.Option(Path("."), "--root", help="The repository checkout."),
    api_url: str | None = typer.Option(
        None, "--api-url", help="GitHub API root (default: $GITHUB_API_URL or "
        "https://api.github.com)."),
    timeout: float = typer.Option(60.0, "--timeout", min=1, help="Seconds per traced launch."),
    al_audit: Path | None = typer.Option(
        None, "--al-audit", metavar="FILE",
        help="After a sweep: the Markdown section `ixtool al audit --markdown FILE` wrote "
        "(measured vs golden AL), added to the summary."),
) -> None:
    from inferencex_tools.errors import InputError, UsageError
    from inferencex_tools.review import render
    from inferencex_tools.review.service import ReviewRequest, build_review

    if not root.is_dir():
        raise InputError(f"{root}: no such directory",
                         hint="--root is the repository checkout (default: .)")
    env = actions_env()
    event = env.pull_request() or {}
    if pr is None and isinstance(event.get("number"), int):
        pr = event["number"]
    repo = repo or env.repository
    if post and pr is None:
        raise UsageError("--post needs --pr N (or a pull_request event)",
                         hint="e.g. ixtool review --pr 1234 --post")
    from inferencex_tools.report.adopt import TrustedBase

    # a review judges a change: the settings and baseline are its base's, as ci gate's
    adopted, _ = adopter(TrustedBase(base or _default_base(root)), root)
    from inferencex_tools.cli.progress import ProgressLine

    req = ReviewRequest(root=root, base=base, pr=pr, repo=repo, timeout=timeout,
                        adopted=adopted, al_audit=_al_section(al_audit))
    forge = _pull_inputs(req, event, post=post, api_url=api_url)
    with ProgressLine("review") as line:
        req.progress = lambda step: line(0, None, step.removeprefix("review: "))
        result = build_review(req)
    summary = render.summary_markdown(result)
    if post and forge is not None and pr is not None:
        from inferencex_tools.review.service import check_head
        from inferencex_tools.review.service import post as do_post

        check_head(forge.pull(pr), result.head_sha)
        out = do_post(forge, pr, result, summary, render.review_body(result))
        info(f"review: {out.review}; summary comment {out.summary} (id {out.comment_id})")
    sys.stdout.write(render.to_json(result) if fmt is ReviewFormat.json
                     else render.markdown(result))
    write_summary(summary, env=env)
    info(f"review: {len(result.comments)} comment(s), verdict {result.verdict}, "
         f"{result.seconds:.1f} s")
    raise typer.Exit(0 if result.verdict == "pass" else 1)


def _pull_inputs(req: ReviewRequest, event: dict[str, Any], *, post: bool,
                 api_url: str | None) -> Forge | None:
    """The PR's labels, body and comments into ``req``: read from GitHub with a token (or
    to post; the forge is returned), else from its pull_request event, as ci gate reads
    them."""
    pr = req.pr
    if pr is None:
        return None
    if post or os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN"):
        forge, req.repo = _forge(req.repo, req.root, api_url)
        from inferencex_tools.review.service import pull_inputs

        pull, bodies = pull_inputs(forge, pr)
        req.labels, req.body, req.pr_comments = pull.labels, pull.body, tuple(bodies)
        req.pr_url = pull.html_url or None
        return forge
    if event.get("number") == pr:
        req.labels, req.body = _event_labels(event), _event_body(event)
    return None


def _event_labels(pull: dict[str, object]) -> tuple[str, ...] | None:
    """The label names of a pull_request event's PR object (None: not a list)."""
    raw = pull.get("labels")
    if not isinstance(raw, list):
        return None
    return tuple(lab["name"] for lab in raw
                 if isinstance(lab, dict) and isinstance(lab.get("name"), str))


def _event_body(pull: dict[str, object]) -> str | None:
    body = pull.get("body")
    return body if isinstance(body, str) else None


def _al_section(path: Path | None) -> str | None:
    """The section `ixtool al audit --markdown` wrote (its marker first), or None."""
    if path is None:
        return None
    from inferencex_tools.al.render import MARKER
    from inferencex_tools.errors import InputError
    from inferencex_tools.io.files import read_bytes

    text = read_bytes(path, max_bytes=1 << 20).decode("utf-8", errors="replace")
    if not text.startswith(MARKER):
        raise InputError(f"{path}: not a section `ixtool al audit --markdown` wrote",
                         hint="pass the file written by ixtool al audit --markdown FILE")
    return text


def _forge(repo: str | None, root: Path, api_url: str | None) -> tuple[Forge, str]:
    from inferencex_tools.changelog.links import DEFAULT_REPO, check_slug
    from inferencex_tools.io.github import Forge, api_url_from_env, token_from_env

    slug = check_slug(repo) if repo else (_remote_slug(root) or DEFAULT_REPO)
    return Forge(slug, token=token_from_env(), api_url=api_url_from_env(api_url)), slug


def _remote_slug(root: Path) -> str | None:
    from inferencex_tools.io.gitcat import GitReader

    g = GitReader(root)
    try:
        return g.remote_slug("upstream") or g.remote_slug("origin")
    finally:
        g.close()


def _default_base(root: Path) -> str | None:
    """The base ``review`` compares with when --base is not given (the default branch)."""
    from inferencex_tools.errors import IxtoolError
    from inferencex_tools.io.git import default_branch
    from inferencex_tools.io.gitcat import GitReader

    try:
        git = GitReader(root)
    except IxtoolError:
        return None
    try:
        return default_branch(git.resolve)
    finally:
        git.close()
