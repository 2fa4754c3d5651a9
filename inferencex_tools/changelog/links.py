"""pr-link classification against a repository slug (spec §3.1.4, G12, G21)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_REPO = "SemiAnalysisAI/InferenceX"
PLACEHOLDER = "XXX"
_SLUG_RX = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_ANY_PR_RX = re.compile(
    r"^https?://(?:www\.)?github\.com/(?P<slug>[^/\s]+/[^/\s]+)/pulls?/(?P<num>[^/\s?#]+)"
    r"(?P<rest>.*)$"
)
_TBD_WORDS = {"tbd", "todo", "placeholder", "xxxx", "xx", "x", "n/a", "na", "none", "pending",
              "tbc", "fixme", "?", "-", "link", "pr", "test"}


def check_slug(slug: str) -> str:
    from inferencex_tools.errors import UsageError

    if not _SLUG_RX.match(slug):
        raise UsageError(f"invalid repository slug {slug!r}", hint="use OWNER/NAME")
    return slug


def repo_slug(explicit: str | None, remote_slug: Callable[[str], object] | None) -> str:
    """The repository a command works for: ``explicit`` (checked), else the GitHub slug
    of the ``upstream`` or ``origin`` remote, else the InferenceX default."""
    if explicit:
        return check_slug(explicit)
    if remote_slug is not None:
        for remote in ("upstream", "origin"):
            slug = remote_slug(remote)
            if slug:
                return str(slug)
    return DEFAULT_REPO


def pr_url(repo: str, number: int | str) -> str:
    return f"https://github.com/{repo}/pull/{number}"


def is_canonical(link: str, repo: str) -> bool:
    """``https://github.com/<repo>/pull/N`` with N a canonical PR number (no leading
    zeros, positive, bounded: ``pull/0``, ``pull/007`` and 5,000-digit numbers are not)."""
    from inferencex_tools.ci.ids import pr_number

    prefix = f"https://github.com/{repo}/pull/"
    return link.startswith(prefix) and pr_number(link[len(prefix):]) is not None


def is_placeholder(link: str, repo: str) -> bool:
    return link in (PLACEHOLDER, pr_url(repo, PLACEHOLDER))


@dataclass(frozen=True)
class LinkVerdict:
    ok: bool
    message: str
    fixable: bool = False  # a safe --fix may replace it (placeholder-like or own PR + suffix)
    # what is wrong, the same in every mode: "placeholder" (text standing for the link:
    # TBD, XXXX, empty …; XXX on main) or "other-pr" (a PR mode link to another PR) — not
    # the link of this change, CL502 — or "malformed" (another repository, a suffix, a
    # spelling, not a URL: not a canonical PR URL of this repository, CL501)
    kind: str = ""


def _describe(link: str) -> str:
    return repr(link) if link else "(empty)"


def is_tbd_like(link: str, repo: str) -> bool:
    """Placeholder-ish text that obviously stands for 'the link of this PR'."""
    s = link.strip()
    if s.lower() in _TBD_WORDS or s == "":
        return True
    m = _ANY_PR_RX.match(s)
    return bool(m and m.group("slug").lower() == repo.lower()
                and m.group("num").lower() in _TBD_WORDS | {"xxx"} and m.group("rest") == "")


def check_new_link(link: str, repo: str, pr: int | None, *, pending: bool = False
                   ) -> LinkVerdict:
    """Verdict on an appended entry's link: PR mode when ``pr`` is known; ``pending``
    (before a PR exists: pre-commit, a local branch) accepts XXX or a canonical URL;
    else main mode."""
    if pr is None and pending:
        return _pending_link(link, repo)
    if pr is None:
        if is_canonical(link, repo):
            return LinkVerdict(True, "")
        if is_placeholder(link, repo):
            return LinkVerdict(False, f"pr-link is still the placeholder {link!r}; on main every "
                               f"new entry needs its PR URL ({pr_url(repo, 'N')})",
                               kind="placeholder")
        if is_tbd_like(link, repo):
            return LinkVerdict(False, f"pr-link {_describe(link)} is a placeholder; on main "
                               f"every new entry needs its PR URL ({pr_url(repo, 'N')})", True,
                               kind="placeholder")
        return LinkVerdict(False, f"pr-link {_describe(link)} is not a canonical PR URL "
                           f"({pr_url(repo, 'N')})", kind="malformed")
    own = pr_url(repo, pr)
    if link == own or is_placeholder(link, repo):
        return LinkVerdict(True, "")
    expected = f"expected 'XXX' or {own}"
    if is_tbd_like(link, repo):
        return LinkVerdict(False, f"pr-link {_describe(link)} is a placeholder ixtool cannot "
                           f"replace at merge; {expected}", True, kind="placeholder")
    m = _ANY_PR_RX.match(link.strip())
    if m:
        slug, num, rest = m.group("slug"), m.group("num"), m.group("rest")
        if slug.lower() != repo.lower():
            return LinkVerdict(False, f"pr-link points at another repository ({slug}); "
                               f"{expected}", kind="malformed")
        if num != str(pr):
            return LinkVerdict(False, f"pr-link names PR #{num}, but this is PR #{pr}; "
                               f"{expected}", kind="other-pr")
        if rest:
            return LinkVerdict(False, f"pr-link has a trailing {rest!r}; {expected}", True,
                               kind="malformed")
        return LinkVerdict(False, f"pr-link {link!r} is not canonical (spelling); {expected}",
                           True, kind="malformed")
    return LinkVerdict(False, f"pr-link {_describe(link)} is not a PR URL; {expected}",
                       kind="malformed")


def _pending_link(link: str, repo: str) -> LinkVerdict:
    if is_canonical(link, repo) or is_placeholder(link, repo):
        return LinkVerdict(True, "")
    expected = (f"expected 'XXX' (replaced by the PR URL at merge) or a PR URL "
                f"({pr_url(repo, 'N')})")
    if is_tbd_like(link, repo):
        return LinkVerdict(False, f"pr-link {_describe(link)} is a placeholder ixtool cannot "
                           f"replace at merge; {expected}", True, kind="placeholder")
    m = _ANY_PR_RX.match(link.strip())
    if m and m.group("slug").lower() != repo.lower():
        return LinkVerdict(False, f"pr-link points at another repository "
                           f"({m.group('slug')}); {expected}", kind="malformed")
    if m:
        return LinkVerdict(False, f"pr-link {link!r} is not canonical; {expected}",
                           bool(m.group("rest")), kind="malformed")
    return LinkVerdict(False, f"pr-link {_describe(link)} is not a PR URL; {expected}",
                       kind="malformed")
