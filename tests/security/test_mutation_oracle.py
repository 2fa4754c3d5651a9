"""Issue 32 item 4: the gate against the full check, as a differential test.

The rule the ``--base`` selection must keep (docs/policy.md): ``ci gate`` reports every
policy error the full check on the head reports and the full check on the base does not.
This suite checks it by mutation.  A *mini tree* is the real tree (843c6254f) with its
master configs cut to five keys (one per launcher family the check traces here, the
seed recipe's key among them): the full check on it is a few CPU-seconds, so the oracle
is the real full check, not a model of it.

Each case is a *kind* of mutation (what the pull request does to the seed recipe's
launch) carried by a *carrier* (where the statement doing it sits).  The kinds:

* the forced AL changed (2.78 → 3.60 in the speculative config): PO403;
* synthetic acceptance put on the eval path (``EVAL_ONLY=true``): PO402;
* synthetic acceptance dropped from the throughput path: PO401.

The carriers are the syntactic positions and indirect reads that walked past the gate
before (a4002f9): a statement after a function's closing brace, between one-line
functions, after a here-document marker inside a string; and two-step reads, where a
first, reviewed commit makes the recipe run text from elsewhere and the pull request
changes only that text: a file sourced by a computed name, through a symbolic link, by a
glob (an edited and a new file), a library function reached through a positional command
word, a here-document or a multi-line string that is evaluated, a Python helper's
module, an ``envsubst`` template.

For every case: the full check on the head minus the full check on the base (errors,
by rule and config key) must hold the kind's rule for the seed key (the mutation is
real), and the gate's policy errors must be exactly that difference (no miss, nothing
charged that the base already had).  The default run takes a bounded sample (two
cases); ``-m slow`` takes every kind × carrier.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clone_real_tree
from tests.security.test_selection_attacks import _apply, _commit

KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"
RECIPE = "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"
HERE = RECIPE.rsplit("/", 1)[0] + "/"
LIB = "benchmarks/benchmark_lib.sh"
# the five keys the mini tree keeps: the seed key and one key of each other family the
# real tree's check traces on a single node (sglang fixed-seq-len with MTP, sglang
# agentic, vLLM without spec-decoding, an AMD sglang MTP key)
MINI_KEYS = (KEY, "dsr1-fp8-h200-sglang-mtp", "qwen3.5-fp8-h200-sglang-agentic-mtp",
             "dsv4-fp8-h200-vllm", "dsr1-fp4-mi355x-sglang-mtp")
# the statement goes right after the recipe builds SPEC_CONFIG, before the launch reads it
ANCHOR = "\nMAX_NUM_SEQS=$((2 * CONC))"

Changes = dict[str, object]

KINDS: dict[str, tuple[str, str]] = {
    "the forced AL changed": ('SPEC_CONFIG="${SPEC_CONFIG/2.78/3.60}"', "PO403"),
    "synthetic acceptance on the eval path": (
        'if [ "$EVAL_ONLY" = "true" ]; then SPEC_CONFIG="${SPEC_CONFIG%?}, '
        '\\"rejection_sample_method\\": \\"synthetic\\", '
        '\\"synthetic_acceptance_length\\": 2.78}"; fi', "PO402"),
    "synthetic acceptance dropped from the throughput path": (
        'if [ "$EVAL_ONLY" != "true" ]; then '
        'SPEC_CONFIG="${SPEC_CONFIG%%, ?rejection_sample_method*}}"; fi', "PO401"),
}


def _insert(text: str) -> Changes:
    """An edit of the recipe: ``text`` (lines) right before the launch reads SPEC_CONFIG."""
    return {RECIPE: (ANCHOR, "\n" + text.rstrip("\n") + "\n" + ANCHOR)}


def _sourced_glob(new_file: bool) -> Callable[[str], tuple[Changes, Changes]]:
    def carrier(stmt: str) -> tuple[Changes, Changes]:
        reviewed = {**_insert('for f in "$(dirname "$0")"/conf.d/*.env; do source "$f"; done'),
                    HERE + "conf.d/a.env": ":\n"}
        return reviewed, {HERE + ("conf.d/b.env" if new_file else "conf.d/a.env"): stmt + "\n"}
    return carrier


# carrier → the statement → (the reviewed, merged step; the pull request)
CARRIERS: dict[str, Callable[[str], tuple[Changes, Changes]]] = {
    "a top-level line": lambda s: ({}, _insert(s)),
    "after a function's closing brace": lambda s: ({}, _insert("_n() {\n    :\n}; " + s)),
    "between one-line functions": lambda s: ({}, _insert(f"_u() {{ :; }}; {s}; _v() {{ :; }}")),
    "after a here-document marker inside a string": lambda s: (
        {}, _insert('_w() {\n    echo "a <<EOT b"\n}\n' + s + "\n_x() {\n    cat <<EOT\nEOT\n}")),
    "a file sourced by a computed name": lambda s: (
        {**_insert('source "${0%.sh}.env"'), RECIPE.removesuffix(".sh") + ".env": ":\n"},
        {RECIPE.removesuffix(".sh") + ".env": s + "\n"}),
    "a file sourced through a symbolic link": lambda s: (
        {**_insert('source "$(dirname "$0")/ix.env"'), "data/ix.env": ":\n",
         HERE + "ix.env": ("link", "../../../data/ix.env")},
        {"data/ix.env": s + "\n"}),
    "conf.d/*.env sourced by a glob, edited": _sourced_glob(new_file=False),
    "conf.d/*.env sourced by a glob, a new file": _sourced_glob(new_file=True),
    "a library function reached through a positional command word": lambda s: (
        {LIB: ("\nstart_gpu_monitor() {", "\nix_hook() {\n    :\n}\n\nstart_gpu_monitor() {"),
         **_insert('run_stage() { "$1"; }\nrun_stage "ix""_hook"')},
        {LIB: ("ix_hook() {\n    :\n}", "ix_hook() {\n    " + s + "\n}")}),
    "an evaluated here-document": lambda s: (
        _insert("eval \"$(sed -n 's/^#ix=//p' <<'EOF'\n#ix=:\nEOF\n)\""),
        {RECIPE: ("#ix=:\n", "#ix=" + s + "\n")}),
    "an evaluated multi-line string": lambda s: (
        _insert("IX_TABLE='\n#ix=:\n'\neval \"$(sed -n 's/^#ix=//p' <<< \"$IX_TABLE\")\""),
        {RECIPE: ("#ix=:\n", "#ix=" + s + "\n")}),
    "a Python helper's module": lambda s: (
        {**_insert('eval "$(python3 "$(dirname "$0")/ix_helper.py")"'),
         HERE + "ix_helper.py": "import sys\nsys.path.insert(0, sys.path[0])\n"
                                "from ix_values import STMT\nprint(STMT)\n",
         HERE + "ix_values.py": "STMT = ':'\n"},
        {HERE + "ix_values.py": f"STMT = {s!r}\n"}),
    "an envsubst template": lambda s: (
        {**_insert('eval "$(IX=: envsubst < "$(dirname "$0")/ix-template")"'),
         HERE + "ix-template": "$IX\n"},
        {HERE + "ix-template": s + "\n"}),
}

# the default run's bounded sample: one one-step and one two-step case (~25 CPU-s)
SAMPLE = {("between one-line functions", "synthetic acceptance on the eval path"),
          ("conf.d/*.env sourced by a glob, a new file",
           "synthetic acceptance dropped from the throughput path")}

Errors = set[tuple[str, str]]


def _cut_to(repo: Path, keys: tuple[str, ...]) -> None:
    """Keep only ``keys`` in the master configs (top-level blocks, text kept as it is)."""
    for config in sorted((repo / "configs").glob("*-master.yaml")):
        kept: list[str] = []
        current: str | None = None
        for line in config.read_text().splitlines(keepends=True):
            top = re.match(r"([A-Za-z0-9][^:\s]*):\s*$", line)
            if top:
                current = top.group(1)
            if current is None or current in keys:
                kept.append(line)
        config.write_text("".join(kept))


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("GITHUB_", "IXTOOL_", "PYTHON"))}


def _ixtool(repo: Path, *args: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", *args,
                           "--format", "json"], cwd=repo, env=_env(), capture_output=True,
                          text=True, timeout=1800)
    assert proc.returncode in (0, 1), proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def _errors(doc: dict[str, Any]) -> Errors:
    """Policy errors by rule and config key."""
    return {(f["rule"], key) for f in doc["findings"]
            if f["rule"].startswith("PO") and f["severity"] == "error"
            for key in (f.get("data") or {}).get("config_keys") or ["-"]}


def _full_check(repo: Path) -> Errors:
    return _errors(_ixtool(repo, "policy", "check"))


class Mini:
    """The mini tree (built once per module) and the full check of each reviewed step."""

    def __init__(self, root: Path, tree: Path) -> None:
        self.root = root
        self.tree = tree
        self.base_checks: dict[str, Errors] = {}
        self.count = 0

    def case(self, carrier: str, kind: str) -> tuple[Errors, Errors, dict[str, Any]]:
        """(head − base of the full check, the gate's policy errors, the gate's output)."""
        stmt, _ = KINDS[kind]
        reviewed, pr = CARRIERS[carrier](stmt)
        self.count += 1
        repo = self.root / f"case-{self.count}"
        subprocess.run(["git", "clone", "-q", "--local", str(self.tree), str(repo)],
                       check=True, capture_output=True)
        _apply(repo, reviewed)
        main = _commit(repo, "reviewed: the recipe runs text from elsewhere")
        if carrier not in self.base_checks:
            self.base_checks[carrier] = _full_check(repo)
        _apply(repo, pr)
        head = _commit(repo, "the PR")
        oracle = _full_check(repo) - self.base_checks[carrier]
        gate = _ixtool(repo, "ci", "gate", "--priority", "none", "--base", main, "--head",
                       head, "--pr", "7", "--label", "sweep-enabled")
        return oracle, _errors(gate), gate


@pytest.fixture(scope="module")
def mini(real_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Mini:
    root = tmp_path_factory.mktemp("mutation")
    tree = clone_real_tree(real_tree, root / "mini")
    _cut_to(tree, MINI_KEYS)
    _commit(tree, "the mini tree: five keys")
    return Mini(root, tree)


def test_the_mini_tree_keeps_its_keys_and_passes(mini: Mini) -> None:
    """The oracle's ground: every kept key is there and the base has no policy error on
    the seed key (a mutation's error is the mutation's)."""
    text = "".join(p.read_text() for p in (mini.tree / "configs").glob("*-master.yaml"))
    keys = set(re.findall(r"^([A-Za-z0-9][^:\s]*):\s*$", text, re.MULTILINE))
    assert keys == set(MINI_KEYS)
    assert not {e for e in _full_check(mini.tree) if e[1] == KEY}


@pytest.mark.parametrize(("carrier", "kind"), [
    pytest.param(c, k, marks=() if (c, k) in SAMPLE else pytest.mark.slow,
                 id=f"{k} | {c}") for c in CARRIERS for k in KINDS])
def test_the_gate_reports_what_the_full_check_adds(mini: Mini, carrier: str,
                                                   kind: str) -> None:
    oracle, gate, doc = mini.case(carrier, kind)
    _, rule = KINDS[kind]
    assert (rule, KEY) in oracle, (carrier, kind, oracle)
    missed, extra = oracle - gate, gate - oracle
    assert not missed and not extra, {"missed": missed, "extra": extra,
                                      "findings": doc["findings"]}
