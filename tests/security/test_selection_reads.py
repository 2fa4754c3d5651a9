"""``--base`` traces the rows a change can reach — also through a data file a recipe
reads at run time (held-out variants of issue 27, item 2).

Two steps: a reviewed recipe reads its AL from a file next to it (2.83, golden); later a
PR changes only that file to 3.60, with its changelog entry.  No script changed, so
``--base`` traced nothing and the gate passed (``gate=pass``, ``sweep=true``) while the
full check said PO403.  A changed file a script names (any suffix) is now in the closure
of the rows whose launcher or script names it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.sandbox.trace import namespaces_available
from tests.ci.test_gate_trust import ENTRY, KEY, _at, _env, _gate, _pr
from tests.conftest import ROOT
from tests.policy.test_check import SEED

RECIPE = (ROOT / SEED).read_text()
HERE = SEED.rsplit("/", 1)[0] + "/"

# name → (the reviewed step: files; the PR: files) — the PR changes no script
CASES = {
    "a value file": ({HERE + "al.txt": "2.83\n", SEED: RECIPE.replace(
        "GOLDEN_AL=2.83", 'GOLDEN_AL=$(cat "$(dirname "$0")/al.txt")')},
        {HERE + "al.txt": "3.60\n"}),
    "a sourced env file": ({HERE + "al.env": "GOLDEN_AL=2.83\n", SEED: RECIPE.replace(
        "GOLDEN_AL=2.83", 'source "$(dirname "$0")/al.env"')},
        {HERE + "al.env": "GOLDEN_AL=3.60\n"}),
    "a YAML file elsewhere": ({"data/tuned.yaml": "al: 2.83\n", SEED: RECIPE.replace(
        "GOLDEN_AL=2.83", 'GOLDEN_AL=$(sed -n "s/al: //p" "$GITHUB_WORKSPACE/data/tuned.yaml" '
        '2>/dev/null || sed -n "s/al: //p" data/tuned.yaml)')},
        {"data/tuned.yaml": "al: 3.60\n"}),
    # a Python helper opens a name it builds ('a' + 'l.dat'): no text spells the file
    "a name a Python helper builds": ({
        "utils/al_value.py": "import os\nhere = os.path.dirname(os.path.abspath(__file__))\n"
                             "print(open(os.path.join(here, 'a' + 'l.dat')).read().strip())\n",
        "utils/al.dat": "2.83\n", SEED: RECIPE.replace(
            "GOLDEN_AL=2.83", 'GOLDEN_AL=$(python3 "$(dirname "$0")/../../../utils/al_value.py")')},
        {"utils/al.dat": "3.60\n"}),
    "a name built from constants in Python": ({
        "utils/al_value.py": "import os\nhere = os.path.dirname(os.path.abspath(__file__))\n"
                             "n = 'al'\ne = 'dat'\nprint(open(f'{here}/{n}.{e}').read().strip())\n",
        "utils/al.dat": "2.83\n", SEED: RECIPE.replace(
            "GOLDEN_AL=2.83", 'GOLDEN_AL=$(python3 "$(dirname "$0")/../../../utils/al_value.py")')},
        {"utils/al.dat": "3.60\n"}),
    # file names read out of data the recipe (or its helper) reads
    "a list read name by name": ({HERE + "names": "x_one\n", HERE + "x_one": "2.83\n",
                                  SEED: RECIPE.replace("GOLDEN_AL=2.83", (
        'while read -r n; do GOLDEN_AL=$(cat "$(dirname "$0")/$n"); done '
        '< "$(dirname "$0")/names"'))}, {HERE + "x_one": "3.60\n"}),
    "a list handed to xargs": ({HERE + "list": HERE + "vals.d/a\n", HERE + "vals.d/a": "2.83\n",
                                SEED: RECIPE.replace("GOLDEN_AL=2.83", (
        'cd "$(dirname "$0")/../../.." && GOLDEN_AL=$(xargs cat < "' + HERE + 'list"); '
        'cd - > /dev/null'))}, {HERE + "vals.d/a": "3.60\n"}),
    "a JSON index a Python helper follows": ({
        "utils/idx.json": '{"file": "v_a1"}\n', "utils/v_a1": "2.83\n",
        "utils/al_value.py": "import json, os\nhere = os.path.dirname(os.path.abspath(__file__))\n"
                             "f = json.load(open(os.path.join(here, 'idx.json')))['file']\n"
                             "print(open(os.path.join(here, f)).read().strip())\n",
        SEED: RECIPE.replace(
            "GOLDEN_AL=2.83", 'GOLDEN_AL=$(python3 "$(dirname "$0")/../../../utils/al_value.py")')},
        {"utils/v_a1": "3.60\n"}),
    # every file of a directory by a glob that ends the word
    "a glob over a directory": ({HERE + "al/v": "2.83\n", SEED: RECIPE.replace(
        "GOLDEN_AL=2.83", 'GOLDEN_AL=$(cat "$(dirname "$0")"/al/*)')},
        {HERE + "al/v": "3.60\n"}),
}


# what the scripts' text cannot show: bytes a reading command takes from a file the
# static reach compares by its effective text (comments aside) — a change no static
# model sees, caught only by what the base's traces read (policy/readmap.py)
READ_ONLY_BY_TRACES = {
    "the recipe's own comment": (
        {SEED: RECIPE.replace("GOLDEN_AL=2.83", "#al=2.83\nGOLDEN_AL=$(sed -n 's/^#al=//p' "
                              '"$0")')},
        {SEED: RECIPE.replace("GOLDEN_AL=2.83", "#al=3.60\nGOLDEN_AL=$(sed -n 's/^#al=//p' "
                              '"$0")')}),
    "a comment of another script": (
        {"benchmarks/al_notes.sh": "# al: 2.83\n", SEED: RECIPE.replace(
            "GOLDEN_AL=2.83", "GOLDEN_AL=$(sed -n 's/^# al: //p' "
            '"$(dirname "$0")/../../al_notes.sh")')},
        {"benchmarks/al_notes.sh": "# al: 3.60\n"}),
}


def _two_steps(path: Path, corpus: Path, reviewed: dict[str, str], pr: dict[str, str],
               entry: bool = True) -> tuple[str, str]:
    """(main after the reviewed step, the PR's head)."""
    base, _ = _pr(path, corpus, {})
    repo = _at(path)
    repo.git("checkout", "-q", base)
    for rel, text in reviewed.items():
        repo.write(rel, text)
    main = repo.commit("reviewed: the recipe reads its AL from a file")
    for rel, text in pr.items():
        repo.write(rel, text)
    if entry:
        with (path / "perf-changelog.yaml").open("a") as fh:
            fh.write("\n" + ENTRY.format(key=KEY, text="Tune.", link="XXX"))
    return main, repo.commit("the PR")


@pytest.mark.parametrize("case", list(CASES))
def test_a_data_file_the_recipe_reads_selects_its_rows(tmp_path: Path, corpus: Path,
                                                       case: str) -> None:
    reviewed, pr = CASES[case]
    path = tmp_path / "repo"
    main, head = _two_steps(path, corpus, reviewed, pr)
    rc, outputs, doc = _gate(path, "base", main, head)
    assert rc == 1 and outputs["gate"] == "fail" and outputs["sweep"] == "false", \
        doc["findings"]
    assert [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == ["PO403"]


def test_a_file_no_script_names_traces_nothing(tmp_path: Path, corpus: Path) -> None:
    """The fast path stays: a changed note nobody reads selects no row."""
    reviewed, _ = CASES["a value file"]
    path = tmp_path / "repo"
    main, head = _two_steps(path, corpus, reviewed, {"docs/notes.txt": "3.60\n"})
    rc, outputs, doc = _gate(path, "base", main, head)
    assert rc == 0 and outputs["gate"] == "pass", doc["findings"]


def _warm(path: Path, main: str, head: str, cache: Path) -> dict[str, Any]:
    """The whole check of ``main`` with a trace cache (as main's own CI run keeps it);
    the checkout back at ``head``."""
    repo = _at(path)
    repo.git("checkout", "-q", main)
    full = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", "policy", "check",
                           "--trace-cache", str(cache), "--format", "json"], cwd=path,
                          env=_env(path.parent), capture_output=True, text=True, timeout=600)
    repo.git("checkout", "-q", head)
    info: dict[str, Any] = json.loads(full.stdout)["info"]
    assert info["trace-cache"]["stored"] > 0 and info["read-map"]["unknown"] == 0, info
    return info


