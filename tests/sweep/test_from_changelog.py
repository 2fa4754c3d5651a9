"""``ixtool sweep from-changelog`` on the real history and on temporary repositories.

Expectation table (real history bundle): for each first-parent commit C, the
matrix of the changelog entries C added (``--base C~1 --head C``), generated
from C's own configs (G5), as bucket → row count.  Hand-checked examples:

* 8416b58 (#2707) — SWEEP/CHANGELOG.md §4.7: 10 single_node.agentic rows + 1 agentic eval.
* 831e17a — kimik2.5-int4-b200-vllm (tp8 4..64 → 5 concs) + kimik2.5-int4-b300-vllm
  (tp8 and tp4, 5 concs each) = 15 single_node.8k1k rows; evals: per (model, runner,
  framework, precision, seq, spec, dp-attn) group the upper median 32 and max 64 of
  {16, 32, 64}: 2 rows on b200 + 4 on b300 (tp is not in the group key) = 6.
* f75652c — glm5.1-fp8-b200-tilert: one multinode row per seq-len (conc [1]); no
  conc ≥ 16, so no multinode eval.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferencex_tools.errors import IxtoolError
from inferencex_tools.sweep.changelog import FromChangelogOptions, bucket_counts
from inferencex_tools.sweep.service import run_from_changelog
from tests.conftest import ROOT, TempRepo

HISTORY: list[tuple[str, int, dict[str, int]]] = [
    ("8416b58", 1, {"single_node.agentic": 10, "agentic_evals": 1}),  # 2026-08-22 §4.7
    ("3d097af", 1, {"single_node.1k1k": 12, "single_node.8k1k": 12, "evals": 3}),
    ("16a85b4", 4, {"single_node.1k1k": 48, "single_node.8k1k": 48, "evals": 12}),
    ("622d725", 1, {"multi_node.1k1k": 13, "multi_node.8k1k": 10, "multinode_evals": 8}),
    ("9340394", 2, {"multi_node.8k1k": 7, "multinode_evals": 7}),
    ("0822ff7", 2, {"single_node.1k1k": 16, "single_node.8k1k": 13, "evals": 4}),
    ("7f3f5e0", 1, {"single_node.agentic": 20, "agentic_evals": 1}),
    ("39ada1b", 1, {"multi_node.8k1k": 2, "multinode_evals": 2}),
    ("64de567", 1, {"single_node.agentic": 28, "agentic_evals": 1}),
    ("223ab4c", 1, {"multi_node.1k1k": 1, "multi_node.8k1k": 1, "multinode_evals": 1}),
    ("831e17a", 2, {"single_node.8k1k": 15, "evals": 6}),
    ("bab79eb", 1, {"multi_node.agentic": 5, "multinode_agentic_evals": 1}),
    ("2c21944", 1, {"multi_node.8k1k": 11, "multinode_evals": 9}),
    ("2cd9f5e", 1, {"multi_node.8k1k": 2, "multinode_evals": 1}),
    ("e8360cb", 1, {"multi_node.8k1k": 3, "multinode_evals": 2}),
    ("cfc53c8", 2, {"multi_node.agentic": 4, "multinode_agentic_evals": 2}),
    ("c57ab76", 2, {"single_node.8k1k": 63, "evals": 15}),
    ("a37eb1c", 2, {"multi_node.agentic": 9, "multinode_agentic_evals": 8}),
    ("e4a01db", 4, {"single_node.8k1k": 89, "evals": 12}),
    ("65b7a0f", 1, {"multi_node.8k1k": 1, "multinode_evals": 1}),
    ("11ea19b", 1, {"single_node.8k1k": 20, "evals": 4}),
    ("dc59fd3", 2, {"multi_node.agentic": 14, "multinode_agentic_evals": 12}),
    ("ae6fe8c", 1, {"multi_node.agentic": 18, "multinode_agentic_evals": 3}),
    ("c139a30", 1, {"multi_node.agentic": 35, "multinode_agentic_evals": 2}),
    ("f75652c", 1, {"multi_node.1k1k": 1, "multi_node.8k1k": 1}),
    ("97b25bf", 2, {"multi_node.agentic": 9, "multinode_agentic_evals": 5}),
    ("72930b4", 1, {"multi_node.agentic": 19, "multinode_agentic_evals": 2}),
    ("1c4ca1c", 4, {"single_node.8k1k": 37, "evals": 12}),
    ("57a9b21", 1, {"multi_node.agentic": 17, "multinode_agentic_evals": 3}),
    ("c0bdead", 2, {"multi_node.agentic": 34, "multinode_agentic_evals": 3}),
    ("8544ab7", 2, {"multi_node.agentic": 17, "multinode_agentic_evals": 6}),
    ("f991190", 1, {"multi_node.8k1k": 1, "multinode_evals": 1}),
    ("0cee917", 2, {"multi_node.agentic": 8, "multinode_agentic_evals": 1}),
]
FAST = ("8416b58", "831e17a", "f75652c", "bab79eb", "622d725")


def _check(repo: Path, commit: str, n_keys: int, expected: dict[str, int]) -> None:
    res = run_from_changelog(f"{commit}~1", commit, Path("perf-changelog.yaml"),
                             FromChangelogOptions(), repo_path=repo)
    assert len(res.keys) == n_keys
    assert bucket_counts(res.matrix) == expected
    for bucket in ("single_node", "multi_node"):
        for rows in res.matrix[bucket].values():
            assert all(len(r["recipe-fingerprint"]) == 64 for r in rows)
    meta = res.matrix["changelog_metadata"]
    assert meta["head_ref"] == commit and meta["entries"]


def test_history_table_size() -> None:
    assert len(HISTORY) >= 30
    assert len({c for c, _, _ in HISTORY}) == len(HISTORY)


@pytest.mark.parametrize("case", [c for c in HISTORY if c[0] in FAST],
                         ids=[c[0] for c in HISTORY if c[0] in FAST])
def test_history_fast(history_repo: Path, case: tuple[str, int, dict[str, int]]) -> None:
    _check(history_repo, *case)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in HISTORY if c[0] not in FAST],
                         ids=[c[0] for c in HISTORY if c[0] not in FAST])
def test_history_all(history_repo: Path, case: tuple[str, int, dict[str, int]]) -> None:
    _check(history_repo, *case)


def test_history_old_commit_fails_cleanly(history_repo: Path) -> None:
    """Configs that fail the master-config checks give one clear error, no traceback."""
    with pytest.raises(IxtoolError) as exc:
        run_from_changelog("b889f19~1", "b889f19", Path("perf-changelog.yaml"),
                           FromChangelogOptions(), repo_path=history_repo)
    assert "failed validation" in exc.value.message


# ----------------------------------------------------------------- temporary repositories

ENTRY = """- config-keys:
    - {key}
  description:
    - "{desc}"
  pr-link: https://github.com/o/r/pull/{n}
