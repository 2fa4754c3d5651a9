"""sweep.blocks.parse_like: a revision parsed relative to another one's parse must equal
its whole-file parse (or raise what the whole-file parse raises)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools.errors import YamlError
from inferencex_tools.io.yamlio import load_safe
from inferencex_tools.sweep import blocks as B

SMALL = (
    "a-key:\n  image: x\n  conc: [1, 2]\n"
    "# a comment between blocks\n"
    "b-key:\n  image: y\n  nested:\n    - {p: 1}\n"
    "c-key:\n  image: z\n"
)

# (name, head, base): base is parsed relative to head
CASES = [
    ("identical", SMALL, SMALL),
    ("value changed", SMALL, SMALL.replace("image: y", "image: yy")),
    ("key added at base", SMALL, SMALL + "d-key:\n  image: w\n"),
    ("key missing at base", SMALL, SMALL.replace("c-key:\n  image: z\n", "")),
    ("comment only", SMALL, SMALL.replace("# a comment", "# another comment")),
    ("reordered", SMALL, "c-key:\n  image: z\n" + SMALL.replace("c-key:\n  image: z\n", "")),
    ("typed scalars", SMALL, SMALL.replace("image: x", "image: 1.5\n  on: yes\n  n: ~")),
    ("anchors inside one block", SMALL,
     SMALL.replace("image: y\n", "image: &i y\n  again: *i\n")),
    ("alias across blocks (whole parse)", SMALL,
     SMALL.replace("image: x", "image: &i x").replace("image: z", "image: *i")),
    ("flow mapping at column 0 (unsplittable)", SMALL, "{a-key: {image: x}}\n"),
    ("head unsplittable", "{a-key: {image: x}}\n", SMALL),
    ("empty value", SMALL, SMALL.replace("c-key:\n  image: z\n", "c-key:\n")),
    ("block that is not its own mapping", SMALL,
     SMALL.replace("c-key:\n  image: z\n", "c-key: 1\n  image: z\n")),
]


@pytest.mark.parametrize("name,head,base", CASES, ids=[c[0] for c in CASES])
def test_parse_like_equals_whole_parse(name: str, head: str, base: str) -> None:
    try:
        want = load_safe(base, source="base")
    except YamlError as exc:
        with pytest.raises(YamlError) as got:
            B.parse_like(base.encode(), f"base-{name}", head.encode(), f"head-{name}")
        assert got.value.kind == exc.kind
        return
    got = B.parse_like(base.encode(), f"base-{name}", head.encode(), f"head-{name}")
    assert got == want
    assert list(got) == list(want)  # key order too


def test_parse_like_without_reference_is_a_whole_parse() -> None:
    assert B.parse_like(SMALL.encode(), "only", None, "none") == load_safe(SMALL)


def test_parse_like_reuses_the_reference_for_unchanged_blocks() -> None:
    """Unchanged blocks are the reference's objects (parsed once), changed ones are new."""
    from inferencex_tools.sweep.load import load_cached

    base = SMALL.replace("image: y", "image: yy")
    ref = load_cached(SMALL.encode(), "reuse-head")
    got = B.parse_like(base.encode(), "reuse-base", SMALL.encode(), "reuse-head")
    assert got["a-key"] is ref["a-key"] and got["c-key"] is ref["c-key"]
    assert got["b-key"] is not ref["b-key"] and got["b-key"]["image"] == "yy"


def test_parse_like_on_the_real_master_configs(corpus: Path) -> None:
    """Each real master config, with one block edited, removed and added."""
    for name in ("nvidia-master.yaml", "amd-master.yaml"):
        head = (corpus / "configs" / name).read_text(encoding="utf-8")
        blocks = B.split(head)
        assert blocks is not None and len(blocks) > 10
        mid = blocks[len(blocks) // 2]
        edited = head.replace(mid.text, mid.text.replace(":", ":  ", 1).replace(
            "\n", "\n  extra-note: added\n", 1))
        removed = head.replace(mid.text, "")
        added = head + "zz-new-key:\n  image: new\n"
        for base in (edited, removed, added, head):
            got = B.parse_like(base.encode(), f"base:{name}", head.encode(), f"head:{name}")
            want = load_safe(base, source=name)
            assert got == want and list(got) == list(want)
