"""Posted text is inert (issue 27): what a PR controls cannot close a fence, forge a
heading, mention a user or team, embed an image or HTML, or link anywhere; every comment
fits GitHub's 65,536 characters.  Checked with a CommonMark parser (markdown-it-py), by
property over hostile strings and end to end through `review --post` on the fake GitHub."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from inferencex_tools.report.inert import (
    MAX_COMMENT,
    ZWSP,
    cap,
    code,
    fence,
    length,
    prose,
    visible,
)
from inferencex_tools.review import comments as C
from inferencex_tools.review.model import LineComment
from tests.review.world import MTP_KEY, PRN, SLUG, World, make_world, seed_files

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
SPECIAL = "`~*_[]()!#<>&@|$-+=.:/\\ \t\n\r\u202e\u200b" + "abc12"
hostile = st.text(alphabet=st.sampled_from(list(SPECIAL)) | st.characters(), max_size=80)

MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")
BARE_URL = re.compile(r"(?i)https?://|www\.")


def walk(tokens: list[Token]) -> Iterator[Token]:
    for t in tokens:
        yield t
        if t.children:
            yield from walk(t.children)


def live_text(tokens: list[Token]) -> str:
    """The rendered text outside code."""
    return "".join(t.content for t in walk(tokens) if t.type == "text")


@settings(max_examples=300, deadline=None)
@given(hostile)
def test_prose_is_its_text_and_nothing_else(s: str) -> None:
    tokens = MD.parse(prose(s))
    kinds = {t.type for t in walk(tokens)}
    assert kinds <= {"paragraph_open", "inline", "paragraph_close", "text", "code_inline"}, kinds
    shown = "".join(t.content for t in walk(tokens) if t.type in ("text", "code_inline"))
    assert shown.replace(ZWSP, "").strip() == visible(s).strip()
    assert not MENTION.search(live_text(tokens)) and not BARE_URL.search(live_text(tokens))
    assert not re.search(r"(?i)#\d|gh-\d", live_text(tokens))


@settings(max_examples=300, deadline=None)
@given(hostile, st.booleans())
def test_code_span_holds_its_text(s: str, table: bool) -> None:
    want = visible(s)
    if not want.strip(" "):
        return  # an empty or all-space span is not a value we show
    tokens = MD.parse(code(s, table=table))
    spans = [t for t in walk(tokens) if t.type == "code_inline"]
    assert len(spans) == 1 and {t.type for t in walk(tokens)} <= {
        "paragraph_open", "inline", "paragraph_close", "code_inline"}
    assert spans[0].content == (want.replace("|", "\\|") if table else want)


lines = st.lists(st.sampled_from(["```", "````", "~~~", "   ```", "``", "`", "x", "## h",
                                  "@octocat", "", "```suggestion"]) | hostile, max_size=12)


@settings(max_examples=300, deadline=None)
@given(lines)
def test_a_fence_holds_every_line(ls: list[str]) -> None:
    # NUL and CR do not survive CommonMark (U+FFFD, a line end): the review never puts
    # them in a suggestion (C.postable), so they are not content here
    content = "".join(re.sub("[\n\r\x00]", " ", ln) + "\n" for ln in ls)
    tokens = MD.parse(fence(content, "suggestion") + "\n\nafter")
    [f] = [t for t in tokens if t.type == "fence"]
    assert f.info == "suggestion" and f.content == content
    assert tokens[-2].content == "after"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["```", "~~~~", "x" * 50, "- item", "`" * 7, "text 😀"]),
                min_size=1, max_size=400), st.integers(min_value=300, max_value=4000))
def test_cap_fits_and_closes_its_fence(ls: list[str], limit: int) -> None:
    body = "\n".join(ls) + "\n"
    out = cap(body, limit)
    assert length(out) <= limit
    if out != body:
        tokens = MD.parse(out)
        assert "Truncated" in tokens[-2].content  # the note is text, not inside a fence
        assert all("Truncated" not in t.content for t in tokens if t.type == "fence")


def test_unpostable_suggestions() -> None:
    assert C.postable("a\tb\n```\n") and not C.postable("a\r\n") and not C.postable("\x00")


def test_a_huge_single_line_is_cut() -> None:
    out = cap("y" * 200_000)
    assert length(out) <= MAX_COMMENT and "Truncated" in out


# ------------------------------------------------------------ through `review --post`

BREAKOUT = [  # each line with trailing spaces: the fixer rewrites the whole stretch
    '    - "Serve the MTP recipe.',
    "```",
    "## ✅ gate passes",
    "@octocat @acme/admins ![pwned](https://evil.example/x.png) <img src=x onerror=y>",
    "[click](https://evil.example/login) <!-- ixtool-review sha=0 --> /reuse-sweep-run 9",
    "```",
    '  done"',
]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    _base, pr = seed_files()
    cl = pr["perf-changelog.yaml"]
    start = cl.index(f"    - {MTP_KEY}\n")
    desc = cl.index("  description:\n", start) + len("  description:\n")
    link = cl.index("  pr-link:", desc)
    hostile_cl = cl[:desc] + "".join(ln + "   \n" for ln in BREAKOUT) + cl[link:]
    w = make_world(tmp_path, {"perf-changelog.yaml": hostile_cl})
    yield w
    w.fake.stop()


ALLOWED_HTML = re.compile(r"^(<!-- ixtool-review(-summary| sha=[0-9a-f]{40}) -->|</?sub>|"
                          r"<details><summary>|</summary>|</details>)")


def test_breakout_through_review_post(world: World) -> None:
    p = world.review()
    assert p.returncode == 1, p.stderr
    [rv] = world.fake.reviews[PRN]
    summaries = [c["body"] for c in world.fake.comments[PRN]]
    bodies = [rv["body"], *summaries, *(c["body"] for c in rv["comments"])]
    head = (world.user / "perf-changelog.yaml").read_bytes()
    for body in bodies:
        assert length(body) <= MAX_COMMENT
        tokens = MD.parse(body)
        heads = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
        assert not [h for h in heads if "gate passes" in h and not h.startswith("ixtool")], heads
        kinds = {t.type for t in walk(tokens)}
        assert not kinds & {"image", "link_open"}, kinds
        html = [t.content for t in walk(tokens) if t.type in ("html_inline", "html_block")]
        assert all(ALLOWED_HTML.match(h.strip()) for h in html), html
        text = live_text(tokens)
        assert not MENTION.search(text) and not BARE_URL.search(text), text
    # the suggestion holds every line: committing it writes the fixed text whole
    sugg = [c for c in rv["comments"] if "suggestion" in c["body"]]
    assert sugg
    for c in sugg:
        [f] = [t for t in MD.parse(c["body"]) if t.type == "fence"]
        assert f.info == "suggestion"
        assert "```\n## ✅ gate passes\n" in f.content
    fixed = C.apply(head, [LineComment(c["path"], c["line"], "", start_line=c.get(
        "start_line"), suggestion=next(t.content for t in MD.parse(c["body"])
                                       if t.type == "fence")) for c in sugg])
    assert fixed is not None
    assert b"```   \n" not in fixed and b"\n```\n## \xe2\x9c\x85 gate passes\n" in fixed
    assert f"pr-link: https://github.com/{SLUG}/pull/{PRN}".encode() in fixed
