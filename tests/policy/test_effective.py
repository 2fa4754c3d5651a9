"""What of an environment a script observes (trace deduplication)."""

from __future__ import annotations

import pytest

from inferencex_tools.policy.effective import Analyzer, key, prune, split_functions

FILES = {
    "launch.sh": """#!/bin/bash
source "$(dirname "$0")/utils.sh"
if [[ "$IS_MULTINODE" == "true" ]]; then
    echo "$RESULT_FILENAME"
if [[ $X == 1 ]]; then
    echo nested
fi
else
    SCRIPT=benchmarks/${EXP_NAME%%_*}_${PRECISION}.sh
    helper
    srun bash "$SCRIPT"
fi
""",
    "utils.sh": """helper() { echo "$TP"; }
unused() { echo "$NEVER_CALLED"; }
run_eval() { echo "$REPLACED_BODY"; }
""",
}


def analyzer() -> Analyzer:
    return Analyzer(FILES.get, {n: [n] for n in FILES})


def test_closure_prunes_branches_and_unreached_functions() -> None:
    c = analyzer().closure("launch.sh", {"IS_MULTINODE": "false"})
    assert c.files == ("launch.sh", "utils.sh") and not c.everything
    assert {"TP", "PRECISION"} <= c.plain
    assert not {"RESULT_FILENAME", "NEVER_CALLED", "REPLACED_BODY", "CONC"} & c.plain
    assert c.projections["EXP_NAME"] == ("EXP_NAME%%_*",)


def test_key_ignores_what_the_script_cannot_see() -> None:
    an = analyzer()
    base = {"IS_MULTINODE": "false", "TP": "8", "PRECISION": "fp8", "CONC": "4",
            "EXP_NAME": "minimaxm3_tp8_conc4", "RESULT_FILENAME": "x_conc4"}
    other = {**base, "CONC": "8", "EXP_NAME": "minimaxm3_tp8_conc8", "RESULT_FILENAME": "x8"}
    c = an.closure("launch.sh", base)
    assert key(base, c) == key(other, c)
    assert key(base, c) != key({**base, "TP": "4"}, c)
    assert key(base, c) != key({**base, "EXP_NAME": "qwen_tp8"}, c)
    # the multinode branch reads RESULT_FILENAME: no longer the same observation
    mn = {**base, "IS_MULTINODE": "true"}
    cm = an.closure("launch.sh", mn)
    assert key(mn, cm) != key({**mn, "RESULT_FILENAME": "y"}, cm)


@pytest.mark.parametrize("text", ["eval \"$CMD\"\n", "x=$(printenv)\n", "declare -p\n"])
def test_dynamic_reads_make_everything_observed(text: str) -> None:
    an = Analyzer({"s.sh": text}.get, {"s.sh": ["s.sh"]})
    c = an.closure("s.sh", {})
    assert c.everything and key({"A": "1"}, c) != key({"A": "2"}, c)


def test_prune_keeps_assigned_conditions_and_heredocs() -> None:
    text = "M=true\nif [ \"$M\" = true ]; then\na=$A\nelse\nb=$B\nfi\n"
    assert "b=$B" in prune(text, {"M": "false"})  # M is assigned by the script: kept
    text2 = "cat <<EOF\nif x\nEOF\nif [ -n \"$Q\" ]; then\nq=$Q1\nfi\n"
    assert prune(text2, {}) .splitlines()[:3] == ["cat <<EOF", "if x", "EOF"]
    assert "q=$Q1" not in prune(text2, {})


def test_split_functions() -> None:
    top, funcs = split_functions("a=1\nf() {\n  echo $X\n}\ng()\n{\n  y\n}\nh() (\n z\n)\nb=2\n")
    assert top.split() == ["a=1", "b=2"] and set(funcs) == {"f", "g", "h"}
