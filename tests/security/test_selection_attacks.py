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

A case runs ``ci gate`` on the real tree (tens of seconds): the default run takes one,
``-m slow`` every one.

Each case asserts the gate reports the PO403 the full check reports on the head and
not on the base (the selection's rule, docs/policy.md).
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
# two-step reads the syntax tree alone already sees (a comment-like line in data)
DATA_LINES: dict[str, tuple[dict[str, object], dict[str, object]]] = {
    "a #al= line inside a here-document": (
        _replace("SYNTHETIC_ACCEPT_LEN=$(sed -n 's/^#al=//p' <<'EOF'\n#al=2.78\nEOF\n)\n"),
        {RECIPE: ("#al=2.78\n", "#al=3.60\n")}),
    "a #al= line inside a multi-line string": (
        _replace('AL_TABLE="\n#al=2.78\n"\n'
                 "SYNTHETIC_ACCEPT_LEN=$(sed -n 's/^#al=//p' <<< \"$AL_TABLE\")\n"),
        {RECIPE: ("#al=2.78\n", "#al=3.60\n")}),
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


CASES = {**ONE_STEP, **DATA_LINES}
# one case in the default run, every case under -m slow (each is a gate on the real tree)
SAMPLE = "one-line functions around a statement"


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=() if c == SAMPLE else pytest.mark.slow) for c in CASES])
def test_the_attack_fails_the_gate(real_tree: Path, tmp_path: Path, case: str) -> None:
    reviewed, pr = CASES[case]
    rc, outputs, findings = _attack(real_tree, tmp_path, reviewed, pr)
    errors = [f for f in findings if f["severity"] == "error"]
    assert rc == 1 and outputs["gate"] == "fail", findings
    assert {f["rule"] for f in errors} == {"PO403"}, errors
    assert all(f["data"]["config_keys"] == [KEY] for f in errors), errors
