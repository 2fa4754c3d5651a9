"""The pure parts of ixtool review, case by case (positive and negative)."""

from __future__ import annotations

import pytest

import inferencex_tools.changelog.rules
import inferencex_tools.policy.rules  # noqa: F401  (registers PO403)
from inferencex_tools.report.findings import RULES
from inferencex_tools.review import comments as C
from inferencex_tools.review import shape as S
from inferencex_tools.review.glance import arm_label, label_advice, mermaid
from inferencex_tools.review.golden import SUMMARY_RX, engine_value, from_policy_rows
from inferencex_tools.review.model import CHECKLIST_PHRASE, ArmLine


@pytest.mark.parametrize(("argv", "want"), [
    (["serve", "m", "--port", "8888", "--enable-x"], {"--port": "8888", "--enable-x": "true"}),
    (["--gpu_memory_utilization=0.9", "--a", "--b", "1"],
     {"--gpu-memory-utilization": "0.9", "--a": "true", "--b": "1"}),
    (["--x", "1", "--x", "2"], {"--x": "2"}),
    ([], {}),
    # the engines' aliases are one option: SGLang --tp/--dp/--ep-size, vLLM -tp
    (["--tp", "4", "--dp=1", "--ep-size", "2", "-pp", "1"],
     {"--tensor-parallel-size": "4", "--data-parallel-size": "1",
      "--expert-parallel-size": "2", "--pipeline-parallel-size": "1"}),
    (["-x", "1"], {}),  # other single-dash options stay unparsed
])
def test_flags(argv: list[str], want: dict[str, str]) -> None:
    assert S.flags(argv) == want


@pytest.mark.parametrize(("capture", "seqs", "k", "want"), [
    ("8", "2", 3, "MAX_NUM_SEQS*(1+3) (8)"),
    ("2", "2", None, "MAX_NUM_SEQS (2)"),
    ("6", "2", 3, "MAX_NUM_SEQS*3 (6)"),
    ("5", "2", 3, "5"),
    ("8", None, 3, "8"),
])
def test_capture_expr(capture: str, seqs: str | None, k: int | None, want: str) -> None:
    assert S.capture_expr(capture, seqs, k) == want


@pytest.mark.parametrize(("name", "kind", "cat"), [
    ("--speculative-config", "arg", "spec"), ("--speculative-num-steps", "arg", "spec"),
    ("--gpu-memory-utilization", "arg", "memory"), ("--mem-fraction-static", "arg", "memory"),
    ("--max-cudagraph-capture-size", "arg", "capture"), ("--cuda-graph-max-bs", "arg", "capture"),
    ("--max-num-seqs", "arg", "seqs"), ("--max-running-requests", "arg", "seqs"),
    ("--block-size", "arg", "other"), ("SGLANG_SIMULATE_ACC_LEN", "env", "spec"),
    ("NCCL_DEBUG", "env", "other"),
])
def test_category(name: str, kind: str, cat: str) -> None:
    assert S.category(kind, name) == cat


def _cfg(model: str = "m", gpu: str = "cluster:h200-dgxc", fw: str = "vllm",
         spec: str = "mtp", scen: str = "agentic-coding") -> dict[str, object]:
    return {"model": model, "precision": "fp8", "runner": gpu, "framework": fw,
            "scenarios": {scen: [{"search-space": [{"tp": 8, "spec-decoding": spec}]}]}}


def test_siblings_and_same_sku() -> None:
    configs = {
        "a-mtp": _cfg(), "a": _cfg(spec="none"), "a-fixed-mtp": _cfg(scen="fixed-seq-len"),
        "a-twin": _cfg(),  # same shape, same scenario and spec: not a sibling
        "other-gpu": _cfg(gpu="b200-dsv4", spec="none"), "other-fw": _cfg(fw="sglang"),
        "other-model-mtp": _cfg(model="n"),
    }
    assert S.siblings("a-mtp", configs) == ["a"]  # a-fixed-mtp: another scenario type
    assert S.same_sku_spec("a-mtp", configs) == ["a-fixed-mtp", "a-twin", "other-model-mtp"]
    assert S.gpu_of({"runner": "cluster:gb300-nv"}) == "gb300"
    assert S.gpu_of({"runner": "h100"}) == "h100"


def _launch(key: str, mem: str | None, spec: bool = True) -> S.Launch:
    argv = ["serve", "m"] + (["--gpu-memory-utilization", mem] if mem else [])
    return S.Launch(key, "tp8", f"{key}.sh", tuple(argv), {}, spec, 3)


