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


# ------------------------------------------------------------------ FieldValues

def _prefixes_by_whole_parse(files: list[tuple[str, bytes]]) -> set[str]:
    out: set[str] = set()
    for label, raw in files:
        try:
            doc = load_safe(raw, source=label)
        except YamlError:
            continue
        if isinstance(doc, dict):
            out.update(str(v["model-prefix"]) for v in doc.values()
                       if isinstance(v, dict) and v.get("model-prefix"))
    return out


FIELD_FILES = [
    ("plain", "a:\n  model-prefix: dsv4\n  image: x\nb:\n  model-prefix: qwen3.5\n"),
    ("quoted and commented",
     "a:\n  model-prefix: 'kimik3'  # note\nb:\n  image: \"dsv4-lite\"\n  model-prefix: \"glm\"\n"),
    ("escaped (parsed at once)", "a:\n  model-prefix: \"d\\x73v9\"\n"),
    ("alias in its block", "a:\n  x: &p mm\n  model-prefix: *p\n"),
    ("merge in its block", "a:\n  base: &b {model-prefix: merged}\n  <<: *b\n"),
    ("typed values", "a:\n  model-prefix: 0x1F\nb:\n  model-prefix: true\n"
     "c:\n  model-prefix: 1e5\nd:\n  model-prefix: ~\ne:\n  model-prefix: 2024-1-2\n"),
    ("not a mapping entry", "a: dsv4\nb:\n  - model-prefix: listed\n"),
    ("unsplittable file", "{a: {model-prefix: flowy}}\n"),
    ("block that does not load", "a:\n  model-prefix: broken\n  x: [1\nb:\n  model-prefix: ok\n"),
    ("nested mention only", "a:\n  image: img\n  notes:\n    model-prefix: nested\n"),
]
ASKED = ["dsv4", "qwen3.5", "kimik3", "glm", "dsv4-lite", "dsv9", "mm", "merged", "31",
         "True", "100000.0", "2024-01-02", "listed", "flowy", "broken", "nested", "image",
         "img", "None", "absent", "inf", "d", "a"]


@pytest.mark.parametrize("name,text", FIELD_FILES, ids=[f[0] for f in FIELD_FILES])
def test_field_values_answer_as_a_whole_parse(name: str, text: str) -> None:
    files = [(f"{name}.yaml", text.encode())]
    want = _prefixes_by_whole_parse(files)
    # each value asked first (a fresh lookup) and all in one lookup, in two orders
    assert {v for v in ASKED if v in B.FieldValues(files, "model-prefix")} == \
        {v for v in ASKED if v in want}
    for order in (ASKED, ASKED[::-1]):
        got = B.FieldValues(files, "model-prefix")
        assert {v for v in order if v in got} == {v for v in order if v in want}


def test_field_values_parse_only_the_blocks_that_spell_the_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = "".join(f"k{i}:\n  model-prefix: m{i % 3}\n  image: x\n" for i in range(30))
    parsed: list[str] = []
    real = B.parse_block

    def spy(block: B.Block, source: str) -> object:
        parsed.append(block.key)
        return real(block, source)

    monkeypatch.setattr(B, "parse_block", spy)
    got = B.FieldValues([("f.yaml", text.encode())], "model-prefix")
    assert "m1" in got and parsed == ["k1"]
    assert "zz" not in got and parsed == ["k1"]  # spelled nowhere: nothing parsed
    assert "x" not in got and len(parsed) == 1 + 29  # every other block says image: x


def test_field_values_on_the_real_master_configs(corpus: Path) -> None:
    files = [(p.name, p.read_bytes()) for p in sorted((corpus / "configs").glob("*-master.yaml"))]
    want = _prefixes_by_whole_parse(files)
    got = B.FieldValues(files, "model-prefix")
    assert want and all(v in got for v in sorted(want))
    for v in ("dsv4_mtp", "minimaxm3_eagle3", "kimik3_dspark", "nvidia", "b200", "fp8"):
        assert (v in got) == (v in want)
