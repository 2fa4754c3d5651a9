"""Queue-priority parity with the reference's ``utils/ci_priority.py`` (SWEEP.md §1.9).

The reference script is not shipped with the real tree, so parity is proved three ways:

* hand-derived rows: the spec's sums written out for concrete rows (``HAND``);
* an independent model of §1.9 written here from the spec text (``spec_score`` /
  ``spec_annotate``), compared byte for byte with ``ixtool ci priority`` over the real
  ``configs/ci-priority.yaml`` on a changelog-driven matrix (last real commits of the
  history bundle) and on the real full sweep, for 24 event/label/PR/criteria
  combinations;
* self-consistency on the real rows: the same facts give the same score, tokens are
  unique per row and change with the namespace.

The CLI runs with argv copied from the real workflows (run-sweep, e2e-tests, profile,
speedbench-al, collectivex-sweep).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.ci.priority import Context, annotate, dumps, parse_policy
from inferencex_tools.ci.priority_service import load_policy
from inferencex_tools.errors import InputError
from tests.conftest import git

# ----------------------------------------------------------------- the spec's model


def _d(x: Any) -> Decimal:
    return Decimal(str(x))


def spec_score(row: dict[str, Any], pol: dict[str, Any], event: str, labels: set[str],
               criteria: set[str] | None) -> str:
    """§1.9 as written: base + event + multi-node + agentic + eval-only + precision +
    spec-decoding + first framework prefix + exact model-prefix + checklist; patchwork
    (label or criterion) unless waived → patchwork score; criteria mask the facts."""
    adj, lab = pol["adjustments"], pol["labels"]
    patch = lab["patchwork"]
    if ((criteria is not None and "patchwork" in criteria) or labels & set(patch["names"])) \
            and not labels & set(patch.get("waived-by", [])):
        return f"{_d(patch['score']).quantize(Decimal('0.001'), ROUND_HALF_UP):.3f}"

    def counts(fact: str) -> bool:
        return criteria is None or fact in criteria

    def prefixed(value: str, prefix: str) -> bool:
        return value == prefix or value.startswith(prefix + "-")

    total = _d(pol["base-score"]) + _d(adj.get("event", {}).get(event, 0))
    if row.get("prefill") is not None and counts("multi-node"):
        total += _d(adj["multi-node"])
    if row.get("scenario-type") == "agentic-coding" and counts("agentic"):
        total += _d(adj["agentic"])
    if row.get("eval-only") is True and counts("eval-only"):
        total += _d(adj["eval-only"])
    precision = str(row.get("precision", ""))
    if counts(precision):
        total += _d(adj["precision"].get(precision, 0))
    spec = str(row.get("spec-decoding", ""))
    if counts(spec):
        total += _d(adj["spec-decoding"].get(spec, 0))
    fw = str(row.get("framework", ""))
    if criteria is None or any(c in criteria and prefixed(fw, c)
                               for c in adj["framework-prefix"]):
        for prefix, value in adj["framework-prefix"].items():
            if prefixed(fw, prefix):
                total += _d(value)
                break
    model = str(row.get("model-prefix", ""))
    if criteria is None or any(c in criteria and prefixed(model, c)
                               for c in adj["model-prefix"]):
        total += _d(adj["model-prefix"].get(model, 0))
    if (criteria is not None and "checklist-complete" in criteria) or \
            labels & set(lab["checklist-complete"]["names"]):
        total += _d(lab["checklist-complete"]["adjustment"])
    return f"{total.quantize(Decimal('0.001'), ROUND_HALF_UP):.3f}"


def spec_token(row: Any, namespace: str, path: list[str]) -> str:
    canon = json.dumps(row, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{namespace}:{'/'.join(path)}:{canon}".encode()).hexdigest()[:32]


def spec_annotate(value: Any, pol: dict[str, Any], combo: dict[str, Any],
                  path: list[str] | None = None) -> Any:
    path = path or []
    if isinstance(value, list):
        return [spec_annotate(v, pol, combo, [*path, str(i)]) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    out = {k: spec_annotate(v, pol, combo, [*path, k]) for k, v in value.items()}
    if "runner" in value and "framework" in value:
        out["priority"] = spec_score(value, pol, combo["event"], set(combo["labels"]),
                                     None if combo["criteria"] is None
                                     else set(combo["criteria"]))
        out["queue-token"] = spec_token(value, combo["namespace"], path)
        if combo["pr"] is not None and pol["labels"]["skip-queue"]["name"] in combo["labels"]:
            out["skip-queue-pr"] = combo["pr"]
    return out


def spec_dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":")) + "\n"


# ------------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def policy_path(corpus: Path) -> Path:
    return corpus / "configs" / "ci-priority.yaml"


@pytest.fixture(scope="module")
def raw_policy(policy_path: Path) -> dict[str, Any]:
    import yaml

    data: dict[str, Any] = yaml.safe_load(policy_path.read_text())
    return data


@pytest.fixture(scope="module")
def full_rows(corpus: Path) -> list[dict[str, Any]]:
    from inferencex_tools.sweep.generate import SweepRequest
    from inferencex_tools.sweep.service import run_sweep

    cfg = corpus / "configs"
    m = run_sweep(SweepRequest(mode="full"),
                  [str(cfg / "amd-master.yaml"), str(cfg / "nvidia-master.yaml")],
                  str(cfg / "runners.yaml"))
    rows = json.loads(json.dumps(m.rows))
    assert len(rows) > 1000
    return rows  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def changelog_matrix(history_repo: Path) -> dict[str, Any]:
    """process_changelog-shaped object for the last real changelog additions."""
    from inferencex_tools.sweep.changelog import FromChangelogOptions
    from inferencex_tools.sweep.service import run_from_changelog

    res = run_from_changelog("HEAD~3", "HEAD", Path("perf-changelog.yaml"),
                             FromChangelogOptions(), repo_path=history_repo)
    matrix = json.loads(json.dumps(res.matrix))
    assert sum(len(v) for v in matrix["single_node"].values()) + \
        sum(len(v) for v in matrix["multi_node"].values()) > 0
    return matrix  # type: ignore[no-any-return]


# 24 event/label/PR/criteria/namespace combinations (the real workflows' shapes first)
ALL_CRITERIA = ["multi-node", "agentic", "eval-only", "fp4", "mtp", "eagle", "eagle3",
                "sglang", "vllm", "dynamo-sglang", "dynamo-vllm", "glm5", "glm5.1",
                "kimik2.5", "kimik3", "dsv4", "minimaxm3", "qwen3.5", "dsr1",
                "checklist-complete"]
COMBOS: list[dict[str, Any]] = [
    {"event": "pull_request", "labels": ["full-sweep-enabled"], "pr": 2707, "criteria": None,
     "namespace": "18000000001:1"},
    {"event": "push", "labels": [], "pr": 0, "criteria": None, "namespace": "18000000002:1"},
    {"event": "pull_request", "labels": ["sweep-enabled", "skip_queue"], "pr": 2707,
     "criteria": None, "namespace": "18000000003:2"},
    {"event": "pull_request", "labels": ["skip_queue"], "pr": None, "criteria": None,
     "namespace": "local"},
    {"event": "push", "labels": ["skip_queue"], "pr": 0, "criteria": None, "namespace": "x"},
    {"event": "pull_request", "labels": ["ci-patchwork"], "pr": 1, "criteria": None,
     "namespace": "n:1"},
    {"event": "pull_request", "labels": ["engine-patch", "ci-patchwork-waived"], "pr": 1,
     "criteria": None, "namespace": "n:1"},
    {"event": "pull_request", "labels": ["ci-checklist-complete"], "pr": 5, "criteria": None,
     "namespace": "n:2"},
    {"event": "pull_request", "labels": ["ci-checklist-complete", "ci-patchwork",
                                         "ci-patchwork-waived"], "pr": 5, "criteria": None,
     "namespace": "n:2"},
    {"event": "workflow_dispatch", "labels": [], "pr": None, "criteria": None,
     "namespace": "1:1:single"},
    {"event": "workflow_dispatch", "labels": [], "pr": None, "criteria": None,
     "namespace": "1:1:multi"},
    {"event": "schedule", "labels": [], "pr": None, "criteria": None, "namespace": "9:3"},
    {"event": "", "labels": [], "pr": None, "criteria": None, "namespace": "local"},
    {"event": "pull_request", "labels": ["full-sweep-enabled"], "pr": 7, "criteria": [],
     "namespace": "c:0"},
    {"event": "pull_request", "labels": [], "pr": 7, "criteria": ["multi-node", "fp4"],
     "namespace": "c:1"},
    {"event": "push", "labels": [], "pr": 0, "criteria": ["agentic", "dsr1", "sglang"],
     "namespace": "c:2"},
    {"event": "pull_request", "labels": [], "pr": 7, "criteria": ["patchwork"],
     "namespace": "c:3"},
    {"event": "pull_request", "labels": ["ci-patchwork-waived"], "pr": 7,
     "criteria": ["patchwork", "mtp"], "namespace": "c:4"},
    {"event": "pull_request", "labels": [], "pr": 7, "criteria": ALL_CRITERIA,
     "namespace": "c:5"},
    {"event": "pull_request", "labels": ["skip_queue"], "pr": 7,
     "criteria": ["checklist-complete", "dynamo-vllm", "kimik3", "eval-only"],
     "namespace": "c:6"},
    {"event": "push", "labels": ["ci-checklist-complete", "skip_queue"], "pr": 31415,
     "criteria": ["glm5", "vllm", "dsv4", "minimaxm3"], "namespace": "c:7"},
    {"event": "pull_request", "labels": ["évals", "skip_queue"], "pr": 12,
     "criteria": None, "namespace": "ünïcode:1"},
    {"event": "pull_request", "labels": ["all-evals", "evals-only", "agentx-fast"],
     "pr": 2, "criteria": None, "namespace": "77:1:multi-agentic-eval"},
    {"event": "merge_group", "labels": [], "pr": None, "criteria": ["eagle3", "qwen3.5"],
     "namespace": "mg"},
]


def _ctx(combo: dict[str, Any]) -> Context:
    return Context(event_name=combo["event"], labels=frozenset(combo["labels"]),
                   namespace=combo["namespace"], pr_number=combo["pr"],
                   criteria=None if combo["criteria"] is None else frozenset(combo["criteria"]))


def _argv(combo: dict[str, Any], policy: Path, matrix: Path) -> list[str]:
    argv = ["--policy", str(policy), "--event-name", combo["event"],
            "--queue-namespace", combo["namespace"],
            "--labels-json", json.dumps(combo["labels"]), "--input", str(matrix)]
    if combo["pr"] is not None:
        argv += ["--pr-number", str(combo["pr"])]
    if combo["criteria"] is not None:
        argv += ["--criteria-json", json.dumps(combo["criteria"])]
    return argv


def test_combinations_cover_the_required_facts() -> None:
    assert len(COMBOS) >= 20
    assert {c["event"] for c in COMBOS} >= {"push", "pull_request", ""}
    assert any(c["criteria"] is not None for c in COMBOS)
    assert any(c["pr"] is None for c in COMBOS) and any(c["pr"] == 0 for c in COMBOS)


# -------------------------------------------------------------------- hand-derived

HAND = [
    # (row, context, expected priority): sums written out from SWEEP.md §1.9
    ({"runner": "b200", "framework": "sglang", "model-prefix": "dsr1", "precision": "fp4",
      "spec-decoding": "mtp"}, Context(event_name="push"),
     "5.750"),  # 1.0 + push 2.0 + fp4 0.75 + mtp 0.75 + sglang 0.5 + dsr1 0.75
    ({"runner": "gb200", "framework": "dynamo-vllm", "model-prefix": "kimik3",
      "precision": "fp8", "spec-decoding": "none", "scenario-type": "agentic-coding",
      "prefill": {"tp": 4}}, Context(event_name="pull_request",
                                     labels=frozenset({"ci-checklist-complete"})),
     "5.500"),  # 1.0 + multi 1.25 + agentic 1.0 + dynamo-vllm 0.5 + kimik3 1.5 + checklist 0.25
    ({"runner": "h200", "framework": "trt", "model-prefix": "gptoss", "precision": "fp8",
      "spec-decoding": "none", "eval-only": True}, Context(), "1.000"),  # base only
    ({"runner": "h200", "framework": "sglang-disagg", "model-prefix": "glm5.2",
      "precision": "fp8"}, Context(), "1.500"),  # sglang-… prefix; glm5.2 not in the table
    ({"runner": "h200", "framework": "vllm", "model-prefix": "glm5.1", "precision": "fp4",
      "spec-decoding": "eagle3"}, Context(labels=frozenset({"engine-patch"})),
     "0.000"),  # patchwork label, not waived
    ({"runner": "h200", "framework": "vllm", "model-prefix": "glm5.1", "precision": "fp4",
      "spec-decoding": "eagle3"},
     Context(labels=frozenset({"engine-patch", "ci-patchwork-waived"})),
     "3.750"),  # 1.0 + fp4 0.75 + eagle3 0.75 + vllm 0.5 + glm5.1 0.75
    ({"runner": "b200", "framework": "sglang", "model-prefix": "dsr1", "precision": "fp4",
      "spec-decoding": "mtp", "prefill": {}}, Context(event_name="push",
                                                     criteria=frozenset({"fp4"})),
     "3.750"),  # criteria mask everything but fp4: 1.0 + 2.0 + 0.75
    ({"runner": "mi355x", "framework": "atom", "model-prefix": "qwen3.5",
      "precision": "fp8"}, Context(criteria=frozenset({"checklist-complete"})),
     "1.250"),  # checklist criterion; qwen3.5 masked out
]


@pytest.mark.parametrize("row,ctx,expected", HAND)
def test_hand_derived_scores(row: dict[str, Any], ctx: Context, expected: str,
                             policy_path: Path) -> None:
    out = annotate([row], load_policy(policy_path), ctx)
    assert out[0]["priority"] == expected
    canon = json.dumps(row, sort_keys=True, separators=(",", ":"))
    assert out[0]["queue-token"] == hashlib.sha256(
        f"{ctx.namespace}:0:{canon}".encode()).hexdigest()[:32]
    assert list(out[0])[-2:] == ["priority", "queue-token"]


def test_skip_queue_pr_needs_label_and_number(policy_path: Path) -> None:
    pol = load_policy(policy_path)
    row = {"runner": "h200", "framework": "vllm"}
    assert "skip-queue-pr" not in annotate(row, pol, Context(pr_number=5))
    assert "skip-queue-pr" not in annotate(row, pol, Context(labels=frozenset({"skip_queue"})))
    assert annotate(row, pol, Context(labels=frozenset({"skip_queue"}),
                                      pr_number=0))["skip-queue-pr"] == 0


def test_nested_jobs_and_paths(policy_path: Path) -> None:
    pol = load_policy(policy_path)
    payload = {"single_node": {"1k1k": [{"runner": "a", "framework": "vllm"}]},
               "meta": {"runner": "x"}, "n": 3}
    out = annotate(payload, pol, Context(namespace="ns"))
    job = out["single_node"]["1k1k"][0]
    canon = json.dumps({"runner": "a", "framework": "vllm"}, sort_keys=True,
                       separators=(",", ":"))
    assert job["queue-token"] == hashlib.sha256(
        f"ns:single_node/1k1k/0:{canon}".encode()).hexdigest()[:32]
    assert "priority" not in out["meta"] and out["n"] == 3


# ----------------------------------------------------------------- parity on real data

@pytest.mark.parametrize("i", range(len(COMBOS)))
def test_parity_on_changelog_matrix(i: int, changelog_matrix: dict[str, Any],
                                    raw_policy: dict[str, Any], policy_path: Path) -> None:
    combo = COMBOS[i]
    mine = dumps(annotate(changelog_matrix, load_policy(policy_path), _ctx(combo)))
    assert mine == spec_dumps(spec_annotate(changelog_matrix, raw_policy, combo))


@pytest.mark.parametrize("i", range(len(COMBOS)))
def test_parity_on_full_sweep(i: int, full_rows: list[dict[str, Any]],
                              raw_policy: dict[str, Any], policy_path: Path) -> None:
    combo = COMBOS[i]
    mine = annotate(full_rows, load_policy(policy_path), _ctx(combo))
    assert dumps(mine) == spec_dumps(spec_annotate(full_rows, raw_policy, combo))


def test_self_consistency_on_full_sweep(full_rows: list[dict[str, Any]],
                                        policy_path: Path) -> None:
    pol = load_policy(policy_path)
    a = annotate(full_rows, pol, Context(event_name="pull_request", namespace="1:1"))
    b = annotate(full_rows, pol, Context(event_name="pull_request", namespace="1:2"))
    by_facts: dict[tuple[Any, ...], set[str]] = {}
    for row in a:
        facts = (row.get("prefill") is not None, row.get("scenario-type"),
                 row.get("eval-only") is True, row.get("precision"), row.get("spec-decoding"),
                 row.get("framework"), row.get("model-prefix"))
        by_facts.setdefault(facts, set()).add(row["priority"])
    assert all(len(s) == 1 for s in by_facts.values())
    assert len({s.pop() for s in by_facts.values()}) > 5  # the scores do discriminate
    tokens_a = [r["queue-token"] for r in a]
    assert len(set(tokens_a)) == len(full_rows)  # one token per row
    assert all(x["queue-token"] != y["queue-token"] for x, y in zip(a, b, strict=True))
    assert [x["priority"] for x in a] == [y["priority"] for y in b]


# ------------------------------------------------------------------ the CLI, verbatim

def _ixtool(argv: list[str], *, cwd: Path, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inferencex_tools", *argv], cwd=cwd,
                          input=stdin, capture_output=True, text=True, check=False)


def test_cli_with_run_sweep_argv(tmp_path: Path, corpus: Path, raw_policy: dict[str, Any],
                                 changelog_matrix: dict[str, Any]) -> None:
    """run-sweep.yml: matrix on stdin, default --policy relative to the checkout."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ci-priority.yaml").write_bytes(
        (corpus / "configs" / "ci-priority.yaml").read_bytes())
    labels = json.dumps(["full-sweep-enabled", "skip_queue"], indent=2)  # toJson() shape
    argv = ["ci", "priority", "--event-name", "pull_request",
            "--queue-namespace", "18200000000:1", "--labels-json", labels,
            "--pr-number", "2707", "--criteria-json", ""]
    proc = _ixtool(argv, cwd=tmp_path, stdin=json.dumps(changelog_matrix))
    assert proc.returncode == 0, proc.stderr
    combo = {"event": "pull_request", "labels": ["full-sweep-enabled", "skip_queue"],
             "pr": 2707, "criteria": None, "namespace": "18200000000:1"}
    assert proc.stdout == spec_dumps(spec_annotate(changelog_matrix, raw_policy, combo))
    assert '"skip-queue-pr":2707' in proc.stdout