@pytest.mark.parametrize(("ours", "proven", "non_spec", "fires"), [
    ("0.95", [], ["0.95"], True),       # inherited from the non-spec sibling
    ("0.95", [], ["0.90"], True),       # above the non-spec sibling too
    ("0.90", [], ["0.95"], False),      # headroom left for the drafter
    ("0.95", ["0.90"], ["0.95"], True),  # above every proven spec recipe
    ("0.90", ["0.90", "0.88"], ["0.95"], False),
    ("0.92", ["0.90", "0.93"], [], False),
    (None, [], ["0.95"], False),         # no memory flag: nothing to compare
])
def test_memory_warning(ours: str | None, proven: list[str], non_spec: list[str],
                        fires: bool) -> None:
    f = S.memory_warning(_launch("k", ours), [_launch(f"p{i}", v) for i, v in enumerate(proven)],
                         [_launch(f"n{i}", v, False) for i, v in enumerate(non_spec)],
                         {"k.sh": "x\n  --gpu-memory-utilization 0.95\n"})
    assert (f is not None) == fires
    if f is not None:
        assert f.rule == "PO501" and f.line == 2 and "#2423" in (f.hint or "")


def test_non_spec_recipe_never_warns() -> None:
    assert S.memory_warning(_launch("k", "0.99", spec=False), [], [_launch("n", "0.5", False)],
                            {}) is None


def test_diff_and_notes() -> None:
    ours = S.Launch("k", "tp8", "k.sh", ("serve", "m", "--max-num-seqs", "2",
                                          "--max-cudagraph-capture-size", "8",
                                          "--speculative-config", "{}", "--block-size", "64"),
                    {"A": "1"}, True, 3)
    theirs = S.Launch("s", "tp8", "s.sh", ("serve", "m", "--max-num-seqs", "2",
                                            "--max-cudagraph-capture-size", "2",
                                            "--block-size", "128"), {}, False, None)
    d = S.diff(ours, theirs)
    cats = {i.name: i.category for i in d.items}
    assert cats == {"--block-size": "other", "--max-cudagraph-capture-size": "capture",
                    "--speculative-config": "spec", "A": "other"}
    cap = next(i for i in d.items if i.category == "capture")
    assert (cap.ours, cap.theirs) == ("MAX_NUM_SEQS*(1+3) (8)", "MAX_NUM_SEQS (2)")
    [note] = S.delta_notes([d], {"k.sh": "a\n  --block-size 64\n"})
    assert note.rule == "PO502" and note.line == 2 and "--block-size, A" in note.message
    same = S.diff(ours, ours)
    assert same.items == [] and S.delta_notes([same], {}) == []


def test_suggestions_cover_the_findings_on_their_lines() -> None:
    head = b"a\n  pr-link: TBD\nb\n"
    fixed = b"a\n  pr-link: https://x/pull/1\nb\n"
    f = RULES["CL502"].at("cl.yaml", 2, 1, "placeholder")
    other = RULES["CL502"].at("cl.yaml", 3, 1, "elsewhere")
    cs, covered = C.suggestions("cl.yaml", head, fixed, [f, other], {2, 3}, "fix")
    assert len(cs) == 1 and cs[0].line == 2 and cs[0].suggestion == "  pr-link: https://x/pull/1\n"
    assert covered == [f] and cs[0].rules == ["CL502"]
    assert cs[0].api() == {"path": "cl.yaml", "line": 2, "side": "RIGHT",
                           "body": cs[0].markdown()}
    # a change outside the commentable lines is not suggested
    assert C.suggestions("cl.yaml", head, fixed, [f], {3}, "fix") == ([], [])


def test_multiline_and_insertion_suggestions() -> None:
    head = b"a\nb\nc\n"
    cs, _ = C.suggestions("f", head, b"a\nB\nC\n", [], {1, 2, 3}, "why")
    assert [(c.start_line, c.line, c.suggestion) for c in cs] == [(2, 3, "B\nC\n")]
    assert cs[0].api()["start_line"] == 2
    cs, _ = C.suggestions("f", head, b"a\nb\nc\nd\n", [], {1, 2, 3}, "why")
    assert [(c.line, c.suggestion) for c in cs] == [(3, "c\nd\n")]


def test_line_comments() -> None:
    f = RULES["PO403"].at("s.sh", 2, 1, "bad AL", hint="use 2.83")
    g = RULES["PO403"].at("s.sh", 9, 1, "elsewhere")
    cs, rest = C.line_comments([f, g], {"s.sh": {2}})
    assert [c.line for c in cs] == [2] and "> use 2.83" in cs[0].body and rest == [g]


@pytest.mark.parametrize(("text", "line", "old", "new", "want"), [
    ("X=1\nGOLDEN_AL=2.83\n", 2, "2.83", "2.78", "GOLDEN_AL=2.78\n"),
    ("A=2.83 B=2.83\n", 1, "2.83", "2.78", None),  # ambiguous
    ("A=1\n", 1, "2.83", "2.78", None),
    ("A=2.83\n", 5, "2.83", "2.78", None),
])
def test_value_suggestion(text: str, line: int, old: str, new: str, want: str | None) -> None:
    c = C.value_suggestion("s.sh", text, line, old, new, "b", ["PO406"])
    assert (c.suggestion if c else None) == want


