"""Benchmarked means the PR's own content is what the run measured (pure over git).

A PR's own content at a commit is what the commit changes against its merge base with
main: path → (mode, blob) of every file that differs.  A later PR head is benchmarked
by a run on an earlier commit when that content is the same at both, except
``perf-changelog.yaml`` — where only the PR's own entries matter, and of those only
what decides the sweep (``config-keys`` and the flags; not the description or the
``pr-link``).  So a merge of main into the PR, a resolved changelog conflict or a
canonicalized link keep a PR benchmarked, and ixtool's preparation commit needs no
exception; a recipe, config or script edit after the sweep — or an entry that now
names other config keys — does not, and the files are named.

``main`` is the current tip of the base branch; each commit is compared against its
own merge base with it, so main moving in between changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from inferencex_tools.ci.prepared import CHANGELOG, Objects

# changelog entry fields that do not change what the sweep runs
_NOT_SWEPT = ("description", "pr-link", "pr_link")


@dataclass
class Comparison:
    """How a head's PR content compares with the benchmarked commit's."""

    files: list[str] = field(default_factory=list)  # files whose content differs
    changelog: str = ""  # why the PR's changelog entries differ ("" : they do not)

    @property
    def same(self) -> bool:
        return not self.files and not self.changelog

    def describe(self) -> str:
        parts = []
        if self.files:
            shown = ", ".join(self.files[:8]) + (" …" if len(self.files) > 8 else "")
            parts.append(f"{len(self.files)} file(s) differ: {shown}")
        if self.changelog:
            parts.append(f"{CHANGELOG}: {self.changelog}")
        return "; ".join(parts)


def pr_content(git: Objects, tip: str, main: str,
               changelog: str = CHANGELOG) -> dict[str, tuple[str, str]]:
    """The PR's own changes at ``tip`` (against its merge base with ``main``), without
    the changelog."""
    base = git.merge_base(tip, main)
    return {p: v for p, v in git.delta(base, tip).items() if p != changelog}


def swept_entries(git: Objects, tip: str, main: str, *, pr: int, repo: str,
                  changelog: str = CHANGELOG) -> list[str] | None:
    """What the PR's changelog entries at ``tip`` ask the sweep to run: the canonical
    JSON of each appended entry without its description and link, in order (None: the
    change cannot be read)."""
    from inferencex_tools.changelog.model import canonical_json
    from inferencex_tools.changelog.validate import Options, analyze_change

    base = git.merge_base(tip, main)
    a = analyze_change(git.blob_at(base, changelog) or b"", git.blob_at(tip, changelog) or b"",
                       changelog, Options(repo=repo, pr=pr, master_keys=None))
    if not (a.base.parsed and a.head.parsed and a.head.spans_ok):
        return None
    return [canonical_json({k: v for k, v in e.mapping.items() if k not in _NOT_SWEPT})
            for e in a.new_entries]


def compare(git: Objects, benchmarked: str, head: str, main: str, *, pr: int, repo: str,
            changelog: str = CHANGELOG) -> Comparison:
    """Does ``head`` carry the PR content the run on ``benchmarked`` measured?"""
    out = Comparison()
    if head == benchmarked:
        return out
    a, b = pr_content(git, benchmarked, main, changelog), pr_content(git, head, main, changelog)
    out.files = sorted(p for p in a.keys() | b.keys() if a.get(p) != b.get(p))
    was = swept_entries(git, benchmarked, main, pr=pr, repo=repo, changelog=changelog)
    now = swept_entries(git, head, main, pr=pr, repo=repo, changelog=changelog)
    if was is None or now is None:
        out.changelog = "the PR's entries cannot be read at " + (
            benchmarked[:12] if was is None else head[:12])
    elif was != now:
        out.changelog = (f"the PR's entries ask for a different sweep than at "
                         f"{benchmarked[:12]} (config-keys or flags changed)")
    return out
