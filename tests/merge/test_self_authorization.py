"""The PR's author cannot authorize skipping the sweep of their own push (held-out
variants of issue 27, items 9-10), read by ``ci plan`` and ``ci gate`` on the
``synchronize`` of the head, as in ``test_stale_authorization``.

Every author ixtool merges has write access, so "a command from a write user, newer
than the push" let the author skip the sweep of an unbenchmarked push: by commenting
``/reuse-sweep-run`` after it (then re-running the gate), or — since anyone with write
access can edit anyone's comment and the API does not say who did — by editing a
maintainer's later comment into the command.  Both answered "no sweep" (CI301).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.merge.conftest import PRN, World
from tests.merge.test_stale_authorization import (
    RECIPE,
    assert_sweep_runs,
    assert_sweep_skipped,
    pushed,
)


def _edit(body: str) -> Callable[[dict[str, Any], World], None]:
    def edit(c: dict[str, Any], world: World) -> None:
        c["body"] = body
        c["updated_at"] = world.fake.tick()
    return edit


# name → (who comments after the push and with what; an edit of that comment, then;
# the rule that says why the sweep runs and a phrase of its message)
CASES: dict[str, tuple[str, str, Callable[[dict[str, Any], World], None] | None, str,
                       str]] = {
    "the author's bare command": ("author", "/reuse-sweep-run", None, "CI303",
                                  "PR's author"),
    "the author's pin": ("author", "/reuse-sweep-run 1001", None, "CI303", "PR's author"),
    "a maintainer's comment edited into the command": (
        "lead", "Thanks, looking at it", _edit("/reuse-sweep-run"), "CI302", "edited"),
    "a maintainer's command edited to another pin": (
        "lead", "/reuse-sweep-run 1001", _edit("/reuse-sweep-run 1002"), "CI302", "edited"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_author_cannot_skip_their_own_sweep(world: World, case: str) -> None:
    login, body, edit, rule, why = CASES[case]
    world.open_pr()
    head, at = pushed(world, RECIPE)
    c = world.fake.add_comment(PRN, body, login=login,
                               permission="write" if login == "author" else "admin")
    if edit is not None:
        edit(c, world)
    assert_sweep_runs(world, head, at, why=why, rule=rule)


def test_a_maintainer_s_unedited_command_after_the_push_still_counts(world: World) -> None:
    world.open_pr()
    head, at = pushed(world, RECIPE)
    world.fake.add_comment(PRN, "/reuse-sweep-run", login="lead", permission="write")
    assert_sweep_skipped(world, head, at)
