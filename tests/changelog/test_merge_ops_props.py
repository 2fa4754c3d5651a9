"""Property tests: generated valid histories, PR appends and main appends.

canonicalize and resolve_conflict never alter the base / main bytes, are idempotent,
and their output passes the strict gate (analyze_change in PR mode).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferencex_tools.changelog.merge_ops import canonicalize, resolve_conflict
from inferencex_tools.changelog.model import parse
from inferencex_tools.changelog.validate import Options, analyze_change
from inferencex_tools.report.findings import Severity

REPOS = ["SemiAnalysisAI/InferenceX", "example-org/bench"]
KEYS = ["dsr1-fp8-b200-sglang", "gptoss-fp4-h200-vllm", "dsv4-fp4-*-vllm", "kimik2.5-fp4-b200",
        "qwen3.5-fp8-mi355x-sglang"]
# YAML-printable text (C1 controls are not allowed raw in YAML; add.py escapes them)
TEXT = st.text(alphabet=st.one_of(st.characters(min_codepoint=32, max_codepoint=0x7E),
                                  st.characters(min_codepoint=0xA0, max_codepoint=0x24F),
                                  st.sampled_from("中文 ✓")), min_size=1, max_size=30)
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Spec:
    keys: tuple[str, ...]
    descriptions: tuple[str, ...]
    scenario: str | None
    evals_only: bool


SPECS = st.builds(
    Spec,
    keys=st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True).map(tuple),
    descriptions=st.lists(TEXT, min_size=1, max_size=3).map(tuple),
    scenario=st.sampled_from([None, "fixed-seq-len", "agentic-coding"]),
    evals_only=st.booleans(),
)


def render(spec: Spec, link: str, *, folded: bool = False, trailing: str = "") -> str:
    out = ["- config-keys:"]
    out += [f'    - "{k}"' if k.startswith("*") else f"    - {k}" for k in spec.keys]
    if spec.scenario:
        out += ["  scenario-type:", f"    - {spec.scenario}"]
    out.append("  description:")
    out += [f"    - {json.dumps(d, ensure_ascii=False)}" for d in spec.descriptions]
    if spec.evals_only:
        out.append("  evals-only: true")
    out += ["  pr-link:", f"    {link}"] if folded else [f"  pr-link: {link}{trailing}"]
    return "\n".join(out) + "\n"


# History separators seen in the real file (spec §1.1); new appends use "\n".
HISTORY_SEPS = st.sampled_from(["\n", "\n", "\n", "  \n", "\n  \n", "\n\n", "\n \n"])


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[bytes, bytes, bytes, int, str]:
    """(base, PR head, main head, pr, repo)."""
    repo = draw(st.sampled_from(REPOS))
    pr = draw(st.integers(min_value=100, max_value=99999))  # history uses 1..5
    hist = draw(st.lists(SPECS, min_size=1, max_size=5))
    base = ""
    for i, s in enumerate(hist):
        if i:
            base += draw(HISTORY_SEPS)
        base += render(s, f"https://github.com/{repo}/pull/{i + 1}",
                       trailing=draw(st.sampled_from(["", "", "  "])))
    if draw(st.booleans()):
        base += draw(st.sampled_from(["  \n", "\n"]))  # whitespace-only / empty tail line
    placeholders = ["XXX", f"https://github.com/{repo}/pull/XXX",
                    f"https://github.com/{repo}/pull/{pr}"]
    pr_specs = draw(st.lists(SPECS, min_size=1, max_size=3))
    sep = "" if base.endswith("\n\n") else "\n"
    blocks = [render(s, draw(st.sampled_from(placeholders)), folded=draw(st.booleans()))
              for s in pr_specs]
    head = base + sep + "\n".join(blocks)
    main_specs = draw(st.lists(st.one_of(SPECS, st.sampled_from(pr_specs)), max_size=3))
    main_blocks = [render(s, f"https://github.com/{repo}/pull/{pr + 1 + i}")
                   for i, s in enumerate(main_specs)]  # other PRs, maybe same content (G10)
    main = base + (sep + "\n".join(main_blocks) if main_blocks else "")
    return base.encode(), head.encode(), main.encode(), pr, repo


def _errors(base: bytes, head: bytes, pr: int, repo: str) -> list[str]:
    a = analyze_change(base, head, "f", Options(repo=repo, pr=pr, master_keys=None))
    return [f"{f.rule} {f.message}" for f in a.findings if f.severity is Severity.ERROR]


def _links(raw: bytes) -> list[str]:
    return [e.link for e in parse(raw, "x").entries]


@SETTINGS
@given(scenarios())
def test_canonicalize_properties(case: tuple[bytes, bytes, bytes, int, str]) -> None:
    base, head, _, pr, repo = case
    assert _errors(base, head, pr, repo) == [] or b"pr-link:\n" in head  # folded: G11
    out = canonicalize(base, head, pr=pr, repo=repo)
    assert out.data.startswith(base)
    assert _errors(base, out.data, pr, repo) == []
    n_base = len(parse(base, "b").entries)
    assert set(_links(out.data)[n_base:]) == {f"https://github.com/{repo}/pull/{pr}"}
    # entries are the PR's, apart from their links
    strip = [{k: v for k, v in e.mapping.items() if k != "pr-link"}
             for e in parse(out.data, "o").entries]
    assert strip == [{k: v for k, v in e.mapping.items() if k != "pr-link"}
                     for e in parse(head, "h").entries]
    again = canonicalize(base, out.data, pr=pr, repo=repo)
    assert again.data == out.data and not again.changed
    assert again.message.startswith("already canonical")


@SETTINGS
@given(scenarios())
def test_resolve_properties(case: tuple[bytes, bytes, bytes, int, str]) -> None:
    base, head, main, pr, repo = case
    out = resolve_conflict(base, head, main, pr=pr, repo=repo)
    assert out.data.startswith(main)
    assert _errors(main, out.data, pr, repo) == []
    n_main, n_pr = len(parse(main, "m").entries), len(parse(head, "h").entries)
    n_base = len(parse(base, "b").entries)
    # nothing is dropped: main's same-content entries belong to other PRs (G10)
    assert len(parse(out.data, "o").entries) == n_main + (n_pr - n_base)
    assert set(_links(out.data)[n_main:]) == {f"https://github.com/{repo}/pull/{pr}"}
    # idempotent: merging the same main into the resolved branch again changes nothing
    assert resolve_conflict(main, out.data, main, pr=pr, repo=repo).data == out.data
    # main did not move: the resolution is exactly the canonicalized PR head
    if main == base:
        assert out.data == canonicalize(base, head, pr=pr, repo=repo).data


MUTATIONS = st.sampled_from([b"", b"\n", b"  ", b"\t", b"\r", b"- config-keys:\n", b"#", b":",
                             b"  pr-link: XXX\n", b"\xff", b"&a ", b"*a", b"\"", b"    - x\n"])


@SETTINGS
@given(scenarios(), st.data())
def test_mutated_inputs_refuse_or_stay_sound(case: tuple[bytes, bytes, bytes, int, str],
                                             data: st.DataObject) -> None:
    """Arbitrary edits anywhere in the PR head: a clean ConflictError, or a result that
    keeps the base/main bytes and passes the gate — never a crash, never a bad file."""
    from inferencex_tools.errors import ConflictError

    base, head, main, pr, repo = case
    pos = data.draw(st.integers(min_value=0, max_value=len(head)))
    cut = data.draw(st.integers(min_value=0, max_value=min(8, len(head) - pos)))
    bad = head[:pos] + data.draw(MUTATIONS) + head[pos + cut:]
    try:
        out = canonicalize(base, bad, pr=pr, repo=repo)
    except ConflictError as exc:
        assert exc.message.startswith("perf-changelog.yaml: refusing to canonicalize")
    else:
        assert out.data.startswith(base) or out.data == bad
        assert _errors(base, out.data, pr, repo) == []
    try:
        res = resolve_conflict(base, bad, main, pr=pr, repo=repo)
    except ConflictError as exc:
        assert exc.message.startswith("perf-changelog.yaml: cannot resolve the conflict")
    else:
        assert res.data.startswith(main) or res.data.count(b"\n") == main.count(b"\n")
        assert _errors(main, res.data, pr, repo) == []
