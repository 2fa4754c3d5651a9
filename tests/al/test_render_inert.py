"""The measured-AL section is inert (held-out variant of issue 27, item 4): it goes into
job summaries and, through ``review --al-audit FILE --post``, into the bot's posted
comment.  Its config keys come from the PR's configs and its verdict details from the
run's artifacts (the PR's recipe ran): a key ``minimaxm3<details open><summary>✅ gate
passes</summary>`` or an artifact line with an image, a link or ``@user`` rendered as
such.  Every PR- or artifact-derived cell goes through ``report.inert``."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

from markdown_it import MarkdownIt
from markdown_it.token import Token

from inferencex_tools.al.judge import Verdict
from inferencex_tools.al.render import markdown
from tests.al.conftest import Auditor
from tests.al.fixtures import REAL_RATES, seed_jobs

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
KEY = "minimaxm3<details open><summary>✅ gate passes</summary> @octocat"
DETAIL = "served 2.83 ![x](https://evil.example/p.png) [click](https://evil.example) | cell"


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for t in tokens:
        yield t
        if t.children:
            yield from _walk(t.children)


def test_keys_and_details_render_as_text(run_audit: Auditor) -> None:
    a = run_audit(seed_jobs(random.Random(2), rates=REAL_RATES))
    for j in a.jobs:  # a copy: the launches are the session's (conftest.seed_launches)
        j.launch = dataclasses.replace(j.launch, config_key=KEY)
        if j.verdict is not None:
            j.verdict = Verdict(j.verdict.status, DETAIL, j.verdict.limit, j.verdict.finding)
    md = markdown(a)
    tokens = MD.parse(md)
    ours = {"<!-- ixtool al audit -->", "<details><summary>every job</summary>", "</details>"}
    html = [t.content.strip() for t in _walk(tokens) if t.type in ("html_inline", "html_block")
            and t.content.strip() not in ours]
    live = [(t.type, t.attrs) for t in _walk(tokens) if t.type in ("image", "link_open")
            and "evil.example" in str(t.attrs)]
    text = "".join(t.content for t in _walk(tokens) if t.type == "text")
    assert html == [] and live == [] and "@octocat" not in text, (html, live, md[-800:])
    assert "evil.example" in md and "gate passes" in md  # shown, as text
    # no cell break: every row of a table has its header's cells
    widths: list[int] = []
    for t in tokens:
        if t.type == "thead_open":
            widths.append(0)
        if t.type == "th_open":
            widths[-1] += 1
        if t.type == "tr_open":
            cells = 0
        if t.type == "td_open":
            cells += 1
        if t.type == "tr_close" and cells:
            assert cells == widths[-1], md
