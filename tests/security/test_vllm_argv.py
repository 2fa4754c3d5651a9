"""The policy reads a vLLM launch as vLLM's own argument parser does (held-out variants of
issue 27, item 2: what the recipe pins is what vLLM gets).

vLLM's ``FlexibleArgumentParser`` merges ``--speculative-config.KEY VALUE`` (dotted
keys, documented under "Engine Arguments") into one ``--speculative-config`` JSON it
appends last — it replaces an earlier ``--speculative-config`` — and argparse expands a
unique prefix (``--speculative-conf``).  The policy read the JSON argument only: a recipe
keeping the golden ``--speculative-config '{…2.83…}'`` as a decoy and passing the real
config as dotted keys with 3.60 (or under a shortened option) passed ``policy check``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferencex_tools.policy.engines import vllm_argv
from tests.policy.test_check import check, seed_repo

SPEC = '    --speculative-config "$SPEC_CONFIG"\n'
DOTTED = ("    --speculative-config.method eagle3\n"
          "    --speculative-config.model Inferact/MiniMax-M3-EAGLE3\n"
          "    --speculative-config.num_speculative_tokens 3\n"
          "    --speculative_config.rejection_sample_method=synthetic\n"
          "    --speculative-config.synthetic_acceptance_length 3.60\n")

ATTACKS = {
    # the golden JSON stays as a decoy, vLLM gets the dotted config
    "dotted keys after the JSON": (SPEC, SPEC + DOTTED, "PO403"),
    "one dotted key (replaces the whole JSON)": (
        SPEC, SPEC + "    --speculative-config.synthetic_acceptance_length 3.60\n", "PO410"),
    "a shortened option": (SPEC, SPEC + '    --speculative-conf "${SPEC_CONFIG/2.83/3.60}"\n',
                           "PO410"),
    "--config FILE": (SPEC, SPEC + "    --config /tmp/extra.yaml\n", "PO410"),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_the_launch_vllm_parses_is_judged(tmp_path: Path, corpus: Path, name: str) -> None:
    old, new, rule = ATTACKS[name]
    res = check(seed_repo(tmp_path, (old, new)), corpus)
    errors = {f.rule for f in res.errors}
    assert res.exit_code() == 1 and rule in errors, [(f.rule, f.message[:90])
                                                     for f in res.findings]


@pytest.mark.parametrize(("argv", "want"), [
    # dotted keys merge into one JSON appended last (it replaces the earlier one)
    (["vllm", "serve", "m", "--speculative-config", '{"a": 1}', "--speculative-config.b", "2",
      "--speculative-config.c.d=x"],
     ["vllm", "serve", "m", "--speculative-config", '{"a": 1}', "--speculative-config",
      '{"b": 2, "c": {"d": "x"}}']),
    # underscores in the name, list items with +, a later dotted key wins
    (["--speculative_config.k+", "1,2", "--speculative-config.k+=3",
      "--speculative-config.n", "1", "--speculative-config.n", "4"],
     ["--speculative-config", '{"k": ["1", "2", "3"], "n": 4}']),
    # a dot in the value only is no dotted key
    (["--model=a.b", "--port", "1"], ["--model=a.b", "--port", "1"]),
])
def test_vllm_argv_semantics(argv: list[str], want: list[str]) -> None:
    got, issues = vllm_argv(argv)
    assert issues == []
    assert got[:-1] == want[:-1]
    if want[-1].startswith("{"):
        assert json.loads(got[-1]) == json.loads(want[-1])
    else:
        assert got[-1] == want[-1]
