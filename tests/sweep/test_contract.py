"""A change's config findings judged by the contract of its base (sweep/contract.py,
docs/sweep.md "PR mode: the base's contract"), on the real tree made into the trees of
other times: ``ci gate --base`` and ``config validate --base`` agree on each.

* as on main: a finding the base's own entries share (same rule, same contract class) is
  a warning naming how many, an error where the base has none (SW311 on a tree whose
  disagg keys carry no kv-p2p-transfer; SW401 on a runner label the base's keys use);
* the generator changes: a finding about a field the change's edit of the repository's
  generator names is a warning (ixtool's schema may be behind);
* the layout of the commit: SW403 looks for single-node scripts where that commit keeps
  them (``benchmarks/single_node/<name>.sh`` before the scenario subfolders);
* the base's findings stay the base's: runners.yaml's when the change only adds keys, a
  key's when the change moves it to another master file.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GIT_ENV, clone_real_tree, git

MASTER = "configs/nvidia-master.yaml"
DISAGG = "dsv4-fp4-gb300-dynamo-vllm"  # multinode, disagg, top-level kv-p2p-transfer
AGENTIC = "minimaxm3-fp8-h200-vllm-agentic-mtp"  # single-node agentic, dram offload
FIXED = "dsr1-fp8-mi300x-sglang"  # single-node fixed-seq-len on a listed label


def _ixtool(root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    env = {k: v for k, v in GIT_ENV.items() if not k.startswith(("GITHUB_", "GH_"))}
    p = subprocess.run([sys.executable, "-m", "inferencex_tools", *args, "--format", "json"],
                       cwd=root, env=env, capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    doc: dict[str, Any] = json.loads(p.stdout)
    return p.returncode, doc


def _sw(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((f["rule"], f["severity"], f["message"]) for f in doc["findings"]
                  if f["rule"].startswith("SW") and f["severity"] != "note")


def _both(root: Path) -> list[tuple[str, str, str]]:
    """The change's config findings by ``ci gate`` and ``config validate``, which agree."""
    _, gate = _ixtool(root, "ci", "gate", "--base", "main", "--pr", "7", "--no-policy")
    _, validate = _ixtool(root, "config", "validate", "--base", "main")
    assert _sw(gate) == _sw(validate)
    return _sw(gate)


def _block(text: str, key: str) -> str:
    at = text.index(f"\n{key}:\n") + 1
    end = text.find("\n\n", at)
    return text[at:end if end >= 0 else len(text)].rstrip("\n") + "\n"


def _add(root: Path, key: str, new: str, *edits: tuple[str, str]) -> None:
    """A copy of ``key``'s block as ``new`` (with ``edits``) at the top of its master file
    (no other block's text changes)."""
    target = next(p for p in sorted((root / "configs").glob("*-master.yaml"))
                  if f"\n{key}:\n" in p.read_text())
    text = target.read_text()
    block = _block(text, key).replace(f"{key}:", f"{new}:", 1)
    for old, repl in edits:
        assert old in block, (old, key)
        block = block.replace(old, repl)
    target.write_text(block + "\n" + text)


def _commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def tree(real_tree: Path, tmp_path: Path) -> Path:
    return clone_real_tree(real_tree, tmp_path / "tree")


def _of_its_time(root: Path) -> int:
    """The base as a tree of its time: disagg keys without kv-p2p-transfer (the
    generator then had no such rule); returns how many keys lost it."""
    text = (root / MASTER).read_text()
    n = text.count("\n  kv-p2p-transfer: nixl\n")
    (root / MASTER).write_text(text.replace("\n  kv-p2p-transfer: nixl\n", "\n"))
    _commit(root, "the tree of its time")
    git(root, "checkout", "-q", "-b", "pr")
    return n


