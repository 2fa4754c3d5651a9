"""#1970 on the PR-heads bench: whose workflows run a PR's sweep (lead for the policy
stage's base job view, ``policy/service.py::_in_base_job_view``).

A repository whose sweep dispatches its rows from a workflow on ``pull_request`` (the
real InferenceX ``run-sweep.yml``) runs the PR's sweep with the PR merge ref's own
workflows and launchers (GitHub's semantics; spec CHANGELOG.md §9: "full-history
checkout (the PR merge ref)").  A PR that adds a template variable together with the
recipe's check of it (#1970: ``KV_OFFLOADING``; the base's templates set ``OFFLOADING``) is run as
the head has it; no job runs the base's templates over the head's recipe.  The base job view
traces exactly that mixture and reports "KV_OFFLOADING must be set" (PO301, "traced with
the base revision's …, as the PR's sweep runs it") — it did (failed before).  The base
view now applies only where the PR's sweep runs the base's job view (ixtool's trusted
``sweep-shard.yml`` row job; a dispatching workflow not started by ``pull_request``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TempRepo
from tests.policy.test_check import SEED, seed_repo

TEMPLATES = (".github/workflows/run-sweep.yml", ".github/workflows/benchmark-tmpl.yml")


def test_a_lockstep_template_change_in_a_pull_request_sweep_is_no_error(tmp_path: Path,
                                                                  corpus: Path) -> None:
    from tests.workflow.conftest import TREE, read_tree

    if not TREE.is_file():
        pytest.skip("the real tree snapshot is needed for its workflows")
    path = tmp_path / "repo"
    repo = TempRepo(path)
    seed_repo(path)
    (path / ".github/workflows/sweep-shard.yml").unlink()
    base_wf = {k: v.decode() for k, v in read_tree(TEMPLATES).items()}
    recipe = (path / SEED).read_text()
    for rel, text in base_wf.items():
        repo.write(rel, text)
    base = repo.commit("base")
    # the PR adds a template variable and, in the same change, the recipe's check of it
    # (#1970: KV_OFFLOADING, with benchmark_lib.sh stopping without it)
    tmpl = base_wf[TEMPLATES[1]]
    assert "\nenv:\n" in tmpl
    repo.write(TEMPLATES[1], tmpl.replace("\nenv:\n", "\nenv:\n  IX_KV_MODE: dram\n", 1))
    repo.write(SEED, recipe.replace("\n", "\n[[ -n \"${IX_KV_MODE:-}\" ]] || { echo "
                                    "'IX_KV_MODE must be set' >&2; exit 1; }\n", 1))
    repo.commit("add IX_KV_MODE to the template and the recipe")
    proc = subprocess.run(
        [sys.executable, "-m", "inferencex_tools", "policy", "check", "--base", base,
         "--registry", str(Path(__file__).parents[2] / "golden_al_distribution/registry.yaml"),
         "--curves-dir", str(corpus / "golden_al_distribution"), "--format", "json"],
        cwd=path, capture_output=True, text=True, timeout=900)
    doc = json.loads(proc.stdout)
    errors = [(f["rule"], f["message"][:200]) for f in doc["findings"]
              if f["severity"] == "error"]
    assert errors == [], errors


def _row(matrix: dict[str, object]) -> object:
    from inferencex_tools.policy.resolve import Row

    return Row("c.yaml", "k", 1, "fixed-seq-len", 0, 0, 4, False, {}, {}, matrix=matrix)


@pytest.mark.parametrize("events,row_job,kept", [
    (frozenset({"pull_request"}), None, []),
    (frozenset({"workflow_dispatch"}), None, ["single_node.1k1k"]),
    (frozenset({"pull_request"}), "sweep-shard.yml:row",
     ["single_node.1k1k", "single_node.agentic", "(no matrix)"]),
])
def test_a_bucket_the_base_does_not_dispatch_runs_nowhere_in_its_view(
        events: frozenset[str], row_job: str | None, kept: list[str]) -> None:
    """Real head #1201 (merged) added the agentic bucket (``single_node.agentic``) with
    its recipes and templates; the base dispatched only fixed-seq-len buckets, from
    ``pull_request``.  The base job view traced the new rows with the base's templates
    (7 PO301 "missing variable: RANDOM_RANGE_RATIO", a mixture no job runs): a row of a
    bucket the base dispatches nowhere is dropped from that view (the head's view judges
    it), unless ixtool's row job runs every row; a row built without the sweep matrix
    stays (its bucket is not known)."""
    from inferencex_tools.policy.service import _run_in_base_view
    from inferencex_tools.workflow import bucket_of
    from inferencex_tools.workflow.jobenv import Dispatch, Workflows

    d = Dispatch("run-sweep.yml", "sweep-1k1k", "benchmark-tmpl.yml", "single_node.1k1k",
                 {}, events)
    wf = Workflows(dispatches={"single_node.1k1k": d}, row_job=row_job)
    rows = [_row({"isl": 1024, "osl": 1024}), _row({"scenario-type": "agentic-coding"}),
            _row({})]
    got, _ = _run_in_base_view(rows, wf)  # type: ignore[arg-type]
    names = [bucket_of(r.matrix) if r.matrix else "(no matrix)" for r in got]
    if row_job is None:
        kept = [*kept, "(no matrix)"]
    assert names == kept, names
