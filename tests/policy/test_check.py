"""``ixtool policy check`` end to end: the seed recipe passes; its wrong variants fail
with the right rule; resolution failures are findings."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.errors import InputError
from inferencex_tools.policy.service import CheckRequest, run_check
from inferencex_tools.report.findings import Result

ROOT = Path(__file__).resolve().parents[2]
SEED = "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"
KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"

CONFIG = f"""\
{KEY}:
  image: vllm/vllm-openai:v0.27.1
  model: MiniMaxAI/MiniMax-M3-MXFP8
  model-prefix: minimaxm3
  runner: cluster:h200-dgxc
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.80
      search-space:
      - {{ tp: 8, ep: 8, spec-decoding: mtp, kv-offloading: dram, kv-offload-backend: {{ name: mooncake }}, conc-list: [4] }}
"""  # noqa: E501


# the label's DRAM (the sweep generator needs it for kv-offloading: dram)
RUNNERS = """\
labels:
  cluster:h200-dgxc: [h200-dgxc-slurm_0]
  cluster:b300-nv: [b300-nv_0]
hardware:
  cluster:h200-dgxc: {available-cpu-dram-mib: 1471356, gpus-per-node: 8}
  cluster:b300-nv: {available-cpu-dram-mib: 3000000, gpus-per-node: 8}
  cluster:b300-unlisted: {available-cpu-dram-mib: 3000000, gpus-per-node: 8}