def test_a_finding_the_bases_entries_share_is_as_on_main(tree: Path) -> None:
    n = _of_its_time(tree)
    assert n > 20
    _add(tree, DISAGG, "dsv4-fp4-gb300-dynamo-vllm-new")  # as the base's keys are
    _add(tree, AGENTIC, "minimaxm3-fp8-h200-vllm-agentic-mtp-new",
         ('kv-offload-backend: { name: mooncake, version: "0.3.11.post1" }, ', ""))
    _commit(tree, "two new keys")
    found = _both(tree)
    sw311 = [f for f in found if f[0] == "SW311"]
    assert len(sw311) == 1 and sw311[0][1] == "warning", found
    m = re.search(r"\(as on main: (\d+) entries at the base have it\)$", sw311[0][2])
    assert m and int(m.group(1)) >= n, sw311
    # a finding the base's entries do not have stays an error: dram without a backend
    assert [f[:2] for f in found if f[0] == "SW306"] == [("SW306", "error")], found
    code, _ = _ixtool(tree, "ci", "gate", "--base", "main", "--pr", "7", "--no-policy")
    assert code == 1


def test_a_key_moved_to_another_master_file_keeps_its_findings(tree: Path) -> None:
    _of_its_time(tree)
    text = (tree / MASTER).read_text()
    block = _block(text, DISAGG)
    (tree / MASTER).write_text(text.replace(block, "", 1))
    (tree / "configs" / "zz-master.yaml").write_text(block)
    _commit(tree, f"move {DISAGG} to a master file of its own")
    assert _ixtool(tree, "ci", "gate", "--base", "main", "--pr", "7", "--no-policy"
                   )[1]["findings"] == []


def test_a_label_the_bases_keys_use_is_not_a_typo(tree: Path) -> None:
    git(tree, "checkout", "-q", "-b", "pr")
    _add(tree, DISAGG, "dsv4-fp4-gb300-dynamo-vllm-new")  # gb300-nv: 4 keys at the base
    _add(tree, DISAGG, "dsv4-fp4-gb300-dynamo-vllm-typo",
         ("runner: gb300-nv", "runner: gb300-nvv"))
    _commit(tree, "two new keys on labels runners.yaml does not list")
    found = {f[2].split(":", 1)[0]: f for f in _both(tree) if f[0] == "SW401"}
    used, typo = found["dsv4-fp4-gb300-dynamo-vllm-new"], found["dsv4-fp4-gb300-dynamo-vllm-typo"]
    assert used[1] == "warning" and "'gb300-nv'" in used[2], used
    assert used[2].endswith("(as on main: 4 entries at the base have it)"), used
    assert typo[1] == "error" and "as on main" not in typo[2], typo


GENERATOR = '''"""The repository's matrix generator: its master-config models."""
from enum import Enum
from typing import Optional

from pydantic import BaseModel, Field


class Fields(Enum):
    SEARCH_SPACE = "search-space"
    KV_OFFLOADING = "kv-offloading"
    KV_OFFLOAD_BACKEND = "kv-offload-backend"


class AgenticEntry(BaseModel):
    kv_offloading: str = Field(alias=Fields.KV_OFFLOADING.value)
    kv_offload_backend: Optional[dict] = Field(default=None,
                                               alias=Fields.KV_OFFLOAD_BACKEND.value)
'''


STRING_BACKEND = GENERATOR.replace("kv_offload_backend: Optional[dict]",
                                   "kv_offload_backend: Optional[str]")


@pytest.mark.parametrize("edit", ["the field's type", "a comment", "nothing",
                                  "a generator of its own"])
def test_a_field_the_change_edits_in_the_generator(tree: Path, edit: str) -> None:
    gen = tree / "utils" / "matrix_logic" / "validation.py"
    gen.parent.mkdir(parents=True)
    if edit != "a generator of its own":
        gen.write_text(GENERATOR)
        _commit(tree, "the generator")
    git(tree, "checkout", "-q", "-b", "pr")
    if edit in ("the field's type", "a generator of its own"):
        gen.write_text(STRING_BACKEND)  # the generator this change brings reads a string
    elif edit == "a comment":
        gen.write_text(GENERATOR + "# kv-offload-backend: see the docs\n")
    _add(tree, AGENTIC, "minimaxm3-fp8-h200-vllm-agentic-mtp-new",
         ('{ name: mooncake, version: "0.3.11.post1" }', "mooncake"))
    _commit(tree, "a key in the form of the change's generator")
    found = [f for f in _both(tree) if f[0] == "SW204"]
    assert len(found) == 1, found
    if edit == "the field's type":
        assert found[0][1] == "warning"
        assert found[0][2].endswith("(ixtool's schema may be behind: this change edits the "
                                    "generator's kv-offload-backend "
                                    "(utils/matrix_logic/validation.py))"), found
    else:
        assert found[0][1] == "error" and found[0][2].endswith('found "mooncake" (a string)')


