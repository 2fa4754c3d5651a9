"""What of an environment a script observes (trace deduplication)."""

from __future__ import annotations

import pytest

from inferencex_tools import shellsyntax as S
from inferencex_tools.policy.effective import Analyzer, key, prune

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
run_eval() { echo "$UNCALLED_BODY"; }
""",
}


def analyzer() -> Analyzer:
    return Analyzer(FILES.get, {n: [n] for n in FILES})


def test_closure_prunes_branches_and_unreached_functions() -> None:
    c = analyzer().closure("launch.sh", {"IS_MULTINODE": "false"})
    assert c.files == ("launch.sh", "utils.sh") and not c.everything
    assert {"TP", "PRECISION"} <= c.plain
    assert not {"RESULT_FILENAME", "NEVER_CALLED", "UNCALLED_BODY", "CONC"} & c.plain
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


def test_functions_come_from_the_syntax_tree() -> None:
    text = "a=1\nf() {\n  echo $X\n}\ng()\n{\n  y\n}\nh() (\n z\n)\nb=2\n"
    an = Analyzer({"s.sh": text}.get, {"s.sh": ["s.sh"]})
    p = an.parsed("s.sh")
    assert p is not None and set(p.funcs) == {"f", "g", "h"}
    assert p.top.split() == ["a=1", ":", ":", ":", "b=2"]


# ---------------------------------------------------------------- inert variables

LIB = """check_env_vars() {
    local missing=()
    for v in "$@"; do
        if [[ -z "${!v:-}" ]]; then missing+=("$v"); fi
    done
    [[ ${#missing[@]} -eq 0 ]] || exit 1
}
show_vars() {
    for v in "$@"; do echo "${!v}"; done
}
run_benchmark_serving() { :; }
"""
INERT_HEAD = 'source "$(dirname "$0")/benchmark_lib.sh"\ncheck_env_vars MODEL CONC\n'
CLIENT = 'run_benchmark_serving --model "$MODEL" --max-concurrency "$CONC" \\\n' \
    '    --num-prompts "$((CONC * 10))"\n'


def _inert(script: str, lib: str = LIB) -> frozenset[str]:
    files = {"s.sh": script, "benchmark_lib.sh": lib}
    an = Analyzer(lambda p: files.get(p.rsplit("/", 1)[-1]),
                  {"s.sh": ["s.sh"], "benchmark_lib.sh": ["benchmarks/benchmark_lib.sh"]})
    return an.closure("s.sh", {"MODEL": "m", "CONC": "4"}).inert


PRINTED = 'echo "CONC: $CONC"\n'


@pytest.mark.parametrize("script", [
    INERT_HEAD + "vllm serve $MODEL\n" + PRINTED,
    INERT_HEAD + PRINTED + "vllm serve $MODEL\n",
    INERT_HEAD + "vllm serve $MODEL\n",  # checked for presence only
])
def test_a_value_only_printed_or_checked_is_inert(script: str) -> None:
    assert "CONC" in _inert(script)


@pytest.mark.parametrize("script", [
    # a helper of the library runs as it is: what it does with the value can steer it
    INERT_HEAD + "vllm serve $MODEL\n" + CLIENT,
    INERT_HEAD + "vllm serve $MODEL\nrun_benchmark_serving --max-concurrency ${CONC}\n",
    INERT_HEAD + "vllm serve $MODEL --max-num-seqs $CONC\n" + CLIENT,  # a server argument
    INERT_HEAD + "if [[ $CONC -ge 16 ]]; then X=1; fi\n" + CLIENT,  # a test
    INERT_HEAD + 'case "$CONC" in 4) X=1 ;; esac\n' + CLIENT,
    INERT_HEAD + "N=$((2 * CONC))\nvllm serve --n $N\n" + CLIENT,  # assigned onwards
    INERT_HEAD + 'run_benchmark_serving --n "$(calc $CONC)"\n',  # a command substitution
    INERT_HEAD + "run_benchmark_serving --n $((CONC++))\n",  # arithmetic that assigns
    INERT_HEAD + 'run_benchmark_serving --c "$CONC" > "$CONC.log"\n',  # a redirection
    INERT_HEAD + 'if true; then\n    echo "$CONC"\nfi > out.txt\n' + CLIENT,  # redirected block
    INERT_HEAD + 'x=$(\necho "$CONC"\n)\n' + CLIENT,  # captured output
    INERT_HEAD + 'cat > cfg.yaml <<EOF\nrun_benchmark_serving $CONC\nEOF\n',  # a heredoc
    INERT_HEAD + "show_vars CONC\n" + CLIENT,  # a function that reads the value by name
    INERT_HEAD + 'run_benchmark_serving() { vllm serve --n "$3"; }\n' + CLIENT,  # redefined
    INERT_HEAD + "exec > log.txt\necho $CONC\n" + CLIENT,  # stdout to a file
])
def test_a_value_that_can_steer_the_script_is_not_inert(script: str) -> None:
    assert "CONC" not in _inert(script)


def test_soft_key_merges_only_plain_numbers_of_inert_variables() -> None:
    files = {"s.sh": INERT_HEAD + "vllm serve $MODEL\n" + PRINTED, "benchmark_lib.sh": LIB}
    an = Analyzer(lambda p: files.get(p.rsplit("/", 1)[-1]),
                  {"s.sh": ["s.sh"], "benchmark_lib.sh": ["benchmarks/benchmark_lib.sh"]})
    env = {"MODEL": "m", "CONC": "4"}
    c = an.closure("s.sh", env)
    assert key(env, c) != key({**env, "CONC": "64"}, c)
    assert key(env, c, soft=True) == key({**env, "CONC": "64"}, c, soft=True)
    for odd in ("", "08", "4x", "-1", "1 2"):  # arithmetic or presence could differ
        assert key(env, c, soft=True) != key({**env, "CONC": odd}, c, soft=True)
    assert key(env, c, soft=True) != key({**env, "MODEL": "n"}, c, soft=True)


def test_function_split_skips_heredoc_bodies() -> None:
    text = ("f() {\n    python3 - <<'PY'\nd = {\n}\nPY\n    echo \"$AFTER_HEREDOC\"\n}\n"
            "echo top\n")
    bodies = S.functions(S.parse(text))
    assert "AFTER_HEREDOC" in S.text(bodies["f"][0])


def test_a_sourced_file_printing_the_value_is_not_inert() -> None:
    # its output goes wherever the source line sends it (here: a file read back)
    script = '{ source "$(dirname "$0")/benchmark_lib.sh"; } > lib.log\n' + PRINTED
    assert "CONC" not in _inert(script, LIB + 'echo "$CONC"\n')
    assert "CONC" in _inert(script, LIB)


def test_a_variable_a_template_names_is_observed() -> None:
    """``envsubst`` expands the variables a data file names: jobs that differ in one
    of them do not share a trace, though no shell text spells it (the same for a sourced
    ``.env`` file); a name only a data file holds is never inert."""
    files = {"run.sh": 'envsubst < "$(dirname "$0")/tmpl.yaml" > out.yaml\n'
                       'run_benchmark_serving --conc "$CONC"\n',
             "tmpl.yaml": "speculative: ${IX_AL}\n"}
    an = Analyzer(files.get, {n: [n] for n in files})
    env = {"IX_AL": "2", "CONC": "4"}
    c = an.closure("run.sh", env)
    assert "IX_AL" in c.plain and "IX_AL" not in c.inert
    assert key(env, c) != key({**env, "IX_AL": "3"}, c)
    assert key(env, c, soft=True) != key({**env, "IX_AL": "3"}, c, soft=True)
