"""Issue 32's attacks on the ``--base`` selection, each through ``ixtool ci gate`` on a
real temporary git repository built from the real tree (843c6254f).

The real tree's seed recipe (``minimaxm3_fp8_h200_mtp.sh``) forces AL 2.78, the golden
value.  Each attack makes a pull request force 3.60 while the gate, judging only the rows
its selection picks, passed (a4002f9: ``gate=pass``) and the full check on the same head
said PO403:

* one visible line the line-based function split misread (a statement after a
  function's closing brace, one-line functions around it, a here-document marker inside
  a string);
* two-step reads: a first, harmless PR makes the recipe read something; the second
  changes only that (a computed data-file name, a symlinked data file, a Python module
  a helper imports, ``conf.d/*.env`` sourced by a glob, a function reached through a
  positional ``"$1"``, a ``#al=`` line inside a here-document or a multi-line string, an
  ``envsubst`` template).

Each case asserts the gate reports the PO403 the full check reports on the head and
not on the base (the selection's rule, docs/policy.md).  A case runs ``ci gate`` on the
real tree (5-60 CPU-s): the default run takes two, ``-m slow`` every one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ci.test_gate_trust import _gate
from tests.conftest import clone_real_tree, git

KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"
RECIPE = "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"
HERE = RECIPE.rsplit("/", 1)[0] + "/"
LIB = "benchmarks/benchmark_lib.sh"
AL = "SYNTHETIC_ACCEPT_LEN=2.78\n"


def _after_al(text: str) -> dict[str, tuple[str, str]]:
    """An edit of the recipe: ``text`` right after its AL assignment."""
    return {RECIPE: (AL, AL + text)}


def _replace(text: str) -> dict[str, tuple[str, str]]:
    """An edit of the recipe: its AL assignment replaced by ``text``."""
    return {RECIPE: (AL, text)}


# name → (the reviewed, merged step: edits or new files; the PR: edits or new files)
ONE_STEP: dict[str, tuple[dict[str, object], dict[str, object]]] = {
    "a statement after a function's closing brace": (
        {}, _after_al("_al_note() {\n    :\n}; SYNTHETIC_ACCEPT_LEN=3.60\n")),
    "one-line functions around a statement": (
        {}, _after_al("_u() { :; }; SYNTHETIC_ACCEPT_LEN=3.60; _v() { :; }\n")),
    "a here-document marker inside a string": (
        {}, _after_al('_w() {\n    echo "a <<EOT b"\n}\nSYNTHETIC_ACCEPT_LEN=3.60\n'
                      "_x() {\n    cat <<EOT\nEOT\n}\n")),
}
TWO_STEP: dict[str, tuple[dict[str, object], dict[str, object]]] = {
    "a computed data-file name": (
        {**_replace('SYNTHETIC_ACCEPT_LEN=$(cat "${0%.sh}.al")\n'),
         RECIPE.removesuffix(".sh") + ".al": "2.78\n"},
        {RECIPE.removesuffix(".sh") + ".al": "3.60\n"}),
    "a symlinked data file": (
        {**_replace('SYNTHETIC_ACCEPT_LEN=$(cat "$(dirname "$0")/al.txt")\n'),
         "data/al-value": "2.78\n", HERE + "al.txt": ("link", "../../../data/al-value")},
        {"data/al-value": "3.60\n"}),
    "a Python module a helper imports": (
        {**_replace('SYNTHETIC_ACCEPT_LEN=$(python3 "$(dirname "$0")/al_helper.py")\n'),
         HERE + "al_helper.py": "import sys\nsys.path.insert(0, sys.path[0])\n"
                                "from al_values import VALUE\nprint(VALUE)\n",
         HERE + "al_values.py": "VALUE = '2.78'\n"},
        {HERE + "al_values.py": "VALUE = '3.60'\n"}),
    "conf.d/*.env sourced by a glob": (
        {**_after_al('for f in "$(dirname "$0")"/conf.d/*.env; do source "$f"; done\n'),
         HERE + "conf.d/al.env": "SYNTHETIC_ACCEPT_LEN=2.78\n"},
        {HERE + "conf.d/al.env": "SYNTHETIC_ACCEPT_LEN=3.60\n"}),
    "a function reached through a positional command word": (
        {LIB: ("\nstart_gpu_monitor() {",
               "\ngolden_al() {\n    echo 2.78\n}\n\nstart_gpu_monitor() {"),
         **_replace('run_stage() { "$1"; }\nSYNTHETIC_ACCEPT_LEN=$(run_stage "golden""_al")\n')},
        {LIB: ("    echo 2.78\n}", "    echo 3.60\n}")}),
    "a #al= line inside a here-document": (
        _replace("SYNTHETIC_ACCEPT_LEN=$(sed -n 's/^#al=//p' <<'EOF'\n#al=2.78\nEOF\n)\n"),
        {RECIPE: ("#al=2.78\n", "#al=3.60\n")}),
    "a #al= line inside a multi-line string": (
        _replace('AL_TABLE="\n#al=2.78\n"\n'
                 "SYNTHETIC_ACCEPT_LEN=$(sed -n 's/^#al=//p' <<< \"$AL_TABLE\")\n"),
        {RECIPE: ("#al=2.78\n", "#al=3.60\n")}),
    "an envsubst template": (
        {**_replace('SYNTHETIC_ACCEPT_LEN=$(AL=2.78 envsubst < "$(dirname "$0")/al-template")'
                    "\n"),
         HERE + "al-template": "$AL\n"},
        {HERE + "al-template": "3.60\n"}),
}


def _apply(repo: Path, changes: dict[str, object]) -> None:
    for rel, change in changes.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(change, tuple) and change[0] == "link":
            if path.is_symlink() or path.exists():
                path.unlink()
            path.symlink_to(change[1])
        elif isinstance(change, tuple):
            old, new = change
            text = path.read_text()
            assert old in text, (rel, old)
            path.write_text(text.replace(old, new, 1))
        else:
            assert isinstance(change, str)
            path.write_text(change)


def _commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def _attack(real_tree: Path, tmp_path: Path, reviewed: dict[str, object],
            pr: dict[str, object]) -> tuple[int, dict[str, str], list[dict[str, object]]]:
    repo = clone_real_tree(real_tree, tmp_path / "repo")
    _apply(repo, reviewed)
    main = _commit(repo, "reviewed: the recipe reads its AL elsewhere")
    _apply(repo, pr)
    head = _commit(repo, "the PR")
    rc, outputs, doc = _gate(repo, "base", main, head)
    return rc, outputs, doc["findings"]


CASES = {**ONE_STEP, **TWO_STEP}
# one case of each kind in the default run, every case under -m slow (each is a gate on
# the real tree).  The two-step sample is one whose selection stays on the seed key's rows
# (~5 CPU-s): a computed data-file name, a symlinked data file, conf.d/*.env, a positional
# function and envsubst select every row of four launchers' families (50-63 CPU-s each);
# the name patterns they rest on are default tests of tests/policy/test_reach.py and
# tests/test_shellsyntax.py.
SAMPLE = ("one-line functions around a statement", "a Python module a helper imports")


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=() if c in SAMPLE else pytest.mark.slow) for c in CASES])
def test_the_attack_fails_the_gate(real_tree: Path, tmp_path: Path, case: str) -> None:
    """The gate reports the PO403 the full check reports on the head (the errors it
    reports besides, rows the change reaches that already fail on the base, are issue
    33's D4: not yet told apart)."""
    reviewed, pr = CASES[case]
    rc, outputs, findings = _attack(real_tree, tmp_path, reviewed, pr)
    assert rc == 1 and outputs["gate"] == "fail", findings
    assert any(f["rule"] == "PO403" and f["severity"] == "error" and
               KEY in f["data"]["config_keys"] for f in findings), findings