def test_scripts_are_looked_up_in_the_layout_of_the_commit(tree: Path) -> None:
    # the base as before 2026-06-02: fixed-seq-len scripts in benchmarks/single_node/
    sn = tree / "benchmarks" / "single_node"
    for p in sorted((sn / "fixed_seq_len").iterdir()):
        git(tree, "mv", str(p.relative_to(tree)), f"benchmarks/single_node/{p.name}")
    _commit(tree, "scripts in the layout of their time")
    git(tree, "checkout", "-q", "-b", "pr")
    _add(tree, FIXED, "dsr1-fp8-mi300x-sglang-new")  # its script: single_node/dsr1_fp8_mi300x.sh
    _add(tree, FIXED, "dsr1-fp8-mi300x-sglang-nope",
         ("model-prefix: dsr1", "model-prefix: nope"))
    _commit(tree, "two new keys")
    found = [f for f in _both(tree) if f[0] == "SW403"]
    assert len(found) == 1 and found[0][1] == "error", found
    assert "dsr1-fp8-mi300x-sglang-nope" in found[0][2]
    assert "tried benchmarks/single_node/nope_fp8_mi300x_sglang.sh" in found[0][2]


def test_runners_findings_of_the_base_stay_the_bases(tree: Path) -> None:
    # a runners.yaml of its time with a finding of its own (a flat label list)
    runners = tree / "configs" / "runners.yaml"
    runners.write_text(runners.read_text() + "h100:\n- h100-cw_00\n")
    _commit(tree, "runners.yaml of its time")
    git(tree, "checkout", "-q", "-b", "pr")
    _add(tree, FIXED, "dsr1-fp8-mi300x-sglang-new")
    _commit(tree, "a new key only")
    assert _both(tree) == []


# ------------------------------------------------------------- real pull-request heads

# head → what its configs stage said before (all false errors, docs/pr-heads.md):
#   2114: a new key on 'gb300-nv' (9 base keys use it) without kv-p2p-transfer (66
#         base entries have none) → SW401 + SW311 errors;
#   1500: a new key whose script is benchmarks/single_node/dsr1_fp8_mi325x_mtp.sh, the
#         layout of its time → SW403;
#   1970: kv-offload-backend as the string its own generator edit reads (27 × SW204)
#         and new disagg keys as the base's (SW311).
REAL_HEADS = {2114: {"SW401": 1, "SW311": 1}, 1500: {}, 1970: {"SW204": 27, "SW311": 2}}


@pytest.fixture(scope="module")
def heads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import SHARED

    bundle = SHARED / "corpus" / "inferencex-pr-heads-upto-0714.bundle"
    if not bundle.is_file():
        pytest.skip(f"PR-heads bundle not found at {bundle}")
    repo = tmp_path_factory.mktemp("heads") / "heads.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(repo)], env=GIT_ENV,
                   check=True)
    subprocess.run(["git", "-C", str(repo), "fetch", "-q", str(bundle), *(
        f"+refs/pull/{n}/head:refs/pull/{n}/head" for n in REAL_HEADS)], env=GIT_ENV,
        check=True)
    return repo


@pytest.mark.slow  # a clone of the heads bundle, three gates on trees of ~14k config lines
@pytest.mark.parametrize("pr", sorted(REAL_HEADS))
def test_real_heads_are_judged_by_their_bases_contract(heads: Path, tmp_path: Path,
                                                       pr: int) -> None:
    wt = tmp_path / f"w{pr}"
    git(heads, "worktree", "add", "-q", "--detach", str(wt), f"refs/pull/{pr}/head")
    base = git(wt, "merge-base", "main-upto-0715", "HEAD").strip()
    _, doc = _ixtool(wt, "ci", "gate", "--base", base, "--pr", str(pr), "--no-policy")
    sw = [f for f in doc["findings"] if f["rule"].startswith("SW")]
    assert [f for f in sw if f["severity"] == "error"] == [], sw
    warned: dict[str, int] = {}
    for f in sw:
        if f["severity"] == "warning" and ("(as on main: " in f["message"]
                                           or "may be behind" in f["message"]):
            warned[f["rule"]] = warned.get(f["rule"], 0) + 1
    assert warned == REAL_HEADS[pr], sw