"""


def _seed_config() -> str:
    """This repository's master config with only the seed key (its header + that block;
    the non-MTP sibling of issue 17 stays out)."""
    text = (ROOT / "configs" / "nvidia-master.yaml").read_text()
    header = "".join(text.splitlines(keepends=True)[:4])
    return header + text[text.index("\nminimaxm3-fp8-h200-vllm-agentic-mtp:\n") + 1:]


def _seed(repo: TempRepo) -> None:
    repo.write("configs/nvidia-master.yaml", _seed_config())
    repo.write("configs/runners.yaml", (ROOT / "configs" / "runners.yaml").read_bytes())
    repo.write("perf-changelog.yaml", ENTRY.format(key="minimaxm3-fp8-h200-vllm-agentic-mtp",
                                                   desc="seed", n=1))
    repo.commit("seed")


def test_merge_base_and_head_configs(temp_repo: TempRepo) -> None:
    """G4: entries that main gained after the branch point are not the PR's;
    G5: configs come from the head ref, not from the working tree."""
    _seed(temp_repo)
    temp_repo.git("checkout", "-q", "-b", "feature")
    cfg = temp_repo.path / "configs" / "nvidia-master.yaml"
    text = cfg.read_text()
    clone = text.split("\n", 4)[4].replace("minimaxm3-fp8-h200-vllm-agentic-mtp:",
                                           "minimaxm3-fp8-h200-vllm-agentic-mtp-copy:")
    cfg.write_text(text + "\n" + clone)
    cl = temp_repo.path / "perf-changelog.yaml"
    cl.write_text(cl.read_text() + "\n" + ENTRY.format(
        key="minimaxm3-fp8-h200-vllm-agentic-mtp-copy", desc="copy", n=2))
    head = temp_repo.commit("feature")
    temp_repo.git("checkout", "-q", "main")
    cl.write_text(cl.read_text() + "\n" + ENTRY.format(
        key="minimaxm3-fp8-h200-vllm-agentic-mtp", desc="main moved", n=3))
    temp_repo.commit("main moves on")
    # working tree is main (no -copy key): the head ref's configs must be used
    res = run_from_changelog("main", head, Path("perf-changelog.yaml"),
                             FromChangelogOptions(), repo_path=temp_repo.path)
    assert res.keys == ["minimaxm3-fp8-h200-vllm-agentic-mtp-copy"]
    assert bucket_counts(res.matrix) == {"single_node.agentic": 14, "agentic_evals": 1}
    assert [e["description"] for e in res.matrix["changelog_metadata"]["entries"]] == [["copy"]]


def test_flags_and_globs(temp_repo: TempRepo) -> None:
    _seed(temp_repo)
    cl = temp_repo.path / "perf-changelog.yaml"
    cl.write_text(cl.read_text() + "\n" + ENTRY.format(key="minimaxm3-*-agentic-*", desc="g",
                                                       n=2))
    temp_repo.commit("glob")
    opts = FromChangelogOptions(trim_conc=True)
    res = run_from_changelog("HEAD~1", "HEAD", Path("perf-changelog.yaml"), opts,
                             repo_path=temp_repo.path)
    rows = res.matrix["single_node"]["agentic"]
    # trimmed: lowest conc per recipe (3 arms)
    assert [(r["ep"], r["kv-offloading"], r["conc"]) for r in rows] == [
        (1, "none", 1), (8, "none", 1), (8, "dram", 4)]
    res = run_from_changelog("HEAD~1", "HEAD", Path("perf-changelog.yaml"),
                             FromChangelogOptions(evals_only=True, all_evals=True),
                             repo_path=temp_repo.path)
    assert bucket_counts(res.matrix) == {"agentic_evals": 14}


def test_errors(temp_repo: TempRepo) -> None:
    _seed(temp_repo)
    cl = temp_repo.path / "perf-changelog.yaml"
    cl.write_text(cl.read_text() + "\n" + ENTRY.format(key="nope-*", desc="x", n=2))
    temp_repo.commit("bad glob")
    with pytest.raises(IxtoolError, match="wildcard pattern 'nope-\\*'"):
        run_from_changelog("HEAD~1", "HEAD", Path("perf-changelog.yaml"),
                           FromChangelogOptions(), repo_path=temp_repo.path)
    with pytest.raises(IxtoolError, match="no new changelog entries"):
        run_from_changelog("HEAD", "HEAD", Path("perf-changelog.yaml"),
                           FromChangelogOptions(), repo_path=temp_repo.path)
    with pytest.raises(IxtoolError, match="unknown git ref"):
        run_from_changelog("no-such-ref", None, Path("perf-changelog.yaml"),
                           FromChangelogOptions(), repo_path=temp_repo.path)


def test_cli_worktree_head(temp_repo: TempRepo, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    from inferencex_tools.cli.main import run

    _seed(temp_repo)
    cl = temp_repo.path / "perf-changelog.yaml"
    cl.write_text(cl.read_text() + "\n" + ENTRY.format(
        key="minimaxm3-fp8-h200-vllm-agentic-mtp", desc="未提交 uncommitted", n=2))
    monkeypatch.chdir(temp_repo.path)
    with pytest.raises(SystemExit) as exc:
        run(["sweep", "from-changelog", "--base", "HEAD"])
    cap = capsys.readouterr()
    assert exc.value.code == 0, cap.err
    m = json.loads(cap.out)
    assert len(m["single_node"]["agentic"]) == 14 and len(m["agentic_evals"]) == 1
    # the reference's model dump: compact, UTF-8 as it is, one final newline
    assert cap.out == json.dumps(m, separators=(",", ":"), ensure_ascii=False) + "\n"
    assert '"description":["未提交 uncommitted"]' in cap.out


def test_cli_github_output_buckets(temp_repo: TempRepo, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from inferencex_tools.cli.main import run
    from inferencex_tools.io.actions import parse_outputs
    from inferencex_tools.sweep.publish import join_shards

    _seed(temp_repo)
    cl = temp_repo.path / "perf-changelog.yaml"
    cl.write_text(cl.read_text() + "\n" + ENTRY.format(
        key="minimaxm3-fp8-h200-vllm-agentic-mtp", desc="gh", n=2))
    temp_repo.commit("entry")
    gh = tmp_path / "gh_out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(gh))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(temp_repo.path)
    with pytest.raises(SystemExit) as exc:
        run(["sweep", "from-changelog", "--base-ref", "HEAD~1", "--head-ref", "HEAD",
             "--github-output", "--summary"])
    cap = capsys.readouterr()
    assert exc.value.code == 0, cap.err
    outputs = parse_outputs(gh.read_text())
    assert len(join_shards(outputs, "single_node_agentic")) == 14
    assert len(json.loads(outputs["agentic_evals"])) == 1
    assert json.loads(outputs["changelog_metadata"])["base_ref"] == "HEAD~1"
    assert "est. GPU-hours" in cap.err
    assert "| `minimaxm3-fp8-h200-vllm-agentic-mtp` | agentic-coding | 14 |" in cap.err


APPEND = ENTRY.rstrip("\n") + "\n  append-only: true\n  scenario-type:\n    - agentic-coding\n"


def test_append_only_delta_and_scope(temp_repo: TempRepo) -> None:
    _seed(temp_repo)
    cfg = temp_repo.path / "configs" / "nvidia-master.yaml"
    cl = temp_repo.path / "perf-changelog.yaml"
    seed_cfg, seed_cl = cfg.read_text(), cl.read_text()
    key = "minimaxm3-fp8-h200-vllm-agentic-mtp"
    # add concurrency 24 to the EP1 arm only
    cfg.write_text(seed_cfg.replace(
        "{ tp: 8, ep: 1, spec-decoding: mtp, kv-offloading: none, conc-list: [1, 4, 8, 12, 16] }",
        "{ tp: 8, ep: 1, spec-decoding: mtp, kv-offloading: none, "
        "conc-list: [1, 4, 8, 12, 16, 24] }"))
    cl.write_text(seed_cl + "\n" + APPEND.format(key=key, desc="add 24", n=2))
    temp_repo.commit("append")
    res = run_from_changelog("HEAD~1", "HEAD", Path("perf-changelog.yaml"),
                             FromChangelogOptions(), repo_path=temp_repo.path)
    rows = res.matrix["single_node"]["agentic"]
    assert [(r["ep"], r["conc"]) for r in rows] == [(1, 24)]
    assert bucket_counts(res.matrix) == {"single_node.agentic": 1}  # no evals for append-only
    # removing a point is refused
    cfg.write_text(cfg.read_text().replace("conc-list: [4, 8, 12, 16] }",
                                           "conc-list: [4, 8, 12] }"))
    cl.write_text(cl.read_text() + "\n" + APPEND.format(key=key, desc="drop 16", n=3))
    temp_repo.commit("drop")
    with pytest.raises(IxtoolError, match="may not remove"):
        run_from_changelog("HEAD~1", "HEAD", Path("perf-changelog.yaml"),
                           FromChangelogOptions(), repo_path=temp_repo.path)
    with pytest.raises(IxtoolError, match="cannot use all-evals"):
        run_from_changelog("HEAD~1", "HEAD", Path("perf-changelog.yaml"),
                           FromChangelogOptions(all_evals=True), repo_path=temp_repo.path)


def test_append_only_scope_rules() -> None:
    from inferencex_tools.sweep.changelog import append_only_scope
    from inferencex_tools.sweep.load import Configs

    def cfg(img: str, fixed: object, agentic: object) -> dict[str, object]:
        return {"image": img, "scenarios": {"fixed-seq-len": fixed, "agentic-coding": agentic}}

    base = Configs(data={"a": cfg("i1", [1], [1]), "b": cfg("i1", [1], [1])})
    entry = [{"scenario-type": ["agentic-coding"]}]
    append_only_scope(entry, [["a"]], Configs(data={"a": cfg("i1", [1], [1, 2]),
                                                    "b": cfg("i1", [1], [1])}), base)
    cases = [
        ({"a": cfg("i1", [1], [1]), "b": cfg("i2", [1], [1])}, "not selected"),
        ({"a": cfg("i2", [1], [1, 2]), "b": cfg("i1", [1], [1])}, "config-wide"),
        ({"a": cfg("i1", [2], [1]), "b": cfg("i1", [1], [1])}, "outside its changelog scope"),
        ({"a": {"image": "i1", "scenarios": {"agentic-coding": [1]}},
          "b": cfg("i1", [1], [1])}, "added or removed a scenario"),
    ]
    for head, msg in cases:
        with pytest.raises(IxtoolError, match=msg):
            append_only_scope(entry, [["a"]], Configs(data=head), base)
    with pytest.raises(IxtoolError, match="exist in the base"):
        append_only_scope(entry, [["c"]], Configs(data={"c": cfg("i", [], [])}), base)


def _mn(conc: list[int]) -> dict[str, object]:
    return {"image": "img:1", "model": "m", "model-prefix": "m", "precision": "fp8",
            "framework": "dynamo-sglang", "runner": "gb200", "isl": 8192, "osl": 1024,
            "spec-decoding": "none", "disagg": True,
            "prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": False},
            "decode": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": False},
            "conc": conc, "exp-name": "m_8k1k"}


def _sn(conc: int) -> dict[str, object]:
    return {"image": "img:1", "model": "m", "model-prefix": "m", "precision": "fp8",
            "framework": "vllm", "runner": "h200", "isl": 1024, "osl": 1024, "tp": 8,
            "conc": conc, "exp-name": "m_1k1k"}


@pytest.mark.parametrize("base,head,expected", [
    # a multi-node row's new points, each once (the reference: [8, 16] → [8, 16, 24, 24]
    # benchmarks 24 once)
    ([_mn([8, 16])], [_mn([8, 16, 24, 24])], [[24]]),
    ([_mn([8, 16])], [_mn([32, 8, 24, 16, 32])], [[32, 24]]),
    # a point repeated across rows of one curve is emitted by the first row only
    ([_mn([8])], [_mn([8, 24]), _mn([24, 48])], [[24], [48]]),
    ([_sn(1)], [_sn(1), _sn(2), _sn(2)], [2]),
])
def test_append_only_delta_deduplicates(base: list[dict[str, object]],
                                        head: list[dict[str, object]],
                                        expected: list[object]) -> None:
    from inferencex_tools.sweep.changelog import append_only_delta

    assert [r["conc"] for r in append_only_delta(head, base)] == expected


# The spec's examples (SWEEP.md §9 C and D) as the generator emits them, and as the
# reference's models dump them (CHANGELOG.md §4.6): model key order, defaults filled in.
_MF = {"image": "i", "model": "m", "model-prefix": "dsr1", "precision": "fp4",
       "framework": "dynamo-trt", "runner": "gb200", "isl": 8192, "osl": 1024,
       "spec-decoding": "mtp",
       "prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": True,
                   "additional-settings": ["CONFIG_FILE=x.yaml"], "pp": 1, "dcp-size": 1,
                   "pcp-size": 1},
       "decode": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": True, "pp": 1,
                  "dcp-size": 1, "pcp-size": 1},
       "conc": [8, 64, 256], "max-model-len": 9472, "exp-name": "dsr1_8k1k", "disagg": True,
       "run-eval": False, "kv-p2p-transfer": "nixl"}
_MA = {"image": "i", "model": "m", "model-prefix": "glm5", "precision": "fp8",
       "framework": "dynamo-sglang", "runner": "cluster:gb300-nv", "spec-decoding": "none",
       "prefill": {"num-worker": 2, "tp": 2, "ep": 1, "dp-attn": False, "pp": 1,
                   "dcp-size": 1, "pcp-size": 1},
       "decode": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": True, "pp": 1,
                  "dcp-size": 1, "pcp-size": 1},
       "conc": [8], "kv-offloading": "dram", "total-cpu-dram-gb": 225, "duration": 3600,
       "exp-name": "glm5_conc8", "disagg": True, "scenario-type": "agentic-coding",
       "kv-offload-backend": {"name": "hicache"},
       "router": {"name": "dynamo-router", "version": "1.0.2"}, "kv-p2p-transfer": "nixl",
       "run-eval": False, "recipe-fingerprint": "f" * 64}
_SF = {"image": "i", "model": "m", "model-prefix": "dsr1", "precision": "fp8",
       "framework": "sglang", "runner": "h200", "isl": 1024, "osl": 1024, "tp": 8, "pp": 1,
       "dcp-size": 1, "pcp-size": 1, "conc": 4, "max-model-len": 2304, "ep": 1,
       "dp-attn": False, "spec-decoding": "none", "exp-name": "dsr1_1k1k", "disagg": False,
       "run-eval": False, "router": None}
_WORKER = ["num-worker", "tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn",
           "additional-settings"]


@pytest.mark.parametrize("row,keys,workers", [
    (_SF, ["image", "model", "model-prefix", "precision", "framework", "spec-decoding",
           "runner", "isl", "osl", "tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn", "conc",
           "max-model-len", "exp-name", "disagg", "run-eval", "eval-only"], None),
    (_MF, ["image", "model", "model-prefix", "precision", "framework", "spec-decoding",
           "runner", "isl", "osl", "prefill", "decode", "conc", "max-model-len", "exp-name",
           "disagg", "run-eval", "eval-only", "eval-all-concs", "kv-p2p-transfer"], _WORKER),
    (_MA, ["image", "model", "model-prefix", "precision", "framework", "spec-decoding",
           "runner", "prefill", "decode", "conc", "kv-offloading", "kv-offload-backend",
           "router", "kv-p2p-transfer", "total-cpu-dram-gb", "duration", "exp-name", "disagg",
           "scenario-type", "run-eval", "recipe-fingerprint"], _WORKER),
])
def test_rows_dumped_as_the_reference_models(row: dict[str, object], keys: list[str],
                                             workers: list[str] | None) -> None:
    from inferencex_tools.sweep.rowmodel import dump_row

    out = dump_row(row)
    assert list(out) == keys
    if "eval-only" in keys:
        assert out["eval-only"] is False
    if workers is not None:
        for w in ("prefill", "decode"):
            assert list(out[w]) == workers
        assert out["decode"]["additional-settings"] == []  # type: ignore[index]
        assert out["prefill"]["additional-settings"] == (  # type: ignore[index]
            row["prefill"].get("additional-settings", []))  # type: ignore[attr-defined]
    for k, v in row.items():  # values kept as they are; nulls dropped
        if k not in ("prefill", "decode"):
            assert out.get(k) == v


def test_dumped_rows_keep_unknown_keys_last() -> None:
    from inferencex_tools.sweep.rowmodel import dump_row

    assert list(dump_row({**_SF, "zzz": 1, "aaa": None}))[-1] == "zzz"