"""


def seed_repo(tmp: Path, edit: tuple[str, str] | None = None, config: str = CONFIG) -> Path:
    for rel in (SEED, "benchmarks/benchmark_lib.sh", "runners/launch_h200-dgxc-slurm.sh",
                ".github/workflows/sweep-shard.yml"):  # the job environment: `ixtool ci row`
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp / rel)
    if edit is not None:
        text = (tmp / SEED).read_text()
        assert edit[0] in text, edit
        (tmp / SEED).write_text(text.replace(edit[0], edit[1]))
    (tmp / "configs").mkdir(exist_ok=True)
    (tmp / "configs/nvidia-master.yaml").write_text(config)
    (tmp / "configs/runners.yaml").write_text(RUNNERS)
    return tmp


def check(repo: Path, corpus: Path) -> Result:
    res = run_check(CheckRequest(
        root=repo, registry=ROOT / "golden_al_distribution/registry.yaml",
        curves_dir=corpus / "golden_al_distribution", timeout=30))
    # PO305 (weaker sandbox) depends on the machine, not on the recipe
    res.findings = [f for f in res.findings if f.rule != "PO305"]
    return res


def test_seed_recipe_passes(tmp_path: Path, corpus: Path) -> None:
    res = check(seed_repo(tmp_path), corpus)
    assert res.findings == []
    rows = res.info["rows"]
    assert [(r["mode"], r["verdict"]) for r in rows] == [("throughput", "ok"), ("eval", "ok")]
    assert rows[0]["launch"] == ("vllm eagle3, draft Inferact/MiniMax-M3-EAGLE3, K=3, "
                                 "synthetic synthetic_acceptance_length=2.83")
    assert rows[0]["thinking"] == "thinking_on"
    assert rows[0]["registry-row"] == "minimaxm3-eagle3"
    assert rows[0]["source"] in ("namespaces", "basic")
    assert rows[1]["launch"].endswith("real verification")


@pytest.mark.parametrize(
    ("edit", "rule"),
    [
        # the GQA head's value with the non-GQA head
        (("GOLDEN_AL=2.83", "GOLDEN_AL=2.78"), "PO406"),
        # K=4 with the K=3 value
        (("NUM_SPEC_TOKENS=3", "NUM_SPEC_TOKENS=4"), "PO407"),
        # a TRT-style AL-1 in vLLM's AL unit
        (("GOLDEN_AL=2.83", "GOLDEN_AL=1.83"), "PO409"),
        # synthetic acceptance left on under EVAL_ONLY
        (("if [[ $EVAL_ONLY != true ]]; then\n        extra", "if true; then\n        extra"),
         "PO402"),
        # thinking off, AL from the thinking_on row
        (('{"thinking_mode":"enabled"}', '{"thinking_mode":"disabled"}'), "PO408"),
        # real verification in a throughput run
        (('"rejection_sample_method":"synthetic",', '"rejection_sample_method":"standard",'),
         "PO410"),
        # no drafter at all
        (('    --speculative-config "$SPEC_CONFIG"\n', ""), "PO412"),
        # AL above K+1
        (("GOLDEN_AL=2.83", "GOLDEN_AL=4.50"), "PO404"),
        # the script dies before launching
        (("require_vars MODEL TP CONC KV_OFFLOADING", "require_vars MODEL TP NOPE"), "PO301"),
    ],
    ids=["gqa-value", "k4", "minus-one", "eval-synthetic", "thinking-off", "not-pinned",
         "no-draft", "range", "dies"],
)
def test_seed_variants_fail_with_the_right_rule(
    tmp_path: Path, corpus: Path, edit: tuple[str, str], rule: str
) -> None:
    res = check(seed_repo(tmp_path, edit), corpus)
    rules = {f.rule for f in res.errors}
    assert rules == {rule}, [f.message for f in res.findings]
    f = next(f for f in res.errors if f.rule == rule)
    assert f.file == SEED and KEY in f.message


def test_undetermined_thinking_is_a_warning(tmp_path: Path, corpus: Path) -> None:
    edit = ("    --default-chat-template-kwargs '{\"thinking_mode\":\"enabled\"}'\n", "")
    res = check(seed_repo(tmp_path, edit), corpus)
    assert res.errors == []
    assert [f.rule for f in res.warnings] == ["PO411"]
    assert "template default is off" in res.warnings[0].message


def test_missing_script_and_launcher(tmp_path: Path, corpus: Path) -> None:
    cfg = CONFIG.replace("precision: fp8", "precision: fp4") + CONFIG.replace(
        KEY, "other-key").replace("cluster:h200-dgxc", "cluster:b300-nv")
    res = check(seed_repo(tmp_path, config=cfg), corpus)
    assert sorted(f.rule for f in res.findings) == ["PO201", "PO202"]
    po202 = next(f for f in res.findings if f.rule == "PO202")
    assert "minimaxm3_fp4_h200_vllm_mtp.sh" in po202.message
    assert po202.file == "configs/nvidia-master.yaml" and po202.line == 1


@pytest.mark.parametrize(("label", "rule"), [
    ("cluster:b300-nv", "PO201"),  # listed: its machines' launcher is missing
    ("cluster:b300-unlisted", "PO308"),  # not listed, no launcher named after it: unknown
])
def test_a_label_runners_yaml_does_not_list_is_not_checked(tmp_path: Path, corpus: Path,
                                                           label: str, rule: str) -> None:
    """A runner label that runners.yaml does not list and no launcher is named after
    (real: 'b200-dsv4' in June 2026) says nothing of the launcher that runs it: the row is
    not checked (PO308, warning), not a missing launcher (PO201, error)."""
    cfg = CONFIG + CONFIG.replace(KEY, "other-key").replace("cluster:h200-dgxc", label)
    res = check(seed_repo(tmp_path, config=cfg), corpus)
    found = [f for f in res.findings if "other-key" in f.message]
    assert [f.rule for f in found] == [rule], [f.to_dict() for f in res.findings]
    if rule == "PO308":
        assert "not in runners.yaml" in found[0].message and found[0].severity.value == "warning"


OLD_SHAPE = """
old-shape-mtp:
  image: vllm/vllm-openai:v0.11.0
  model: MiniMaxAI/MiniMax-M3
  model-prefix: minimaxm3
  precision: fp8
  framework: vllm
  runner: cluster:h200-dgxc
  multinode: false
  seq-len-configs:
  - isl: 1024
    osl: 1024
    search-space:
    - { tp: 8, conc-start: 4, conc-end: 4, spec-decoding: mtp }