@pytest.mark.parametrize("i", [0, 1, 4, 9, 14, 15, 21])
def test_cli_with_e2e_argv(i: int, tmp_path: Path, policy_path: Path,
                           raw_policy: dict[str, Any], full_rows: list[dict[str, Any]]) -> None:
    """e2e-tests.yml / profile.yml: --policy given, --input instead of stdin."""
    combo = COMBOS[i]
    matrix = tmp_path / "m.json"
    rows = full_rows[:300]
    matrix.write_text(json.dumps(rows))
    proc = _ixtool(["ci", "priority", *_argv(combo, policy_path, matrix)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == spec_dumps(spec_annotate(rows, raw_policy, combo))


@pytest.mark.parametrize("event,labels_json,pr", [
    ("push", "[]", "0"),                     # toJson(...labels.*.name) of a push
    ("push", "null", "0"),
    ("pull_request", '["skip_queue"]', "2707"),
    ("pull_request", '["sweep-enabled","ci-checklist-complete"]', "12"),
])
def test_cli_with_run_sweep_argv_per_event(event: str, labels_json: str, pr: str,
                                           tmp_path: Path, corpus: Path,
                                           raw_policy: dict[str, Any],
                                           changelog_matrix: dict[str, Any]) -> None:
    """run-sweep.yml's argv on push (``--pr-number "${{ …number || 0 }}"`` → 0) and on
    pull_request: accepted, and the bytes of the reference's semantics."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ci-priority.yaml").write_bytes(
        (corpus / "configs" / "ci-priority.yaml").read_bytes())
    argv = ["ci", "priority", "--event-name", event, "--queue-namespace", "18200000000:1",
            "--labels-json", labels_json, "--pr-number", pr, "--criteria-json", ""]
    proc = _ixtool(argv, cwd=tmp_path, stdin=json.dumps(changelog_matrix))
    assert proc.returncode == 0, proc.stderr
    combo = {"event": event, "labels": json.loads(labels_json) or [], "pr": int(pr),
             "criteria": None, "namespace": "18200000000:1"}
    assert proc.stdout == spec_dumps(spec_annotate(changelog_matrix, raw_policy, combo))


def test_cli_with_collectivex_argv(tmp_path: Path, corpus: Path) -> None:
    """collectivex-sweep.yml: no options at all (policy default, namespace 'local')."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ci-priority.yaml").write_bytes(
        (corpus / "configs" / "ci-priority.yaml").read_bytes())
    proc = _ixtool(["ci", "priority"], cwd=tmp_path,
                   stdin='[{"runner":"collectivex","framework":"collectivex"}]')
    assert proc.returncode == 0, proc.stderr
    canon = '{"framework":"collectivex","runner":"collectivex"}'
    token = hashlib.sha256(f"local:0:{canon}".encode()).hexdigest()[:32]
    assert proc.stdout == ('[{"runner":"collectivex","framework":"collectivex",'
                           f'"priority":"1.000","queue-token":"{token}"}}]\n')


@pytest.mark.parametrize("argv,stdin,needle", [
    (["--labels-json", '{"a": 1}'], "[]", "--labels-json must be a JSON array"),
    (["--labels-json", "[1]"], "[]", "--labels-json must be a JSON array"),
    (["--criteria-json", "nope"], "[]", "--criteria-json: not valid JSON"),
    (["--criteria-json", '["warp-drive"]'], '[{"runner":"a","framework":"b"}]',
     "unknown CI priority criteria"),
    ([], "{not json", "not valid JSON"),
    ([], '[{"runner":"a","framework":"b","node-count":0}]', "node-count"),
    (["--policy", "missing.yaml"], "[]", "does not exist"),
    (["--pr-number", "x"], "[]", "invalid value"),
])
def test_cli_errors_are_clean(argv: list[str], stdin: str, needle: str, tmp_path: Path,
                              policy_path: Path) -> None:
    if "--policy" not in argv:
        argv = ["--policy", str(policy_path), *argv]
    proc = _ixtool(["ci", "priority", *argv], cwd=tmp_path, stdin=stdin)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_criteria_not_checked_when_patchwork_decides(policy_path: Path) -> None:
    """As the reference: a not-waived patchwork label decides before criteria are read."""
    pol = load_policy(policy_path)
    row = {"runner": "a", "framework": "b"}
    out = annotate(row, pol, Context(labels=frozenset({"ci-patchwork"}),
                                     criteria=frozenset({"warp-drive"})))
    assert out["priority"] == "0.000"
    with pytest.raises(InputError):
        annotate(row, pol, Context(criteria=frozenset({"warp-drive"})))


@pytest.mark.parametrize("policy,needle", [
    ({"version": 2}, "version"),
    ({"version": True, "base-score": 1}, "version"),
    ({"version": 1, "base-score": "x", "adjustments": {}, "labels": {
        "patchwork": {"names": [], "score": 0}}}, "base-score must be a number"),
    ({"version": 1, "base-score": 1, "adjustments": [], "labels": {}}, "adjustments"),
    ({"version": 1, "base-score": 1, "adjustments": {}, "labels": {}}, "patchwork"),
])
def test_bad_policies(policy: dict[str, Any], needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        parse_policy(policy)


def test_history_policy_is_the_corpus_policy(history_repo: Path, policy_path: Path) -> None:
    """The changelog matrix is scored with the policy of the same snapshot."""
    raw = git(history_repo, "show", "HEAD:configs/ci-priority.yaml")
    assert raw.encode() == policy_path.read_bytes()


def test_from_changelog_priority_equals_the_pipe(history_repo: Path, tmp_path: Path,
                                                 raw_policy: dict[str, Any]) -> None:
    """`sweep from-changelog --priority` == process_changelog | ci_priority.py."""
    opts = ["--event-name", "pull_request", "--queue-namespace", "9:1",
            "--labels-json", '["skip_queue","ci-checklist-complete"]', "--pr-number", "5"]
    plain = _ixtool(["sweep", "from-changelog", "--base", "HEAD~3", "--head", "HEAD"],
                    cwd=history_repo)
    assert plain.returncode == 0, plain.stderr
    annotated = _ixtool(["sweep", "from-changelog", "--base", "HEAD~3", "--head", "HEAD",
                         "--priority", "configs/ci-priority.yaml", *opts], cwd=history_repo)
    assert annotated.returncode == 0, annotated.stderr
    combo = {"event": "pull_request", "labels": ["skip_queue", "ci-checklist-complete"],
             "pr": 5, "criteria": None, "namespace": "9:1"}
    assert annotated.stdout == spec_dumps(spec_annotate(json.loads(plain.stdout), raw_policy,
                                                        combo))