def _gate_warm(tmp_path: Path, corpus: Path, reviewed: dict[str, str], pr: dict[str, str]
               ) -> tuple[int, dict[str, str], dict[str, Any]]:
    """The two steps, the reviewed main's whole check filling a trace cache, then the
    PR's gate reading it."""
    path = tmp_path / "repo"
    main, head = _two_steps(path, corpus, reviewed, pr)
    cache = tmp_path / "traces"
    _warm(path, main, head, cache)
    return _gate(path, "base", main, head, ("--trace-cache", str(cache)))


@pytest.mark.skipif(not namespaces_available(), reason="only namespaces record reads")
@pytest.mark.parametrize("case", ["a value file", "a JSON index a Python helper follows",
                                  "a glob over a directory"])
def test_a_warm_trace_cache_still_sees_the_change(tmp_path: Path, corpus: Path,
                                                  case: str) -> None:
    """The trace cache filled by the whole check of the reviewed main: the gate reuses
    what the change did not reach (the launcher's trace) and traces again what read the
    changed file — the same PO403 as without the cache."""
    rc, outputs, doc = _gate_warm(tmp_path, corpus, *CASES[case])
    assert rc == 1 and outputs["gate"] == "fail", doc["findings"]
    assert [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == ["PO403"]
    counts = doc["info"]["policy"]["trace-cache"]
    assert counts["hits"] > 0 and counts["misses"] > 0 and counts["stored"] == 0, counts


@pytest.mark.skipif(not namespaces_available(), reason="only namespaces record reads")
@pytest.mark.parametrize("case", list(READ_ONLY_BY_TRACES))
def test_what_the_base_traces_read_selects_what_no_text_shows(tmp_path: Path, corpus: Path,
                                                              case: str) -> None:
    """Without the base's read map the gate passes these (the static reach sees no
    change: a comment); with it the row whose launch read the changed bytes is traced."""
    rc, outputs, doc = _gate_warm(tmp_path, corpus, *READ_ONLY_BY_TRACES[case])
    assert rc == 1 and outputs["gate"] == "fail" and outputs["sweep"] == "false", \
        doc["findings"]
    assert [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == ["PO403"]


@pytest.mark.skipif(not namespaces_available(), reason="only namespaces record reads")
def test_what_the_base_traces_did_not_read_is_not_traced(tmp_path: Path,
                                                         corpus: Path) -> None:
    """The other way: the recipe names a file in a branch its job never takes.  The
    static reach must assume the branch and traces the row; the base's read map shows
    the launch never read the file, so the gate with it traces nothing."""
    reviewed = {"data/extra.env": "X=1\n", SEED: RECIPE.replace(
        "GOLDEN_AL=2.83", 'if [ "$(date +%Y)" = 1999 ]; then source data/extra.env; fi\n'
        "GOLDEN_AL=2.83")}
    path = tmp_path / "repo"
    main, head = _two_steps(path, corpus, reviewed, {"data/extra.env": "X=2\n"},
                            entry=False)
    rc, _, doc = _gate(path, "base", main, head)
    assert doc["info"]["policy"]["traces"] > 0  # static: the row may read it
    cache = tmp_path / "traces"
    _warm(path, main, head, cache)
    rc, outputs, doc = _gate(path, "base", main, head, ("--trace-cache", str(cache)))
    assert rc == 0 and outputs["gate"] == "pass", doc["findings"]
    assert doc["info"]["policy"]["traces"] == 0, doc["info"]["policy"]


@pytest.mark.skipif(not namespaces_available(), reason="only namespaces record reads")
def test_a_reused_trace_that_gives_a_tool_failure_is_traced_again(tmp_path: Path,
                                                                  corpus: Path) -> None:
    """A result the cache kept that judges as a tool failure (here: its server record
    taken out, as a run that lost it would leave it) is not believed: the job is traced
    again without the cache, and the verdict is the fresh trace's."""
    reviewed, _ = CASES["a value file"]
    path = tmp_path / "repo"
    main, _ = _two_steps(path, corpus, reviewed, {}, entry=False)
    cache = tmp_path / "traces"
    _warm(path, main, main, cache)
    emptied = 0
    for entry in cache.rglob("*.json"):
        doc = json.loads(entry.read_text())
        if "result" in doc and any(r["tool"] in ("vllm", "python3") for r in
                                   doc["result"]["records"]):
            doc["result"]["records"] = []
            entry.write_text(json.dumps(doc))
            emptied += 1
    assert emptied
    full = subprocess.run([sys.executable, "-I", "-m", "inferencex_tools", "policy", "check",
                           "--trace-cache", str(cache), "--format", "json"], cwd=path,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    doc = json.loads(full.stdout)
    assert doc["info"]["trace-cache"]["hits"] > 0, doc["info"]
    assert doc["info"].get("traced-again", 0) > 0, doc["info"]
    assert [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == [], \
        doc["findings"]


# the recipe's AL comes from a Python helper that imports a module beside it: Python's
# path finder looks names up in utils/ (and at the workspace root)
IMPORTED = {
    "utils/al_value.py": "import alval\nprint(alval.AL)\n",
    "utils/alval.py": "AL = 2.83\n",
    SEED: RECIPE.replace("GOLDEN_AL=2.83",
                         'GOLDEN_AL=$(python3 "$(dirname "$0")/../../../utils/al_value.py")'),
}


@pytest.mark.skipif(not namespaces_available(), reason="only namespaces record reads")
@pytest.mark.parametrize("pr, verdict", [
    # names no import looked for, beside the helper and at the root: nothing to trace
    ({"utils/NOTES.md": "3.60\n", "utils/al.json": "3.60\n", "README_zh.md": "x\n"},
     "pass"),
    # a package beside the module: it shadows it, and the row reads 3.60
    ({"utils/alval/__init__.py": "AL = 3.60\n"}, "fail"),
])
def test_an_import_reaches_only_the_names_it_tried(
        tmp_path: Path, corpus: Path, pr: dict[str, str], verdict: str) -> None:
    path = tmp_path / "repo"
    main, head = _two_steps(path, corpus, IMPORTED, pr, entry=verdict == "fail")
    cache = tmp_path / "traces"
    _warm(path, main, head, cache)
    rc, outputs, doc = _gate(path, "base", main, head, ("--trace-cache", str(cache)))
    assert outputs["gate"] == verdict, doc["findings"]
    if verdict == "pass":
        assert rc == 0 and doc["info"]["policy"]["traces"] == 0, doc["info"]["policy"]
    else:
        assert [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == \
            ["PO403"], doc["findings"]
