"""``ixtool ci gate`` on 25 realistic GitHub payloads over the real configs.

A temporary repository holds the real master configs, runners.yaml, ci-priority.yaml and
changelog (base) plus a PR that appends an entry (head), the author's follow-up commit
tagged ``[skip-sweep]`` (the sweep runs: CI110), a commit built as merge-with-reuse's
refresh commit on the head (the tag skips the sweep: CI107) and a docs-only commit.
Each payload (``pull_request`` in its actions, draft, fork, labels; ``push``;
``merge_group``) is mapped to the row of the
truth table in docs/labels.md that states its decision; the gate must decide exactly
that, build the matrix iff the sweep runs, and keep every job's outputs under 1 MB.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.ci.gate import JOB_OUTPUT_LIMIT, GateRequest, gate, output_size
from tests.ci.test_truth_table import ROWS, cells_of
from tests.conftest import CORPUS_CONFIGS, TempRepo, copy_corpus

EVENTS = Path(__file__).resolve().parents[1] / "cases" / "ci" / "events"
ENTRY = """
- config-keys:
    - dsr1-fp8-h200-sglang
    - minimaxm3-fp8-h200-vllm-agentic-mtp
  description:
    - "Re-run the DSR1 and MiniMax-M3 H200 recipes."
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2711
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> dict[str, Any]:
    r = TempRepo(tmp_path_factory.mktemp("payloads") / "repo")
    copy_corpus(corpus, r.path, configs=(*CORPUS_CONFIGS, "ci-priority.yaml"))
    base = r.commit("base")
    with (r.path / "perf-changelog.yaml").open("a") as fh:
        fh.write(ENTRY)
    head = r.commit("Re-run DSR1 and MiniMax-M3 on H200")
    r.write("README.md", "notes\n")
    skip = r.commit("Tweak notes [skip-sweep]")
    # merge-with-reuse's empty refresh commit on the head (the link is canonical already)
    r.git("checkout", "-q", "-b", "prep", head)
    prep = r.commit("chore: refresh PR #2711 for sweep reuse [skip-sweep]\n\n"
                    "Ixtool-Reuse-Run: 17070001\n")
    r.git("checkout", "-q", "main")
    r.git("checkout", "-q", "-b", "docs", base)
    r.write("docs.md", "docs only\n")
    docs = r.commit("docs only")
    r.git("checkout", "-q", "main")
    return {"repo": r, "base": base, "head": head, "skip": skip, "prep": prep, "docs": docs}


