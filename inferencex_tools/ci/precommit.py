"""What one of ixtool's pre-commit hooks judges: the commit, a range, or every file.

pre-commit tells a hook what it runs on only through the file names it passes and, for
``--from-ref/--to-ref`` runs and the pre-push stage, ``PRE_COMMIT_FROM_REF`` /
``PRE_COMMIT_TO_REF``.  On a commit (``git commit``, or ``pre-commit run`` with staged
files) the names are the staged files; with ``--all-files`` every tracked file, with
``--files`` the ones named.  So: names that are all changed in the index → the commit
(the findings it adds against ``HEAD``); a name the commit does not change → every file
(the full check); a range → what the range changes.  Pure: facts in, a scope out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Scope:
    kind: Literal["commit", "range", "all"]
    base: str | None  # the revision findings are compared with (commit: HEAD)
    why: str  # one line for the user


def hook_scope(files: list[str], *, staged: set[str], head_unborn: bool,
               from_ref: str | None = None, to_ref: str | None = None,
               to_is_head: bool = False, everything: bool = False) -> Scope:
    """The scope of a hook run.  ``files``: the names pre-commit passed (relative to the
    repository root); ``staged``: what the index changes against HEAD; ``to_is_head``:
    ``to_ref`` is the checked-out commit (the range's head is what is on disk)."""
    if everything:
        return Scope("all", None, "every file (--all)")
    if from_ref and to_ref:
        if to_is_head:
            return Scope("range", from_ref, f"what {from_ref[:12]}..{to_ref[:12]} changes "
                         "(pre-commit's --from-ref/--to-ref)")
        return Scope("all", None, f"every file: the range's head {to_ref[:12]} is not "
                     "the checked-out commit, so it cannot be judged as a change")
    if head_unborn:
        return Scope("all", None, "every file (the repository's first commit)")
    if files and set(files) <= staged:
        return Scope("commit", "HEAD", "what the commit changes against HEAD "
                     "(`pre-commit run --all-files` checks every file)")
    if not files:
        return Scope("all", None, "every file (no file names given)")
    return Scope("all", None, "every file (files the commit does not change were given: "
                 "`pre-commit run --all-files` or `--files`)")
