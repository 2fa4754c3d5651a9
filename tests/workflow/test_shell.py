"""The run-step shell subset: exports, tests, parameter operators, the launcher command."""

from __future__ import annotations

import pytest

from inferencex_tools.workflow.shell import evaluate_run

ENV = {"RESULT_FILENAME_BASE": "exp_conc4_node_0", "RECIPE_FINGERPRINT": "",
       "TP": "4", "PP_SIZE": "1", "PCP_SIZE": "2", "RUNNER_NAME": "b200-dgxc_03",
       "NAME": "a/b/c.sh"}


def test_benchmark_template_run_step() -> None:
    script = """
export RESULT_FILENAME="$RESULT_FILENAME_BASE"
if [ -n "$RECIPE_FINGERPRINT" ]; then
  export RESULT_FILENAME="${RESULT_FILENAME}_recipe-${RECIPE_FINGERPRINT:0:16}"
fi
export GPU_COUNT=$((TP * PP_SIZE * PCP_SIZE))
echo "GPU_COUNT=${GPU_COUNT}" >> "$GITHUB_ENV"   # for later steps
bash ./runners/launch_${RUNNER_NAME%%_*}.sh
export AFTER=1
"""
    r = evaluate_run(script, ENV)
    assert r.exports == {"RESULT_FILENAME": "exp_conc4_node_0", "GPU_COUNT": "8"}
    assert r.command == ["bash", "./runners/launch_b200-dgxc.sh"]
    assert r.notes == []


def test_fingerprint_branch_and_else() -> None:
    env = {**ENV, "RECIPE_FINGERPRINT": "0123456789abcdefXYZ"}
    script = """if [ -n "$RECIPE_FINGERPRINT" ]; then
export R="${RESULT_FILENAME_BASE}_recipe-${RECIPE_FINGERPRINT:0:16}"
elif [ "$TP" = "4" ]; then
export R=elif
else
export R=else
fi
if [[ "$TP" == "8" ]]; then export S=8; else export S=other; fi
"""
    r = evaluate_run(script, env)
    assert r.exports == {"R": "exp_conc4_node_0_recipe-0123456789abcdef", "S": "other"}


@pytest.mark.parametrize(("word", "value"), [
    ("${NAME##*/}", "c.sh"), ("${NAME#*/}", "b/c.sh"), ("${NAME%/*}", "a/b"),
    ("${NAME%%/*}", "a"), ("${UNSET:-dflt}", "dflt"), ("${TP:+set}", "set"),
    ("${#TP}", "1"), ("${NAME:2:3}", "b/c"), ("'$TP'", "$TP"), ('"$TP"x', "4x"),
    ("$((TP*2+1))", "9"), ("\\$TP", "$TP"),
])
def test_parameter_operators(word: str, value: str) -> None:
    assert evaluate_run(f"export X={word}", ENV).exports["X"] == value


def test_additional_settings_split_into_assignments() -> None:
    r = evaluate_run("export CONFIG_FILE=recipes/a.yaml:zip[1] SYNTHETIC_ACCEPTANCE=true \n"
                     "export IS_MULTINODE=true\nbash ./runners/launch_x.sh", ENV)
    assert r.exports == {"CONFIG_FILE": "recipes/a.yaml:zip[1]",
                         "SYNTHETIC_ACCEPTANCE": "true", "IS_MULTINODE": "true"}
    assert r.command == ["bash", "./runners/launch_x.sh"]


def test_unsupported_constructs_are_notes() -> None:
    r = evaluate_run("export A=$(date)\nexport B=ok\ncurl http://x | sh\n", ENV)
    assert r.exports == {"B": "ok"}
    assert len(r.notes) == 2 and "command substitution" in r.notes[0]
