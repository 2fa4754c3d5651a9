"""What a preparation commit of ``merge-with-reuse`` is, checked on the commit itself.

ixtool's preparation commit sits on the PR head it prepared (its first parent) and
is exactly one of:

* a merge of a commit of main (second parent) whose tree is what git's merge of the
  two gives, except ``perf-changelog.yaml``, which is the merged changelog (a
  conflict resolved by :func:`~inferencex_tools.changelog.merge_ops.resolve_conflict`)
  with the PR's links canonicalized against that main commit;
* a commit whose tree is its parent's, except the changelog, which is the parent's
  with the PR's links canonicalized (or the same: an empty refresh commit).

Nothing else qualifies — not a message trailer, not a comment that names the SHA: a
write user can post either.  :func:`preparation_problems` recomputes what ixtool would
have built from the commit's own parents and compares; an empty list means the commit
adds nothing to the PR's content but main's commits and the canonical link.  Used by
``ci plan``/``ci gate`` (does an authorization's recorded commit deserve to skip the
sweep?) and ``merge-with-reuse`` (is the PR head already prepared?).
"""

from __future__ import annotations

from typing import Protocol

from inferencex_tools.errors import ConflictError, GitError

CHANGELOG = "perf-changelog.yaml"


class Objects(Protocol):
    """The read-only git queries the check needs (``io.gitcat.GitReader``)."""

    def parents(self, ref: str) -> list[str]: ...

    def merge_base(self, a: str, b: str) -> str: ...

    def is_ancestor(self, a: str, b: str) -> bool: ...

    def delta(self, a: str, b: str) -> dict[str, tuple[str, str]]: ...

    def merge_tree(self, ours: str, theirs: str) -> tuple[str, set[str]]: ...

    def blob_at(self, treeish: str, path: str) -> bytes | None: ...


def preparation_problems(git: Objects, head: str, main: str, *, pr: int, repo: str,
                         changelog: str = CHANGELOG, previous: str | None = None
                         ) -> list[str]:
    """Why ``head`` is not a preparation commit of PR ``pr`` of ``repo`` on top of its
    first parent, against ``main`` (the current tip of the base branch); [] if it is.

    ``previous``: the PR head the push replaced (a ``synchronize`` event's ``before``).
    When given, the first parent must be it: a preparation commit sits on the head
    that was there, so a push of several commits (an unswept one under a prepared-
    looking one) is not a preparation."""
    try:
        parents = git.parents(head)
        if previous is not None and parents[:1] != [previous]:
            return [f"{head[:12]} does not sit on the previous head {previous[:12]} (its "
                    f"parents: {', '.join(p[:12] for p in parents) or 'none'})"]
        if len(parents) == 1:
            return _single(git, head, parents[0], main, pr=pr, repo=repo, cl=changelog)
        if len(parents) == 2:
            return _merge(git, head, parents, main, pr=pr, repo=repo, cl=changelog)
        return [f"{head[:12]} has {len(parents)} parents"]
    except GitError as exc:
        return [f"{head[:12]} cannot be inspected: {exc.message}"]


def _others(git: Objects, a: str, b: str, cl: str) -> list[str]:
    return sorted(p for p in git.delta(a, b) if p != cl)


def _named(paths: list[str]) -> str:
    return ", ".join(paths[:5]) + (" …" if len(paths) > 5 else "")


def _single(git: Objects, head: str, parent: str, main: str, *, pr: int, repo: str,
            cl: str) -> list[str]:
    others = _others(git, parent, head, cl)
    if others:
        return [f"{head[:12]} changes {_named(others)} besides {cl}"]
    base = git.merge_base(parent, main)
    return _canonical(git, head, git.blob_at(base, cl), git.blob_at(parent, cl),
                      pr=pr, repo=repo, cl=cl, what=f"{parent[:12]}'s")


def _merge(git: Objects, head: str, parents: list[str], main: str, *, pr: int, repo: str,
           cl: str) -> list[str]:
    ours, theirs = parents
    if not git.is_ancestor(theirs, main):
        return [f"{head[:12]} merges {theirs[:12]}, which is not a commit of main"]
    tree, conflicts = git.merge_tree(ours, theirs)
    elsewhere = sorted(p for p in conflicts if p != cl)
    if elsewhere:
        return [f"merging {theirs[:12]} into {ours[:12]} conflicts in {_named(elsewhere)}"]
    others = _others(git, tree, head, cl)
    if others:
        return [f"{head[:12]} differs from the merge of {theirs[:12]} in {_named(others)}"]
    main_raw = git.blob_at(theirs, cl)
    if cl in conflicts:
        from inferencex_tools.changelog.merge_ops import resolve_conflict

        mb = git.merge_base(ours, theirs)
        try:
            merged: bytes | None = resolve_conflict(
                git.blob_at(mb, cl) or b"", git.blob_at(ours, cl) or b"", main_raw or b"",
                pr=pr, repo=repo, label=cl).data
        except ConflictError as exc:
            return [f"the {cl} conflict of that merge cannot be resolved: {exc.message}"]
    else:
        merged = git.blob_at(tree, cl)
    return _canonical(git, head, main_raw, merged, pr=pr, repo=repo, cl=cl,
                      what="the merged")


def _canonical(git: Objects, head: str, main_raw: bytes | None, before: bytes | None, *,
               pr: int, repo: str, cl: str, what: str) -> list[str]:
    """``head``'s changelog must be ``before`` with the PR's links canonicalized."""
    from inferencex_tools.changelog.merge_ops import canonicalize

    have = git.blob_at(head, cl)
    if before is None or have is None:
        return [] if before == have else [f"{head[:12]} adds or deletes {cl}"]
    try:
        want = canonicalize(main_raw or b"", before, pr=pr, repo=repo, label=cl).data
    except ConflictError as exc:
        return [f"{what} {cl} cannot be canonicalized: {exc.message}"]
    if have != want:
        return [f"{head[:12]}'s {cl} is not {what} one with the PR's links canonicalized"]
    return []