@pytest.mark.parametrize(("labels", "body", "comments", "present", "advice"), [
    ([], "", [], False, "full-sweep-fail-fast"),
    (["full-sweep-enabled"], CHECKLIST_PHRASE.upper(), [], True, "nothing to add"),
    (["sweep-enabled"], "x", [f"ok {CHECKLIST_PHRASE}"], True, "trimmed"),
    (["full-sweep-enabled", "full-sweep-fail-fast"], None, [], None, "exactly one"),
])
def test_label_advice(labels: list[str], body: str | None, comments: list[str],
                      present: bool | None, advice: str) -> None:
    la = label_advice(labels, body, comments)
    assert la.checklist_present is present and advice in la.advice


def test_arm_label_and_chart() -> None:
    assert arm_label({"tp": 8, "ep": 8, "kv-offloading": "dram"}) == "tp8 ep8 kv=dram"
    assert arm_label({"tp": 4, "ep": 1, "dp-attn": True, "isl": 1024, "osl": 1024}) == \
        "tp4 dpa 1024/1024"
    chart = mermaid([ArmLine("k", "tp8", "throughput", [1], 5, 8, 40.0),
                     ArmLine("k", "tp8", "eval", [16], 1, 8, 8.0)])
    assert 'x-axis ["tp8"]' in chart and "bar [5]" in chart
    assert mermaid([ArmLine("k", "tp8", "eval", [16], 1, 8, 8.0)]) == ""


def test_golden_rows_from_policy_rows() -> None:
    launch = ("vllm eagle3, draft Inferact/MiniMax-M3-EAGLE3, K=3, synthetic "
              "synthetic_acceptance_length=2.83")
    rows = [{"config-key": "k", "entry": e, "conc": c, "mode": "throughput", "launch": launch,
             "thinking": "thinking_on", "registry-row": "r", "expected": "thinking_on 2.83",
             "verdict": "ok"} for e in ("tp8", "tp8 ep8") for c in (1, 4)]
    rows.append({"config-key": "k", "entry": "tp8", "conc": 16, "mode": "eval",
                 "launch": "vllm eagle3, draft Inferact/MiniMax-M3-EAGLE3, K=3, real "
                 "verification", "thinking": None, "registry-row": None, "expected": None,
                 "verdict": "ok"})
    rows.append({"config-key": "other", "launch": launch, "mode": "throughput"})
    tput, ev = from_policy_rows("k", rows, None)
    assert (tput.rows, tput.arms, tput.k, tput.golden, tput.setting, tput.seen) == (
        4, ["tp8", "tp8 ep8"], 3, 2.83, "synthetic_acceptance_length",
        "synthetic_acceptance_length=2.83")
    assert (ev.mode, ev.rows, ev.golden, ev.seen) == ("eval", 1, None, None)
    assert SUMMARY_RX.match("vllm mtp, draft (native), K=?, real verification")


@pytest.mark.parametrize(("raw", "al", "k", "want"), [
    ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.83", 2.83, 3, 1.83),
    ("--spec-decode-acceptance-rate=0.61", 2.83, 3, 0.61),
    ("SGLANG_SIMULATE_ACC_LEN=3.39", 3.39, 3, 3.39),
])
def test_engine_value(raw: str, al: float, k: int, want: float) -> None:
    assert engine_value(raw, al, k)[0] == want


@pytest.mark.parametrize(("a", "b"), [
    ("abc", "abxc"), ("abc", "ab"), ("", "ab"), ("abc", "xbc"), ("aaaa", "aaaaa"),
    ("abcabc", "abXabcY"), ("ab", "ab"),
])
def test_opcodes_equal_difflib(a: str, b: str) -> None:
    import difflib

    want = [op for op in difflib.SequenceMatcher(None, list(a), list(b),
                                                 autojunk=False).get_opcodes()
            if op[0] != "equal"]
    got = C.opcodes(list(a), list(b))
    # the same edit: applying either to a gives b
    def apply(ops: list[tuple[str, int, int, int, int]]) -> str:
        out, pos = [], 0
        for _t, i1, i2, j1, j2 in ops:
            out += a[pos:i1] + b[j1:j2]
            pos = i2
        return "".join(out) + a[pos:]
    assert apply(got) == apply(want) == b


@pytest.mark.parametrize(("ours", "theirs", "names"), [
    # aliases, numerically equal values and default parallelism are no delta
    (["--tp", "4", "--dp", "1", "--mem-fraction-static", "0.80"],
     ["--tensor-parallel-size", "4", "--mem-fraction-static", "0.8"], []),
    (["--ep-size", "1"], [], []),
    # a real difference stays one
    (["--tp", "4"], ["--tensor-parallel-size", "8"], ["--tensor-parallel-size"]),
    (["--ep-size", "8"], [], ["--expert-parallel-size"]),
    (["--mem-fraction-static", "0.80"], ["--mem-fraction-static", "0.85"],
     ["--mem-fraction-static"]),
    (["--block-size", "64"], [], ["--block-size"]),
])
def test_diff_ignores_spelling(ours: list[str], theirs: list[str], names: list[str]) -> None:
    a = S.Launch("a", "tp4", None, tuple(ours), {}, True)
    b = S.Launch("b", "tp4", None, tuple(theirs), {}, False)
    assert [i.name for i in S.diff(a, b).items] == names
