"""Benchmarked means the PR's own content is what the run measured (pure over git).

The run measured the PR's commit ``A``.  A later PR head ``H`` carries the same PR
content when it is ``A`` plus main and nothing else: ``H``'s tree equals git's merge
of ``A`` with the newest main commit ``H`` contains (``A`` itself when ``H`` contains
no newer main), on every path but ``perf-changelog.yaml``.  In the changelog only the
PR's own entries matter, and of those only what decides the sweep (``config-keys``
and the flags; not the description or the ``pr-link``).  So a merge of main into the
PR (by the author, by GitHub's "Update branch", by ixtool) — also where main and the
PR both edited a master config in different places — a resolved changelog conflict
or a canonicalized link keep the PR benchmarked, and ixtool's preparation commit
needs no exception; a recipe, config or script edit after the sweep, a hand-resolved
conflict outside the changelog, another branch merged in, or an entry that now names
other config keys do not, and the files are named.

``main`` is the current tip of the base branch.
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
    out.files = _differing(git, benchmarked, head, main, changelog)
    was = swept_entries(git, benchmarked, main, pr=pr, repo=repo, changelog=changelog)
    now = swept_entries(git, head, main, pr=pr, repo=repo, changelog=changelog)
    if was is None or now is None:
        out.changelog = "the PR's entries cannot be read at " + (
            benchmarked[:12] if was is None else head[:12])
    elif was != now:
        out.changelog = (f"the PR's entries ask for a different sweep than at "
                         f"{benchmarked[:12]} (config-keys or flags changed)")
    return out


def _differing(git: Objects, benchmarked: str, head: str, main: str,
               changelog: str) -> list[str]:
    """The paths (but the changelog) where ``head`` is not ``benchmarked`` + main."""
    newest_main = git.merge_base(head, main)
    if git.is_ancestor(newest_main, benchmarked):
        expected = benchmarked
    else:
        expected, _conflicts = git.merge_tree(benchmarked, newest_main)
    return sorted(p for p in git.delta(expected, head) if p != changelog)
