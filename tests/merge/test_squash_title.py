"""The squash message never carries a control token, however the PR title nests it
(held-out variant of issue 27, item 4): one pass over ``[skip [skip ci]ci]`` left
``[skip ci]``, and merge-with-reuse refused the merge at its last step (BODY_LINT),
after its comment and its preparation commit were pushed."""

from __future__ import annotations

import pytest

from inferencex_tools.io.github import PullInfo, WorkflowRun
from inferencex_tools.merge.reuse import lint_message, squash_message


@pytest.mark.parametrize("title", [
    "Tune [skip [skip ci]ci] recipe",
    "[[skip-sweep]skip-sweep] [sk[skip ci]ip ci]",
    "/reuse-sweep-/reuse-sweep-runrun 7 [SKIP [Skip Actions]ACTIONS]",
    "skip-ch skip-checks:ecks: true",
])
def test_no_control_token_survives(title: str) -> None:
    pr = PullInfo(number=7, state="open", merged=False, title=title, head_ref="feat",
                  head_sha="a" * 40, head_repo="o/r", base_ref="main", base_repo="o/r",
                  labels=())
    run = WorkflowRun(id=9, head_sha="a" * 40, head_branch="feat", event="pull_request",
                      status="completed", conclusion="success", path="", created_at="")
    t, body = squash_message(pr, run, "o/r")
    assert lint_message(f"{t}\n\n{body}") == [], t
