"""The PR's sweep runs the base's launchers and workflows: the policy check judges the
launch as that sweep makes it too (held-out variants of issue 27, item 2).

``sweep-shard.yml``'s row job runs the default branch's workflow and launcher
(``runners/launch_<family>.sh``, the node from the base's runners.yaml) over the PR's
recipe.  The policy check traced the head's launcher and the head's workflows' job
environment only, so a PR that edits them could make the traced launch differ from the
measured one: with the recipe pinning AL 3.60 (golden 2.83) the gate passed and started
the sweep.  Now rows whose job view the PR edits are traced with the base's as well, and
the worse verdict counts; the finding says which view gave it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ci.test_gate_trust import RUNNERS, _gate, _pr
from tests.conftest import ROOT
from tests.policy.test_check import SEED

LAUNCHER = "runners/launch_h200-dgxc-slurm.sh"
RECIPE = (ROOT / SEED).read_text()
AT_360 = RECIPE.replace("GOLDEN_AL=2.83", "GOLDEN_AL=3.60")
FROM_ENV = RECIPE.replace("GOLDEN_AL=2.83", "GOLDEN_AL=${IX_AL:-3.60}")
BENIGN = SEED.rsplit("/", 1)[0] + "/reviewed.sh"


def _launcher(old: str, new: str) -> str:
    text = (ROOT / LAUNCHER).read_text()
    assert old in text
    return text.replace(old, new, 1)


def _template_sets_al() -> dict[str, str]:
    """The real repository's dispatching workflow and template, the template's env
    setting the value the recipe reads."""
    from tests.workflow.conftest import TREE, read_tree

    if not TREE.is_file():
        pytest.skip("the real tree snapshot is needed for its workflows")
    wf = {k: v.decode() for k, v in read_tree((".github/workflows/",)).items()}
    tmpl = wf[".github/workflows/benchmark-tmpl.yml"]
    return {".github/workflows/run-sweep.yml": wf[".github/workflows/run-sweep.yml"],
            ".github/workflows/benchmark-tmpl.yml": tmpl.replace("\nenv:\n",
                                                                 "\nenv:\n  IX_AL: '2.83'\n",
                                                                 1),
            SEED: FROM_ENV}


# name → the PR's files besides its changelog entry (the recipe pins 3.60 unless the
# variant replaces it)
VARIANTS = {
    "launcher runs a reviewed copy": {
        LAUNCHER: _launcher("SCRIPT=${BASE}_${FRAMEWORK}${SUFFIX}.sh", f"SCRIPT={BENIGN}"),
        BENIGN: RECIPE, SEED: AT_360},
    "launcher exports the value the recipe reads": {
        LAUNCHER: _launcher("export PORT=", "export IX_AL=2.83\nexport PORT="),
        SEED: FROM_ENV},
    "launcher sources a file setting it": {
        LAUNCHER: _launcher("export PORT=", "source runners/site.env\nexport PORT="),
        "runners/site.env": "export IX_AL=2.83\n", SEED: FROM_ENV},
    "runners.yaml moves the label to a new family with its own launcher": {
        "configs/runners.yaml": RUNNERS.replace("h200-dgxc-slurm_0", "h200-pr_0"),
        "runners/launch_h200-pr.sh": _launcher("SCRIPT=${BASE}_${FRAMEWORK}${SUFFIX}.sh",
                                               f"SCRIPT={BENIGN}"),
        BENIGN: RECIPE, SEED: AT_360},
    "a workflow template sets the value": "@template",
}


def _files(variant: str) -> dict[str, str]:
    files = VARIANTS[variant]
    return _template_sets_al() if files == "@template" else dict(files)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["base", "event"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_pr_s_sweep_launch_is_judged(tmp_path: Path, corpus: Path, variant: str,
                                         mode: str) -> None:
    path = tmp_path / "repo"
    base, head = _pr(path, corpus, _files(variant))
    rc, outputs, doc = _gate(path, mode, base, head)
    assert rc == 1 and outputs["gate"] == "fail" and outputs["sweep"] == "false", \
        [(f["rule"], f["message"][:120]) for f in doc["findings"]]
    po403 = [f for f in doc["findings"] if f["rule"] == "PO403"]
    assert len(po403) == 1 and "traced with the base revision's" in po403[0]["message"], po403
    assert "as the PR's sweep runs it" in po403[0]["message"]


@pytest.mark.parametrize(("name", "files", "errors"), [
    # the recipe pins 3.60 and the launcher edit changes nothing: one PO403, no second one
    ("harmless launcher edit, AL 3.60", {LAUNCHER: _launcher("set -euo", "# reviewed\nset -euo"),
                                         SEED: AT_360}, ["PO403"]),
    # the golden value with both views: nothing to report
    ("harmless launcher edit, golden AL", {LAUNCHER: _launcher("set -euo",
                                                               "# reviewed\nset -euo"),
                                           SEED: RECIPE.replace("\n", "\n# tuned\n", 1)}, []),
])
def test_both_views_agree_without_noise(tmp_path: Path, corpus: Path, name: str,
                                        files: dict[str, str], errors: list[str]) -> None:
    path = tmp_path / "repo"
    base, head = _pr(path, corpus, files)
    _, outputs, doc = _gate(path, "base", base, head)
    got = sorted(f["rule"] for f in doc["findings"] if f["severity"] == "error")
    assert got == errors, (name, doc["findings"])
    assert outputs["gate"] == ("fail" if errors else "pass")