"""


def test_an_entry_the_generator_gives_no_row_is_not_silently_ok(tmp_path: Path,
                                                              corpus: Path) -> None:
    """An entry in an older shape (``seq-len-configs``, before ``scenarios``: real trees
    before spring 2026) sets spec-decoding but today's generator expands it to no row:
    PO308 "not checked", never a silent ok (it was: 0 rows, exit 0, no finding)."""
    res = check(seed_repo(tmp_path, config=CONFIG + OLD_SHAPE), corpus)
    found = [f for f in res.findings if "old-shape-mtp" in f.message]
    assert [f.rule for f in found] == ["PO308"], [f.to_dict() for f in res.findings]


def test_config_key_glob_and_usage_error(tmp_path: Path, corpus: Path) -> None:
    repo = seed_repo(tmp_path)
    r = subprocess.run(
        [sys.executable, "-m", "inferencex_tools", "policy", "check", "--root", str(repo),
         "--curves-dir", str(corpus / "golden_al_distribution"), "--registry",
         str(ROOT / "golden_al_distribution/registry.yaml"), "--config-keys", "nope-*"],
        capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "no config key matches" in r.stderr


def test_repository_check_passes() -> None:
    """`ixtool policy check` in this repository's root: exit 0, every row ok."""
    r = subprocess.run([sys.executable, "-m", "inferencex_tools", "policy", "check",
                        "--format", "json"], cwd=ROOT, capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert [f for f in doc["findings"] if f["rule"] != "PO305"] == []
    # 15 rows of the seed MTP recipe (14 throughput + the one eval job the generator
    # marks: the highest concurrency of the model/runner/framework/precision, issue 33
    # D1; was an eval row per search-space entry) + 14 of its non-MTP sibling (issue 17)
    assert len(doc["info"]["rows"]) == 29
    assert sum(r["config-key"].endswith("-mtp") for r in doc["info"]["rows"]) == 15
    assert {row["verdict"] for row in doc["info"]["rows"]} == {"ok"}



MN_CASES = ROOT / "tests" / "cases" / "policy" / "multinode"


def mn_key(name: str, prefix: str, framework: str, runner: str, settings: list[str]) -> str:
    return f"""\
{name}:
  image: img
  model: m
  model-prefix: {prefix}
  runner: cluster:{runner}
  precision: fp4
  framework: {framework}
  multinode: true
  scenarios:
    agentic-coding:
    - search-space:
      - spec-decoding: mtp
        conc-list: [8, 16]
        prefill: {{num-worker: 1, tp: 4, ep: 4, dp-attn: false,
                  additional-settings: {settings!r}}}
        decode: {{num-worker: 1, tp: 4, ep: 4, dp-attn: false}}
"""


LAUNCHERS = ROOT / "tests" / "cases" / "policy" / "launchers"


def with_launcher(repo: Path, family: str, kind: str) -> None:
    """A test launcher for ``family`` and, for injecting ones, the real repository's
    synthetic-acceptance injector (read from the shared snapshot)."""
    import tarfile

    from tests.conftest import TREE_SNAPSHOT as TREE

    shutil.copyfile(LAUNCHERS / f"{kind}.sh", repo / f"runners/launch_{family}.sh")
    if kind != "injecting":
        return
    with tarfile.open(TREE) as tar:
        for m in tar:
            rel = m.name.split("/", 1)[-1]
            if m.isfile() and (rel == "runners/inject_synthetic_acceptance.py"
                               or rel.startswith("runners/synthetic_injectors/")):
                fh = tar.extractfile(m)
                assert fh is not None
                (repo / rel).parent.mkdir(parents=True, exist_ok=True)
                (repo / rel).write_bytes(fh.read())


def test_multinode_recipe_missing(tmp_path: Path, corpus: Path) -> None:
    cfg = CONFIG + mn_key("mn-key", "dsv4", "dynamo-vllm", "gb200-nv",
                          ["CONFIG_FILE=recipes/dsv4/agentx.yaml:lowlat[1]"])
    repo = seed_repo(tmp_path, config=cfg)
    with_launcher(repo, "gb200-nv", "plain")
    res = check(repo, corpus)
    assert [(f.rule, f.line) for f in res.errors] == [("PO204", 14)]
    assert "recipes/dsv4/agentx.yaml:lowlat[1], which is not vendored" in res.errors[0].message
    assert "clones no repository" in res.errors[0].message
    assert "conc 16" in res.errors[0].message
    assert res.errors[0].data["config_keys"] == ["mn-key"]


def test_multinode_recipe_from_an_external_checkout_is_not_checked(
        tmp_path: Path, corpus: Path) -> None:
    """A recipe the launcher reads from the repository it clones at a pinned ref: no
    verdict ixtool could give, said with the source (PO308), not a missing-recipe error."""
    cfg = CONFIG + mn_key("mn-key", "dsv4", "dynamo-vllm", "gb200-nv",
                          ["CONFIG_FILE=recipes/dsv4/agentx.yaml:lowlat[1]"])
    repo = seed_repo(tmp_path, config=cfg)
    with_launcher(repo, "gb200-nv", "cloning")
    res = check(repo, corpus)
    assert not res.errors, res.errors
    po308 = [f for f in res.findings if f.rule == "PO308"]
    assert len(po308) == 1 and po308[0].data["config_keys"] == ["mn-key"]
    assert "checkout of https://github.com/example/srt-slurm.git at v9.9.9" in po308[0].message


@pytest.mark.parametrize(
    ("recipe", "prefix", "framework", "launcher", "settings", "expected"),
    [
        # the injector trusts SYNTHETIC_ACCEPTANCE_LENGTH: 2.49 (K=3) into a K=2 recipe
        ("dsv4_vllm_mtp_k2.yaml", "dsv4", "dynamo-vllm", "injecting",
         ["SYNTHETIC_ACCEPTANCE=true", "SYNTHETIC_ACCEPTANCE_LENGTH=2.49"], {"PO407"}),
        ("dsv4_vllm_mtp_k2.yaml", "dsv4", "dynamo-vllm", "injecting",
         ["SYNTHETIC_ACCEPTANCE=true", "SYNTHETIC_ACCEPTANCE_LENGTH=2.27"], set()),
        # a launcher that does not inject: real verification, whatever the settings say
        ("dsv4_vllm_mtp_k2.yaml", "dsv4", "dynamo-vllm", "plain",
         ["SYNTHETIC_ACCEPTANCE=true", "SYNTHETIC_ACCEPTANCE_LENGTH=2.27"], {"PO401"}),
        # hard-coded SGLang simulation reaches the eval row
        ("qwen_sglang_hardcoded.yaml", "qwen3.5", "dynamo-sglang", "injecting", [],
         {"PO402"}),
        # zip override element [1]: K=2, forced 1.50 = AL 2.50; the launcher drops it for
        # evals
        ("glm_trt_zip.yaml:override_agentx[1]", "glm5.2", "dynamo-trt", "eval_edits", [],
         set()),
        # element [0]: K=1 with 1.84 forced = the AL itself (TRT off by one) and, with a
        # launcher that edits nothing, the forcing survives into the eval row
        ("glm_trt_zip.yaml:override_agentx[0]", "glm5.2", "dynamo-trt", "plain", [],
         {"PO409", "PO402"}),
    ],
    ids=["inject-wrong-k", "inject-ok", "no-injection", "sglang-eval", "zip-ok", "zip-bad"],
)
def test_multinode_launcher_truth(
    tmp_path: Path, corpus: Path, recipe: str, prefix: str, framework: str, launcher: str,
    settings: list[str], expected: set[str],
) -> None:
    """Injection and eval edits come from what the runner's launcher does (traced up to
    its `srtctl apply`), not from the runner's name."""
    name = recipe.split(":")[0]
    cfg = mn_key("mn-key", prefix, framework, "test-cluster", [f"CONFIG_FILE=recipes/{recipe}",
                                                               *settings])
    repo = seed_repo(tmp_path, config=cfg)
    with_launcher(repo, "test-cluster", launcher)
    dest = repo / "benchmarks/multi_node/srt-slurm-recipes" / name
    dest.parent.mkdir(parents=True)
    shutil.copyfile(MN_CASES / name, dest)
    res = check(repo, corpus)
    assert {f.rule for f in res.errors} == expected, [f.message for f in res.findings]
    assert "PO304" in {f.rule for f in res.findings}
    for f in res.errors:
        assert f.file == f"benchmarks/multi_node/srt-slurm-recipes/{name}"
        assert f.data["config_keys"] == ["mn-key"] and f.data["rows"]


def test_real_master_configs_resolve_without_crashing(corpus: Path) -> None:
    """The reference repository's master configs (no scripts or launchers in the corpus):
    every spec-decoding key gets a finding, never a crash."""
    res = run_check(CheckRequest(
        root=corpus, registry=ROOT / "golden_al_distribution/registry.yaml",
        curves_dir=corpus / "golden_al_distribution"))
    rules = {f.rule for f in res.findings}
    assert rules <= {"PO201", "PO202", "PO204", "PO305", "PO308"}, rules
    assert res.info.get("traces", 0) == 0
    assert sorted(res.checked) == ["configs/amd-master.yaml", "configs/nvidia-master.yaml"]


FIXED = f"""\
{KEY.replace("agentic", "fixed")}:
  image: vllm/vllm-openai:v0.27.1
  model: MiniMaxAI/MiniMax-M3-MXFP8
  model-prefix: minimaxm3
  runner: cluster:h200-dgxc
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - {{ tp: 8, spec-decoding: mtp, conc-start: 4, conc-end: 64 }}
"""


@pytest.mark.parametrize("exception", [False, True])
def test_fixed_seq_len_synthetic_needs_an_exception(
    tmp_path: Path, corpus: Path, exception: bool
) -> None:
    repo = seed_repo(tmp_path, config=FIXED)
    dest = repo / "benchmarks/single_node/fixed_seq_len/minimaxm3_fp8_h200_mtp.sh"
    dest.parent.mkdir(parents=True)
    shutil.copyfile(ROOT / "tests/cases/policy/recipes/fixed_vllm_synthetic.sh", dest)
    registry = (ROOT / "golden_al_distribution/registry.yaml").read_text()
    if exception:
        registry = registry.replace(
            "synthetic-exceptions: []",
            "synthetic-exceptions:\n  - config-key: minimaxm3-*-fixed-mtp\n"
            "    reason: sanctioned in the sign-off of PR 1234\n")
    (repo / "registry.yaml").write_text(registry)
    res = run_check(CheckRequest(root=repo, registry=repo / "registry.yaml",
                                 curves_dir=corpus / "golden_al_distribution", timeout=30))
    errors = [f for f in res.errors]
    # the top point, and the 8k1k eval job the generator marks at it (issue 33 D1)
    assert [(r["conc"], r["mode"]) for r in res.info["rows"]] == [(64, "throughput"),
                                                                  (64, "eval")]
    if exception:
        assert errors == []
    else:
        assert [f.rule for f in errors] == ["PO413"]
        assert errors[0].line == 5 and "conc 64" in errors[0].message


def test_trace_command_prints_the_launch() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "inferencex_tools", "policy", "trace", SEED, "--set",
         "MODEL=m", "--set", "TP=8", "--set", "EP=8", "--set", "CONC=2", "--set",
         "KV_OFFLOADING=none", "--set", "EVAL_ONLY=false"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    (server,) = [x for x in doc["records"] if x.get("engine") == "vllm"]
    assert server["facts"]["al"] == 2.83 and server["facts"]["k"] == 3
    argv = server["argv"]
    assert argv[argv.index("--max-num-seqs") + 1] == "4"
    assert argv[argv.index("--max-cudagraph-capture-size") + 1] == "16"
    assert "--enable-expert-parallel" in argv
    r = subprocess.run([sys.executable, "-m", "inferencex_tools", "policy", "trace", SEED,
                        "--set", "bad"], cwd=ROOT, capture_output=True, text=True,
                       check=False)
    assert r.returncode == 2 and "VAR=VALUE" in r.stderr


def test_baseline_round_trip(tmp_path: Path, corpus: Path) -> None:
    """``policy check --write-baseline`` records the findings, a plain run with the
    baseline reports none, a new problem is the only finding."""
    cfg = CONFIG.replace("precision: fp8", "precision: fp4") + CONFIG.replace(
        KEY, "other-key").replace("cluster:h200-dgxc", "cluster:b300-nv")
    repo = seed_repo(tmp_path, config=cfg)
    known = tmp_path / "known.json"

    def run(*args: str) -> tuple[int, list[tuple[str, str]]]:
        r = subprocess.run(
            [sys.executable, "-m", "inferencex_tools", "policy", "check", "--root", str(repo),
             "--curves-dir", str(corpus / "golden_al_distribution"), "--registry",
             str(ROOT / "golden_al_distribution/registry.yaml"), "--format", "json", *args],
            cwd=repo, capture_output=True, text=True, check=False)
        doc = json.loads(r.stdout)
        return r.returncode, sorted((f["rule"], f["message"].split(":")[0])
                                    for f in doc["findings"] if f["rule"] != "PO305")

    rc, found = run()
    assert rc == 1 and [r for r, _ in found] == ["PO201", "PO202"]
    assert run("--write-baseline", "--baseline", str(known)) == (0, [])
    doc = json.loads(known.read_text())
    assert {e["command"] for e in doc["findings"]} == {"policy check"}
    assert run("--baseline", str(known)) == (0, [])
    # a new key without a benchmark script: the only finding
    (repo / "configs/nvidia-master.yaml").write_text(
        cfg + CONFIG.replace(KEY, "third-key").replace("minimaxm3", "nosuchmodel"))
    rc, found = run("--baseline", str(known))
    assert rc == 1 and [r for r, _ in found] == ["PO202"], found
    assert "third-key" in json.dumps(found) or "nosuchmodel" in json.dumps(found)


def test_a_key_the_generator_refuses_is_left_out_alone() -> None:
    """A config the sweep generator cannot expand (here a real historical shape:
    ``kv-offload-backend: mooncake`` where a mapping is required) is left out with its
    reason; every other key's rows are exactly the generator's rows for that key alone
    (never rows built another way)."""
    from pathlib import Path

    from inferencex_tools.policy.rows import policy_rows
    from inferencex_tools.sweep.load import Runners, merge_masters

    case = Path(__file__).parent.parent / "cases" / "sweep" / "config" / "ok-agentic-dram.yaml"
    good = case.read_text(encoding="utf-8")
    bad = good.replace('kv-offload-backend: { name: mooncake, version: "0.3" }',
                       "kv-offload-backend: mooncake")
    key = next(iter(merge_masters([("x-master.yaml", good.encode())]).data))
    bad = bad.replace(f"{key}:", "broken-key:", 1)
    runners = Runners(labels={"h200-dgxc": ["h200-dgxc_0"]}, hardware={
        "cluster:h200-dgxc": {"available-cpu-dram-mib": 2_000_000, "gpus-per-node": 8}})
    alone = policy_rows(merge_masters([("x-master.yaml", good.encode())]), runners,
                        globs=None, all_evals=False)
    both = policy_rows(merge_masters([("x-master.yaml", (bad + good).encode())]), runners,
                       globs=None, all_evals=False)
    assert list(both.refused) == ["broken-key"] and "cannot be expanded" in both.refused[
        "broken-key"]
    assert alone.rows and [(r.label(), r.matrix) for r in both.rows] == \
        [(r.label(), r.matrix) for r in alone.rows]


def test_a_key_only_a_newer_validation_refuses_keeps_its_rows() -> None:
    """The reference's validation rules change over time (a rule of the 843c6254f
    generator refused 80 keys of a 2026-07-09 tree that its own generator expanded):
    the rows do not depend on it; the config check reports such a key."""
    from inferencex_tools.policy.rows import policy_rows
    from inferencex_tools.sweep.load import Runners, merge_masters
    from inferencex_tools.sweep.service import validate_for_generation

    case = Path(__file__).parent.parent / "cases" / "sweep" / "config" / "ok-agentic-dram.yaml"
    text = case.read_text(encoding="utf-8").replace("dram-utilization: 0.80",
                                                    "dram-utilization: 0.80\n      x: 1")
    configs = merge_masters([("x-master.yaml", text.encode())])
    with pytest.raises(InputError):
        validate_for_generation(configs)
    runners = Runners(labels={"h200-dgxc": ["h200-dgxc_0"]}, hardware={
        "cluster:h200-dgxc": {"available-cpu-dram-mib": 2_000_000, "gpus-per-node": 8}})
    rs = policy_rows(configs, runners, globs=None, all_evals=False)
    assert rs.rows and not rs.refused


def test_a_broken_key_never_changes_the_rows_of_another(tmp_path: Path,
                                                        corpus: Path) -> None:
    """Issue 25: one unrelated key the generator refuses (its runner has no DRAM entry in
    runners.yaml) left every row built from the configs with another environment.  Now
    the broken key gets its own warning (PO206), the seed key is judged exactly as when
    it is alone (same rows, same verdicts, the workflows' environment)."""
    broken = CONFIG.replace(KEY, "broken-key").replace("cluster:h200-dgxc", "cluster:nodram")
    alone = check(seed_repo(tmp_path / "a"), corpus)
    res = check(seed_repo(tmp_path / "b", config=CONFIG + broken), corpus)
    assert [f.rule for f in res.findings] == ["PO206"]
    assert res.findings[0].data["config_keys"] == ["broken-key"]
    assert "available-cpu-dram-mib" in res.findings[0].message
    assert res.info["job-environment"] == alone.info["job-environment"] == "workflows"
    drop = ("trace-seconds",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in res.info["rows"]] == \
        [{k: v for k, v in r.items() if k not in drop} for r in alone.info["rows"]]


def test_rows_judged_with_the_built_in_environment_say_so(tmp_path: Path,
                                                          corpus: Path) -> None:
    """Without a workflow that gives the job its environment, every row is judged with
    ixtool's stand-in: a PO311 warning names the rows and why, in every format, and
    ``info["job-environment"]`` says "built-in"."""
    repo = seed_repo(tmp_path)
    (repo / ".github/workflows/sweep-shard.yml").unlink()
    res = check(repo, corpus)
    assert [f.rule for f in res.findings] == ["PO311"]
    f = res.findings[0]
    assert f.severity.value == "warning" and KEY in f.message and "no workflow" in f.message
    assert f.data["config_keys"] == [KEY] and len(f.data["rows"]) == len(res.info["rows"])
    assert res.info["job-environment"] == "built-in"
    for fmt in ("text", "github", "sarif"):
        from inferencex_tools.report.reporters import render

        assert "PO311" in render(res, fmt), fmt


def test_a_job_the_runner_would_not_start_is_not_traced(tmp_path: Path, corpus: Path) -> None:
    """Workflows that pass the matrix's kv-offload-backend mapping whole to a string input
    (the wiring from before the mapping, as a base revision has it; #2096's base view):
    GitHub refuses that template ("A mapping was not expected"), it never exports
    KV_OFFLOAD_BACKEND=Object.  The rows are "not checked" with that reason, not a PO301
    from a launch no runner makes."""
    from tests.workflow.conftest import TREE, read_tree

    if not TREE.is_file():
        pytest.skip("the real tree snapshot is needed for its workflows")
    repo = seed_repo(tmp_path)
    (repo / ".github/workflows/sweep-shard.yml").unlink()
    for rel, text in read_tree((".github/workflows/run-sweep.yml",
                                ".github/workflows/benchmark-tmpl.yml")).items():
        (repo / rel).write_text(text.decode().replace(
            "${{ matrix.config['kv-offload-backend'].name }}",
            "${{ matrix.config['kv-offload-backend'] }}"))
    res = check(repo, corpus)
    assert [f.rule for f in res.findings] == ["PO308"], \
        [(f.rule, f.message[:160]) for f in res.findings]
    msg = res.findings[0].message
    assert "the runner would not start its job" in msg and "a mapping was not expected" in msg
    assert "with.kv-offload-backend" in msg and "'Object'" not in msg
