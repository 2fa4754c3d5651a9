"""The event-driven fast path of ``load_safe`` is indistinguishable from ruamel's safe
constructor: same values (types included), same errors, on real files, the fuzz corpus,
hand-picked edge cases and generated documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferencex_tools.errors import YamlError
from inferencex_tools.io import yamlio

FUZZ_CORPUS = Path(__file__).resolve().parents[1] / "fuzz" / "corpus"


def _reference(text: str) -> tuple[str, Any]:
    """ruamel's own safe constructor (the path every fallback takes)."""
    try:
        data = yamlio._load("safe", text, "x", yamlio.DEFAULT_LIMITS, fast=False)
    except YamlError as exc:
        return ("error", exc.message)
    return ("ok", _typed(data))


def _typed(v: Any) -> Any:
    """A comparable rendering that keeps types (1 vs True vs 1.0) and key order."""
    if isinstance(v, dict):
        return ("map", [(_typed(k), _typed(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("seq", [_typed(x) for x in v])
    if isinstance(v, float) and v != v:
        return ("float", "nan")
    return (type(v).__name__, v)


def _fast(text: str) -> tuple[str, Any]:
    try:
        return ("ok", _typed(yamlio._fast_safe(text, yamlio.DEFAULT_LIMITS)))
    except yamlio._Fallback:
        return ("fallback", None)
    except Exception as exc:
        return ("error", type(exc).__name__)


def _agree(text: str) -> str:
    fast = _fast(text)
    ref = _reference(text)
    if fast[0] == "ok":
        assert ref == fast, text
    # whatever the fast path did, the public function answers as ruamel does
    try:
        public: tuple[str, Any] = ("ok", _typed(yamlio.load_safe(text, source="x")))
    except YamlError as exc:
        public = ("error", exc.message)
    assert public == ref, text
    return fast[0]


EDGE = [
    "", "---\n", "a: 1\n", "- 1\n- 1.5\n- 1e3\n- .inf\n- -.inf\n- .nan\n- 0x1f\n- 0o17\n- 012\n",
    "- true\n- True\n- TRUE\n- yes\n- no\n- on\n- off\n- y\n- n\n",
    "- null\n- Null\n- NULL\n- ~\n-\n- ''\n- \"\"\n",
    "- 2025-01-01\n- 2025-01-01 10:00:00\n- 2025-01-01T10:00:00Z\n",
    "- 1_000\n- +12\n- -0\n- 0b101\n- 1.\n- .5\n- 1e-3\n- 6.8523015e+5\n",
    "a: &x 1\nb: *x\n", "a: !!str 1\n", "a: !!binary aGVsbG8=\n", "<<: {a: 1}\n",
    "a: 1\na: 2\n", "? [a]\n: 1\n", "? {a: 1}\n: 2\n", "1: a\n1.0: b\n", "true: 1\n1: 2\n",
    "%YAML 1.1\n---\na: yes\n", "%TAG !e! tag:example.com,2000:\n---\na: 1\n",
    "a: 1\n---\nb: 2\n", "a: [1, 2, {b: c}]\nd: {e: [f]}\n", "'<<': 1\n", "a: =\n",
    "a: !\n", "a: ! x\n", "[a, b]: c\n", "{a: 1}\n", "[1, [2, [3]]]\n",
    "a: |\n  x\n  y\nb: >\n  z\n", "a: 'it''s'\nb: \"\\u00e9\\n\"\n",
    "a:\n  - b: 1\n    c: [x, y]\n  - d\n", "key with spaces: value: with colon\n",
    "a: 1\n  b: 2\n", "[unclosed\n", "a: b: c\n", "- a\nb: c\n", "\ufeffa: 1\n",
    "a: 0.1\nb: 0.75\nc: 1.25\nd: -2.0\n", "a: 1e400\n", "x: 99999999999999999999999\n",
    "a: *missing\n", "&a [*a]\n", "a: !!set {x, y}\n", "a: !!omap [{x: 1}]\n",
    "a: !!timestamp [1]\n", "!!int x\n", "a: !!bool x\n",
]


@pytest.mark.parametrize("text", EDGE)
def test_edge_cases(text: str) -> None:
    _agree(text)


def test_fast_path_handles_the_common_shapes() -> None:
    assert _fast("a: [1, 'x', {b: null}]\n")[0] == "ok"
    for text in ("a: &x 1\nb: *x\n", "a: 1\na: 2\n", "<<: {a: 1}\n", "a: !!str 1\n",
                 "%YAML 1.1\n---\na: yes\n", "a: 1\n---\nb: 2\n", "? [a]\n: 1\n"):
        assert _fast(text)[0] == "fallback", text


def test_fuzz_corpus() -> None:
    files = sorted(FUZZ_CORPUS.glob("*"))
    assert len(files) > 20
    for f in files:
        raw = f.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(text) < 2_000_000:
            _agree(text)


def test_real_files(corpus: Path) -> None:
    names = ["perf-changelog.yaml", "configs/nvidia-master.yaml", "configs/amd-master.yaml",
             "configs/runners.yaml", "configs/ci-priority.yaml"]
    for name in names:
        assert _agree((corpus / name).read_text()) == "ok", name


_scalar = st.one_of(
    st.sampled_from(["1", "-3", "0", "007", "1.5", "1e3", "true", "False", "no", "null", "~",
                     "", "x", "a b", "2025-01-01", "0x10", "0o7", ".inf", "1_0", "<<", "=",
                     "'q'", '"d\\n"', "'<<'", "yes", "!!str 3", "&a 1", "*a", "[]", "{}"]),
    st.text(alphabet="abc01.-_ :#'\"", max_size=6),
)


def _render(tree: Any, indent: int = 0) -> str:
    pad = " " * indent
    if isinstance(tree, list):
        if not tree:
            return "[]"
        return "".join(f"\n{pad}- {_render(x, indent + 2).lstrip()}" for x in tree)
    if isinstance(tree, dict):
        if not tree:
            return "{}"
        return "".join(f"\n{pad}{k}: {_render(v, indent + 2)}" for k, v in tree.items())
    return str(tree)


_tree = st.recursive(
    _scalar,
    lambda kids: st.one_of(st.lists(kids, max_size=4),
                           st.dictionaries(_scalar, kids, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tree)
def test_generated_documents(tree: Any) -> None:
    _agree(_render(tree).lstrip("\n") + "\n")


@settings(max_examples=200, deadline=None)
@given(st.lists(_scalar, max_size=6), st.lists(_scalar, max_size=6))
def test_generated_flow_documents(keys: list[str], values: list[str]) -> None:
    pairs = ", ".join(f"{k}: {v}" for k, v in zip(keys, values, strict=False))
    _agree("{" + pairs + "}\n")
    _agree("[" + ", ".join(values) + "]\n")