def _template(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return data


def pull_request(shas: dict[str, str], *, action: str = "synchronize",
                 labels: tuple[str, ...] = (), changed: str | None = None, draft: bool = False,
                 fork: bool = False, head: str = "head", before: str = "base"
                 ) -> tuple[str, dict[str, Any]]:
    ev = copy.deepcopy(_template("pull_request.synchronize.json"))
    ev["action"] = action
    ev["before"], ev["after"] = shas[before], shas[head]
    pr = ev["pull_request"]
    pr["labels"] = [{"id": i + 1, "name": n, "color": "ededed"} for i, n in enumerate(labels)]
    pr["draft"] = draft
    pr["base"]["sha"], pr["head"]["sha"] = shas["base"], shas[head]
    if fork:
        fork_ev = _template("pull_request.synchronize-fork.json")["pull_request"]["head"]
        pr["head"]["repo"] = copy.deepcopy(fork_ev["repo"])
        pr["head"]["label"] = fork_ev["label"]
    if changed is not None:
        ev["label"] = {"id": 99, "name": changed, "color": "ededed"}
    return "pull_request", ev


def push(shas: dict[str, str], ref: str = "refs/heads/main") -> tuple[str, dict[str, Any]]:
    ev = copy.deepcopy(_template("push.json"))
    ev["ref"], ev["before"], ev["after"] = ref, shas["base"], shas["head"]
    if isinstance(ev.get("head_commit"), dict):
        ev["head_commit"]["id"] = shas["head"]
    return "push", ev


def merge_group(shas: dict[str, str]) -> tuple[str, dict[str, Any]]:
    text = (EVENTS / "merge_group.json").read_text()
    text = text.replace("__BASE_SHA__", shas["base"]).replace("__HEAD_SHA__", shas["head"])
    return "merge_group", json.loads(text)


FULL, SWEEP = "full-sweep-enabled", "sweep-enabled"
# (id, docs/labels.md row, builder)
CASES: list[tuple[str, int | None, Any]] = [
    ("sync-no-labels", 1, lambda s: pull_request(s)),
    ("sync-sweep-enabled", 2, lambda s: pull_request(s, labels=(SWEEP,))),
    ("sync-full", 3, lambda s: pull_request(s, labels=(FULL,))),
    ("sync-fail-fast", 5, lambda s: pull_request(s, labels=("full-sweep-fail-fast",))),
    ("sync-full-evals-only", 7, lambda s: pull_request(s, labels=(FULL, "evals-only"))),
    ("sync-trim-evals", 10, lambda s: pull_request(
        s, labels=(SWEEP, "all-evals", "evals-only"))),
    ("sync-two-primary", 12, lambda s: pull_request(s, labels=(SWEEP, FULL))),
    ("sync-modifier-only", 14, lambda s: pull_request(s, labels=("evals-only",))),
    ("sync-skip-queue", 15, lambda s: pull_request(s, labels=(SWEEP, "skip_queue"))),
    ("sync-policy-labels", 17, lambda s: pull_request(s, labels=(
        FULL, "ci-patchwork", "ci-patchwork-waived", "ci-checklist-complete"))),
    ("sync-draft", 19, lambda s: pull_request(s, labels=(FULL,), draft=True)),
    ("sync-fork", 20, lambda s: pull_request(s, labels=(FULL,), fork=True)),
    ("sync-skip-sweep-tag", 21, lambda s: pull_request(s, labels=(FULL,), head="skip",
                                                        before="head")),
    ("sync-prepared", 41, lambda s: pull_request(s, labels=(FULL,), head="prep",
                                                 before="head")),
    ("sync-prepared-wrong-before", 21, lambda s: pull_request(s, labels=(FULL,), head="prep",
                                                              before="base")),
    ("labeled-prepared", 42, lambda s: pull_request(
        s, action="labeled", labels=(FULL,), changed=FULL, head="prep", before="head")),
    ("opened", 24, lambda s: pull_request(s, action="opened", labels=(FULL,))),
    ("ready-for-review", 26, lambda s: pull_request(s, action="ready_for_review",
                                                    labels=(FULL,))),
    ("labeled-unrelated", 27, lambda s: pull_request(
        s, action="labeled", labels=(FULL, "documentation"), changed="documentation")),
    ("labeled-skip-queue", 29, lambda s: pull_request(
        s, action="labeled", labels=(FULL, "skip_queue"), changed="skip_queue")),
    ("labeled-fork", 33, lambda s: pull_request(
        s, action="labeled", labels=(FULL,), changed=FULL, fork=True)),
    ("push-main", 35, lambda s: push(s)),
    ("push-branch", 38, lambda s: push(s, "refs/heads/feature")),
    ("merge-group", 39, lambda s: merge_group(s)),
    ("docs-only", None, lambda s: pull_request(s, labels=(FULL,), head="docs")),
]


def test_there_are_twenty_payloads() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gate_decides_as_documented(case: tuple[str, int | None, Any], repo: dict[str, Any],
                                    tmp_path: Path) -> None:
    name, row_no, build = case
    event_name, payload = build(repo)
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    matrix = tmp_path / "matrix.json"
    out = gate(GateRequest(event_path=path, event_name=event_name, repo=repo["repo"].path,
                           matrix_out=matrix, namespace="1:1"), policy_stage=None)
    d, o = out.decision, dict(out.outputs)
    cells = cells_of(d)
    if row_no is not None:
        row = ROWS[row_no - 1]
        assert cells == {k: row[k] for k in cells}, f"{name}: docs/labels.md row {row_no}"
    else:  # docs-only: the changelog did not change, so nothing to sweep
        assert cells["sweep"] == "no" and "unchanged" in d.sweep.reason
    sweeps = cells["sweep"] == "yes"
    assert o["sweep"] == ("true" if sweeps else "false"), out.result.findings
    assert o["gate"] == ("fail" if out.result.errors else "pass")
    if sweeps:
        m = json.loads(matrix.read_text())
        assert int(o["jobs"]) > 0 and json.loads(o["shard-1"])
        rows = [r for b in ("single_node", "multi_node") for v in m[b].values() for r in v]
        rows += [r for b in ("evals", "agentic_evals", "multinode_evals",
                             "multinode_agentic_evals") for r in m[b]]
        assert rows and all("priority" in r and "queue-token" in r for r in rows)
        assert (o["canary-row"] != "[]") == (d.sweep.canary and bool(m["single_node"]))
        if "skip_queue" in d.labels:
            assert all(r["skip-queue-pr"] == d.pr_number for r in rows)
    else:
        assert o["jobs"] == "0" and not matrix.exists()
    assert o["trusted-sweep"] == ("true" if name in ("sync-fork", "labeled-fork") else "false")
    # the tag skips the sweep only on the push of the preparation commit (docs/labels.md)
    assert o["skip-sweep-tag"] == ("true" if name == "sync-prepared" else "false")
    # every output of the job together stays under GitHub's 1 MB
    assert output_size(out.outputs) < JOB_OUTPUT_LIMIT
    assert "findings" not in o


def test_job_output_limit_is_enforced() -> None:
    big = [("shard-1", "x" * 600_000)]
    assert output_size(big) > JOB_OUTPUT_LIMIT
