"""``ixtool policy check`` on the real InferenceX tree (843c6254f), out of the box: no
registry, the repository's own workflows, launchers and recipes.

* the whole check (slow, once per session through the CLI): exit 0/1, single-node rows
  trace to a server, no trace fails for a missing workflow variable, every
  spec-decoding key gets exactly the rules of the audit (docs/policy-real-tree.md,
  tests/cases/policy/real-tree-verdicts.json), the seed recipe passes, findings carry
  their keys and rows in JSON and SARIF;
* ``--base``: a curve edit is an error, a recipe-only change traces only the rows of
  that recipe, a change that touches nothing the policy reads traces nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.policy.service import CheckRequest, run_check, run_check_incremental
from tests.policy.conftest import clone, commit_all

CASES = Path(__file__).resolve().parents[1] / "cases" / "policy"
SEED_KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"
SEED_SCRIPT = "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"
CURVE = "golden_al_distribution/minimaxm3_eagle3.yaml"


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true"}
    return subprocess.run([sys.executable, "-m", "inferencex_tools", "policy", "check",
                           "--root", str(repo), *args], env=env, capture_output=True,
                          text=True, check=False, timeout=1800)


@pytest.fixture(scope="session")
def full_check(real_tree: Path, tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """The whole check as a maintainer runs it: (exit code, JSON report, SARIF log)."""
    p = _cli(real_tree, "--format", "json")
    assert p.returncode in (0, 1), p.stderr[-2000:]
    report = json.loads(p.stdout)
    from inferencex_tools.report.findings import Finding, Result, Severity
    from inferencex_tools.report.reporters import render_sarif

    res = Result("policy check")
    for f in report["findings"]:
        res.add(Finding(f["rule"], Severity(f["severity"]), f["file"], f.get("line"),
                        f.get("column"), f["message"], f.get("hint"), f.get("data") or {}))
    return p.returncode, report, json.loads(render_sarif(res))


def _by_key(report: dict[str, Any], *, notes: bool = False) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for f in report["findings"]:
        if f["severity"] == "note" and not notes:
            continue
        for k in f["data"]["config_keys"]:
            out[k].add(f["rule"])
    return out


@pytest.mark.slow
def test_out_of_the_box_exit_code_and_registry(
        full_check: tuple[int, dict[str, Any], dict[str, Any]]) -> None:
    rc, report, _ = full_check
    assert rc == 1  # the tree has real violations
    assert report["info"]["registry"]["source"] == "derived"
    assert report["info"]["job-environment"] == "workflows"


@pytest.mark.slow
def test_single_node_rows_trace_to_a_server(
        full_check: tuple[int, dict[str, Any], dict[str, Any]]) -> None:
    rows = [r for r in full_check[1]["info"]["rows"] if not r["multinode"]]
    assert len(rows) > 600
    served = [r for r in rows if r["server"]]
    assert len(served) / len(rows) >= 0.97, sorted(
        {(r["config-key"], r["verdict"]) for r in rows if not r["server"]})


@pytest.mark.slow
def test_no_trace_fails_for_a_missing_workflow_variable(
        full_check: tuple[int, dict[str, Any], dict[str, Any]]) -> None:
    failed = [f for f in full_check[1]["findings"] if f["rule"] == "PO301"]
    assert not [f for f in failed if "missing variable" in f["message"]], failed


@pytest.mark.slow
def test_every_spec_decoding_key_gets_the_audited_rules(
        full_check: tuple[int, dict[str, Any], dict[str, Any]]) -> None:
    want = json.loads((CASES / "real-tree-verdicts.json").read_text())["keys"]
    got = _by_key(full_check[1])
    assert {k: sorted(got.get(k, ())) for k in want} == want
    # a verdict for every key: rules, or rows judged clean
    judged = {r["config-key"] for r in full_check[1]["info"]["rows"]
              if r["verdict"] == "ok" and r["launch"] != "not checked"}
    assert all(want[k] or k in judged for k in want)


@pytest.mark.slow
def test_the_known_truths_of_the_real_tree(
        full_check: tuple[int, dict[str, Any], dict[str, Any]]) -> None:
    got = _by_key(full_check[1])
    # evals left synthetic: 11 since the rows are the generator's jobs (113aed2).  The
    # recipes of these three hard-code the synthetic AL too, but every concurrency of
    # their multi-node agentic entries is below MIN_EVAL_CONC 16 ([10, 12], [2]/[4]/[8],
    # [2, 4]): `--evals-only` marks none of them (SWEEP.md 4.1; the oracle's
    # full-sweep__evals-only has no such row), so no eval job runs them (--all-evals would)
    assert len([k for k, r in got.items() if "PO402" in r]) == 11
    assert not {"glm5.2-fp4-gb200-dynamo-sglang-agentic-disagg",
                "glm5.2-fp4-gb200-dynamo-sglang-agentic-mtp-agg",
                "glm5.2-fp4-gb300-dynamo-sglang-agentic-agg"} & set(got)
    assert sorted(k for k, r in got.items() if "PO407" in r) == [  # AL of another K
        "dsv4-fp4-gb200-dynamo-vllm-agentic-mtp-agg",
        "dsv4-fp4-gb200-dynamo-vllm-agentic-mtp-disagg"]
    assert sorted(k for k, r in got.items() if "PO408" in r) == [  # other thinking mode
        "dsv4-fp4-gb300-dynamo-trt-agentx"]
    # launcher truth: synthetic acceptance injected by the launcher the runner uses
    assert "PO413" in got["dsv4-fp4-b200-dynamo-vllm-mtp"]
    assert "PO413" in got["dsv4-fp4-gb200-dynamo-vllm-mtp2"]
    assert "PO401" not in got.get("kimik3-fp4-b200-dynamo-vllm-agentic-dspark", set())
    # the six keys nothing checked before: a verdict with its reason
    for key in ("dsr1-fp8-mi355x-sglang-disagg-mtp", "dsr1-fp4-mi355x-sglang-disagg-mtp",
                "dsr1-fp4-mi355x-sglang-disagg-8k1k-mtp", "dsv4-fp4-mi355x-sglang-disagg-mtp",
                "dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp", "glm5.1-fp8-b200-tilert"):
        f = [f for f in full_check[1]["findings"]
             if f["rule"] == "PO308" and key in f["data"]["config_keys"]]
        assert len(f) == 1 and "not checked: " in f[0]["message"], key


@pytest.mark.slow
def test_the_seed_recipe_passes(full_check: tuple[int, dict[str, Any], dict[str, Any]]
                                ) -> None:
    rows = [r for r in full_check[1]["info"]["rows"] if r["config-key"] == SEED_KEY]
    assert rows and all(r["verdict"] == "ok" and r["server"] for r in rows), rows
    assert SEED_KEY not in _by_key(full_check[1])


@pytest.mark.slow
def test_findings_carry_keys_and_rows_in_json_and_sarif(
        full_check: tuple[int, dict[str, Any], dict[str, Any]]) -> None:
    _, report, sarif = full_check
    for f in report["findings"]:
        assert isinstance(f["data"]["config_keys"], list) and isinstance(f["data"]["rows"], list)
    with_rows = [f for f in report["findings"] if f["data"]["rows"]]
    assert with_rows and all({"key", "conc", "mode"} <= set(r) for f in with_rows
                             for r in f["data"]["rows"])
    results = sarif["runs"][0]["results"]
    assert len(results) == len(report["findings"])
    assert all("config_keys" in r["properties"]["data"] for r in results)


# ------------------------------------------------------------------------ --base

def _changed_clone(real_tree: Path, tmp: Path, edit: dict[str, tuple[str, str]]) -> Path:
    repo = clone(real_tree, tmp / "repo")
    for rel, (old, new) in edit.items():
        p = repo / rel
        text = p.read_text(encoding="utf-8")
        assert old in text, (rel, old)
        p.write_text(text.replace(old, new, 1), encoding="utf-8")
    commit_all(repo, "the change")
    return repo


def test_base_nothing_policy_relevant_traces_nothing(real_tree: Path, tmp_path: Path) -> None:
    repo = _changed_clone(real_tree, tmp_path, {"AGENTS.md": ("\n", "\n\nA new line.\n")})
    res = run_check(CheckRequest(root=repo, base="HEAD~1"))
    assert res.info["traces"] == 0 and res.info["base"]["traced-keys"] == {}
    assert not [f for f in res.findings if f.severity.value != "note"], res.findings
    # the gate's entry point: the same, comparing two commits
    inc = run_check_incremental(repo, base="HEAD~1", head="HEAD")
    assert inc.info["traces"] == 0 and inc.info["base"]["changed-files"] == ["AGENTS.md"]


def test_base_recipe_only_change_traces_only_its_rows(real_tree: Path, tmp_path: Path) -> None:
    repo = _changed_clone(real_tree, tmp_path, {SEED_SCRIPT: ("\n", "\nexport IX_SEEN=1\n")})
    res = run_check(CheckRequest(root=repo, base="HEAD~1"))
    traced = res.info["base"]["traced-keys"]
    assert set(traced) == {SEED_KEY}, traced
    assert all(SEED_SCRIPT in r for r in traced[SEED_KEY])
    rows = res.info["rows"]
    assert rows and {r["config-key"] for r in rows} == {SEED_KEY}
    assert all(r["verdict"] == "ok" for r in rows)
    assert not res.errors


@pytest.mark.slow
def test_base_curve_edit_is_named_and_judged_by_the_base(real_tree: Path,
                                                         tmp_path: Path) -> None:
    text = (real_tree / CURVE).read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("3:"))
    k, v = line.split(":")
    repo = _changed_clone(real_tree, tmp_path, {CURVE: (line, f"{k}: {float(v) + 0.1:.2f}")})
    res = run_check(CheckRequest(root=repo, base="HEAD~1"))
    po109 = [f for f in res.findings if f.rule == "PO109"]
    assert len(po109) == 1 and po109[0].file == CURVE
    assert po109[0].severity.value == "warning"  # the verdict is the base curve's
    # recipes are judged against the base's curve, and only the curve's model is traced
    assert res.info["traces"] > 0
    assert all(k.startswith("minimaxm3") for k in res.info["base"]["traced-keys"])
    assert not res.errors


def test_base_change_to_a_file_a_launcher_sources_traces_its_rows(
        real_tree: Path, tmp_path: Path) -> None:
    """A helper outside runners/ that a launcher sources still selects that launcher's
    rows (the candidates of --base follow the launcher's closure, not only runners/)."""
    key, launcher = "dsv4-fp4-b200-dynamo-vllm-mtp", "runners/launch_b200-nscale-slurm.sh"
    helper = "benchmarks/multi_node/ix_helper.sh"
    repo = clone(real_tree, tmp_path / "repo")
    (repo / helper).write_text("IX_HELPER=1\n", encoding="utf-8")
    text = (repo / launcher).read_text(encoding="utf-8")
    first, rest = text.split("\n", 1)
    (repo / launcher).write_text(
        f'{first}\nsource "$GITHUB_WORKSPACE/{helper}"\n{rest}', encoding="utf-8")
    commit_all(repo, "the launcher sources a helper")
    (repo / helper).write_text("IX_HELPER=2\n", encoding="utf-8")
    commit_all(repo, "the helper changes")
    res = run_check(CheckRequest(root=repo, base="HEAD~1", config_keys=[key]))
    assert set(res.info["base"]["traced-keys"]) == {key}
    assert any(helper in r for r in res.info["base"]["traced-keys"][key])


def test_base_config_only_change_traces_only_that_key(real_tree: Path, tmp_path: Path) -> None:
    """A change to one config block (and the changelog) selects that key's rows only: the
    other rows' launchers, scripts and recipes cannot depend on a changed .yaml file
    that no recipe setting names."""
    cfg = "configs/nvidia-master.yaml"
    text = (real_tree / cfg).read_text(encoding="utf-8")
    start = text.index(f"\n{SEED_KEY}:\n") + 1
    block = text[start:text.index("\n", text.index("  image: ", start))]
    repo = _changed_clone(real_tree, tmp_path, {cfg: (block, block + "-rebuilt")})
    res = run_check(CheckRequest(root=repo, base="HEAD~1"))
    traced = res.info["base"]["traced-keys"]
    assert set(traced) == {SEED_KEY}, traced
    assert traced[SEED_KEY] == [f"config block of {SEED_KEY} changed"]
    assert {r["config-key"] for r in res.info["rows"]} == {SEED_KEY}


def _runner_edit(real_tree: Path, tmp: Path, edit: tuple[str, str]) -> tuple[Path, str]:
    """A runners.yaml edit, and the runner label of the seed key (whose label it edits)."""
    repo = _changed_clone(real_tree, tmp, {"configs/runners.yaml": edit})
    return repo, "cluster:h200-dgxc"


@pytest.mark.parametrize("what,edit,selects", [
    ("a node added to one label",
     ("  cluster:h200-dgxc:\n", "  cluster:h200-dgxc:\n    - h200-dgxc-slurm_99\n"), "label"),
    ("a comment", ("labels:\n", "# reviewed\nlabels:\n"), "none"),
    # runners.yaml no longer loads: the sweep refuses the keys that need its hardware
    ("a new top-level key", ("labels:\n", "owners: [infra]\nlabels:\n"), "refused"),
])
def test_base_runners_yaml_change_traces_the_rows_of_its_labels(
        real_tree: Path, tmp_path: Path, what: str, edit: tuple[str, str],
        selects: str) -> None:
    """A job reads only its own runner label's runners.yaml entry: a change to one label
    traces that label's rows; a comment nothing; anything else in the file every row
    (checked here on the seed key alone, with config_keys)."""
    text = (real_tree / "configs/runners.yaml").read_text(encoding="utf-8")
    if edit[0] not in text:
        pytest.skip(f"the tree's runners.yaml has no {edit[0]!r}")
    repo, label = _runner_edit(real_tree, tmp_path, edit)
    res = run_check(CheckRequest(root=repo, base="HEAD~1", config_keys=[SEED_KEY]))
    traced = res.info["base"]["traced-keys"]
    if selects == "none":
        assert traced == {} and res.info["traces"] == 0, what
    elif selects == "refused":
        assert traced == {} and res.info["traces"] == 0, what
        assert {f.file: f.rule for f in res.findings} == {
            "configs/runners.yaml": "PO206", "configs/nvidia-master.yaml": "PO206"}
        assert "unknown key(s) owners" in res.findings[0].message
    else:
        assert set(traced) == {SEED_KEY}, what
        want = ("configs/runners.yaml changed (runner label cluster:h200-dgxc)"
                if selects == "label" else "configs/runners.yaml changed")
        assert want in traced[SEED_KEY], traced
    # every other key: a one-label change selects only keys on that label (the keys on
    # it besides the seed's are left out: tracing them, ~10 CPU-s, asserted nothing)
    if selects == "label":
        from inferencex_tools.io.yamlio import load_safe

        runner = {k: v.get("runner") for f in ("nvidia-master.yaml", "amd-master.yaml")
                  for k, v in load_safe((repo / "configs" / f).read_bytes()).items()}
        off = sorted(k for k, r in runner.items() if r != label)
        assert off and SEED_KEY not in off
        whole = run_check(CheckRequest(root=repo, base="HEAD~1",
                                       config_keys=[SEED_KEY, *off]))
        keys = set(whole.info["base"]["traced-keys"])
        assert keys == {SEED_KEY}, keys


LIB = "benchmarks/benchmark_lib.sh"
TMPL = ".github/workflows/benchmark-tmpl.yml"


@pytest.mark.parametrize("what,edit,traced", [
    # the seed's rows run the library's agentic helpers, whose command word built at
    # run time (`$REPLAY_CMD`) starts with the aiperf path (`$AIPERF_CLI …`): it runs no
    # function, so a body no reached function calls counts for nothing
    ("an unreached helper's body", ("run_benchmark_serving() {\n",
                                    "run_benchmark_serving() {\n    : reviewed\n"), False),
    ("an unused function's body", ("_find_latest_profile_trace() {\n",
                                   "_find_latest_profile_trace() {\n    : x\n"), False),
    # a comment: nothing any trace can see
    ("a comment", ("check_env_vars() {\n", "# reviewed\ncheck_env_vars() {\n"), False),
    # a function the seed script calls
    ("a called function's body", ("require_agentic_kv_offload_none() {\n",
                                  "require_agentic_kv_offload_none() {\n    : x\n"), True),
    # a helper's helper: the trace runs the library's helpers as they are (they were
    # recorders, and their bodies counted for nothing)
    ("a helper the seed's helpers call", ("_repair_truncated_gpu_metrics_tail() {\n",
                                          "_repair_truncated_gpu_metrics_tail() {\n    : x\n"),
     True),
    # the library's top level: every script that sources it
    ("the top level", ("check_env_vars() {\n", "IX_TOP=1\ncheck_env_vars() {\n"), True),
])
def test_base_library_change_traces_the_rows_that_reach_it(
        real_tree: Path, tmp_path: Path, what: str, edit: tuple[str, str],
        traced: bool) -> None:
    """A change to a shell library selects a row only when the row's launcher or script
    can reach what changed: its top level, or a function named in the text they can run
    (real PRs #2152 and #2186 changed helpers of benchmark_lib.sh and traced ~700
    rows)."""
    repo = _changed_clone(real_tree, tmp_path, {LIB: edit})
    res = run_check(CheckRequest(root=repo, base="HEAD~1", config_keys=[SEED_KEY]))
    keys = res.info["base"]["traced-keys"]
    if traced:
        assert set(keys) == {SEED_KEY} and any(LIB in r for r in keys[SEED_KEY]), what
    else:
        assert keys == {} and res.info["traces"] == 0, what


# issue 32: a helper of the library that starts a second server with another AL
_RELAUNCH = ("wait_for_server_ready() {\n", """wait_for_server_ready() {
    if [[ ${SPEC_CONFIG:-} == *synthetic_acceptance_length* ]]; then
        local k='"synthetic_acceptance_length"'
        SPEC_CONFIG="${SPEC_CONFIG%"$k"*}$k: 3.60}"
        vllm serve "$MODEL_PATH" --speculative-config "$SPEC_CONFIG" > /dev/null 2>&1 &
    fi
""")


@pytest.mark.parametrize("base", ["HEAD~1", None])
def test_a_library_helper_that_launches_a_server_is_checked(
        real_tree: Path, tmp_path: Path, base: str | None) -> None:
    """The trace runs the library's helpers as they are (it stubs programs, never a
    repository function): a PR that makes ``wait_for_server_ready`` start vLLM again
    with ``synthetic_acceptance_length`` 3.60 (golden 2.78) fails the full check and
    the ``--base`` check alike.  When the helper was a recorder, both passed."""
    repo = _changed_clone(real_tree, tmp_path, {LIB: _RELAUNCH})
    res = run_check(CheckRequest(root=repo, base=base, config_keys=[SEED_KEY]))
    wrong = [f for f in res.findings if f.rule == "PO403" and "3.6" in f.message]
    assert wrong, [(f.rule, f.message[:200]) for f in res.findings]


_CLIENT_DIR = "utils/bench_serving"
# what a PR makes the client's import do: start vLLM with synthetic AL 3.60
_CLIENT_IMPORT_LAUNCH = """import subprocess
subprocess.Popen(["vllm", "serve", "MiniMaxAI/MiniMax-M3-MXFP8", "--speculative-config",
                  '{"method": "eagle3", "model": "Inferact/MiniMax-M3-EAGLE3-GQA", '
                  '"num_speculative_tokens": 3, "rejection_sample_method": "synthetic", '
                  '"synthetic_acceptance_length": 3.60}'],
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
"""


def test_a_launch_hidden_in_what_a_benchmark_client_imports_is_checked(
        real_tree: Path, tmp_path: Path) -> None:
    """The trace records a benchmark client (``sandbox.CLIENT_SCRIPTS``) instead of
    running it only while its code is the base's: a PR that makes the module the
    client imports start vLLM at synthetic AL 3.60 selects the rows that run the
    client and fails with PO403 (before: the client was a leaf and a recording, by its
    name — nothing selected, nothing run)."""
    repo = clone(real_tree, tmp_path / "repo")
    (repo / _CLIENT_DIR).mkdir(parents=True)
    (repo / _CLIENT_DIR / "benchmark_serving.py").write_text("import backend_request_func\n")
    (repo / _CLIENT_DIR / "backend_request_func.py").write_text("X = 1\n")
    lib = repo / LIB  # a function the seed's rows call runs the client (as run_benchmark_serving)
    head = "require_agentic_kv_offload_none() {\n"
    lib.write_text(lib.read_text().replace(head, head + '    python3 "$(dirname '
                   '"${BASH_SOURCE[0]}")/../utils/bench_serving/benchmark_serving.py"\n', 1))
    commit_all(repo, "the library runs a benchmark client")
    (repo / _CLIENT_DIR / "backend_request_func.py").write_text(_CLIENT_IMPORT_LAUNCH)
    commit_all(repo, "what the client imports changes")
    res = run_check(CheckRequest(root=repo, base="HEAD~1", config_keys=[SEED_KEY]))
    assert set(res.info["base"]["traced-keys"]) == {SEED_KEY}, res.info["base"]
    wrong = [f for f in res.findings if f.rule == "PO403" and "3.6" in f.message]
    assert wrong, [(f.rule, f.message[:200]) for f in res.findings]


@pytest.mark.parametrize("what,edit,traced", [
    ("a variable no launcher or script reads",
     ("  RANDOM_RANGE_RATIO: 0.8\n", "  RANDOM_RANGE_RATIO: 0.8\n  IX_AUDIT_TAG: x\n"), False),
    ("a workflow that dispatches no benchmark job",
     ("name: Claude Code\n", "name: Claude Code (reviewed)\n"), False),
    ("a variable the seed script reads",
     ("  HF_HUB_CACHE: '/mnt/hf_hub_cache/'\n", "  HF_HUB_CACHE: '/mnt/hf_cache2/'\n"), True),
])
def test_base_workflow_change_traces_the_jobs_it_changes(
        real_tree: Path, tmp_path: Path, what: str, edit: tuple[str, str],
        traced: bool) -> None:
    """A workflow change selects the rows whose job it changes: their launcher, or a
    variable of their environment that their launcher or script observes (real PR
    #2100 added two empty variables to the multi-node template: every multi-node row
    was traced)."""
    path = ".github/workflows/claude.yml" if "Claude" in edit[0] else TMPL
    repo = _changed_clone(real_tree, tmp_path, {path: edit})
    res = run_check(CheckRequest(root=repo, base="HEAD~1", config_keys=[SEED_KEY]))
    keys = res.info["base"]["traced-keys"]
    if traced:
        assert set(keys) == {SEED_KEY}, what
        assert any("HF_HUB_CACHE" in r for r in keys[SEED_KEY]), keys
    else:
        assert keys == {} and res.info["traces"] == 0, what


def library_runs_tool(repo: Path, where: str, name: str, text: str) -> Path:
    """Write ``utils/<name>`` with ``text`` and make the library's function ``where`` run
    it with python3 (not committed); the tool's path."""
    tool = repo / "utils" / name
    tool.parent.mkdir(exist_ok=True)
    tool.write_text(text, encoding="utf-8")
    lib = repo / LIB
    body = lib.read_text(encoding="utf-8")
    head = f"{where}() {{\n"
    assert head in body
    lib.write_text(body.replace(head, head + f'    python3 "$GITHUB_WORKSPACE/utils/{name}" '
                                "|| true\n", 1), encoding="utf-8")
    return tool


@pytest.mark.parametrize("where,traced", [("move_profile_trace_for_relay", False),
                                          ("run_eval", True), ("check_env_vars", True)])
def test_base_a_file_named_only_where_no_trace_goes(real_tree: Path, tmp_path: Path,
                                                     where: str, traced: bool) -> None:
    """Real PR #1977 changed utils/*.py files that benchmark_lib.sh names in its helpers.
    The trace runs those helpers as they are: named in a function the seed script calls
    or in a helper its eval rows run (``run_eval``), the change selects its rows (when
    they were recorders, the second was never traced); named only in a helper no row of
    the seed runs (``move_profile_trace_for_relay``: fixed-sequence-length rows), not."""
    repo = clone(real_tree, tmp_path / "repo")
    tool = library_runs_tool(repo, where, "ix_collect.py", "print(1)\n")
    commit_all(repo, "the library names a helper script")
    tool.write_text("print(2)\n", encoding="utf-8")
    commit_all(repo, "the helper script changes")
    res = run_check(CheckRequest(root=repo, base="HEAD~1", config_keys=[SEED_KEY]))
    keys = res.info["base"]["traced-keys"]
    assert (set(keys) == {SEED_KEY}) is traced, keys


def test_a_change_no_script_reads_costs_one_parse_per_shell_file(
        real_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The changelog alone changes: what every script can read is computed to prove no
    row reads it, each shell file parsed once and its nodes found by the parser's own
    query engine, not walked one by one in Python (issue 35: 2.6 CPU-s for a
    changelog-only change at load ~13, was 0.04 s before the syntax tree; 1.5 now)."""
    from inferencex_tools import shellsyntax as S

    repo = _changed_clone(real_tree, tmp_path, {"perf-changelog.yaml": ("\n", "\n\n")})
    parsed: list[bytes] = []
    walked = [0]
    real_parser, real_walk = S._parser, S.walk

    class Counting:
        def __init__(self) -> None:
            self.p = real_parser()

        def parse(self, data: bytes) -> Any:
            parsed.append(data)
            return self.p.parse(data)

    def walk(n: Any) -> Any:
        for x in real_walk(n):
            walked[0] += 1
            yield x

    monkeypatch.setattr(S, "_parser", Counting)
    monkeypatch.setattr(S, "walk", walk)
    S._cache.clear()
    S._by_text.clear()
    res = run_check(CheckRequest(root=repo, base="HEAD~1"))
    assert res.info["traces"] == 0 and res.info["base"]["changed-files"] == [
        "perf-changelog.yaml"]
    shell = [p for p in repo.rglob("*.sh") if ".git" not in p.parts]
    texts = {p.read_bytes() for p in shell}
    whole = [d for d in parsed if d in texts]
    assert len(whole) == len(set(whole)) <= len(texts)  # each file once
    nodes = sum(S.parse(t).root.descendant_count for t in texts)
    assert walked[0] < nodes, (walked[0], nodes)  # not one whole pass (6.6 before)
