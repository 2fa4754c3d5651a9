"""The policy check of a change (``policy check --base``, the gate's policy stage: one
code path) judges only the changed keys' rows when no other row can be selected (it
parses only their blocks: ``info.base.scope``), with the findings of the whole
incremental check; a change no row can read is not checked at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.ci import gate as G
from inferencex_tools.policy.service import CheckRequest, run_check, run_check_incremental
from inferencex_tools.sweep import blocks as B
from tests.conftest import TempRepo

MASTER = (
    "a-key:\n  image: x\n  model-prefix: a\n"
    "b-key:\n  image: y\n  model-prefix: b\n"
)


def _ctx(path: Path, base: str = "HEAD~1", head: str = "HEAD") -> G.GateContext:
    repo = G._Repo(path)
    b, h = repo.resolve(base), repo.resolve(head)
    ctx = G.GateContext(repo=repo, decision=Any, base=b, head=h,  # type: ignore[arg-type]
                        changed=repo.reader.changed(b, h), blobs=G._Blobs(repo))
    return ctx


def _repo(temp_repo: TempRepo, files: dict[str, str], edits: dict[str, str]) -> Path:
    for rel, text in files.items():
        temp_repo.write(rel, text)
    temp_repo.commit("base")
    for rel, text in edits.items():
        temp_repo.write(rel, text)
    temp_repo.commit("the change")
    return temp_repo.path


BASE_FILES = {"configs/x-master.yaml": MASTER, "configs/runners.yaml": "labels: {}\n",
              "perf-changelog.yaml": "[]\n", "runners/launch_h100.sh": "echo\n",
              "benchmarks/multi_node/r.yaml": "a: 1\n"}


@pytest.mark.parametrize("name,edits,scope", [
    ("one block", {"configs/x-master.yaml": MASTER.replace("image: y", "image: z")},
     ["b-key"]),
    ("block and changelog", {"configs/x-master.yaml": MASTER + "c-key:\n  image: c\n",
                             "perf-changelog.yaml": "[]\n# new\n"}, ["c-key"]),
    ("a launcher", {"runners/launch_h100.sh": "echo 2\n"}, None),
    ("a python helper", {"utils/x.py": "print()\n"}, None),
    ("runners.yaml", {"configs/runners.yaml": "labels: {a: [b]}\n"}, None),
    ("a curve", {"golden_al_distribution/m.yaml": "a: 1\n"}, None),
    ("a recipe the configs name",
     {"configs/x-master.yaml": MASTER.replace("image: y", "image: z")
      + "c-key:\n  s: [CONFIG_FILE=recipes/r.yaml]\n",
      "benchmarks/multi_node/r.yaml": "a: 2\n"}, None),
    ("an escape in a config", {"configs/x-master.yaml": MASTER.replace("image: y",
                                                                        'image: "\\x79"')},
     None),
    ("comment only", {"configs/x-master.yaml": "# c\n" + MASTER}, None),
    ("unsplittable", {"configs/x-master.yaml": "{a-key: {image: x}}\n"}, None),
])
def test_scope(temp_repo: TempRepo, name: str, edits: dict[str, str],
               scope: list[str] | None) -> None:
    path = _repo(temp_repo, BASE_FILES, edits)
    assert _scope(path) == scope, name


def _scope(path: Path, head: str | None = "HEAD") -> list[str] | None:
    res = run_check(CheckRequest(root=path, base="HEAD~1", head=head))
    got: list[str] | None = res.info["base"].get("scope")
    return got or None


def test_the_working_tree_is_compared_without_a_head(temp_repo: TempRepo) -> None:
    """``policy check --base`` without a head compares the working tree: an edit not
    committed is the change."""
    path = _repo(temp_repo, BASE_FILES,
                 {"configs/x-master.yaml": MASTER.replace("image: y", "image: z")})
    (path / "configs" / "x-master.yaml").write_text(MASTER.replace("image: x", "image: w"),
                                                    encoding="utf-8")
    assert _scope(path, head=None) == ["a-key"]


@pytest.mark.parametrize("name,edits", [
    ("docs", {"README.md": "# hi\n", "docs/x.md": "x\n"}),
    ("the changelog only", {"perf-changelog.yaml": "[]\n# new\n"}),
    ("a YAML file no config names", {"benchmarks/multi_node/other.yaml": "b: 1\n"}),
])
def test_a_change_no_row_reads_is_not_checked(temp_repo: TempRepo, name: str,
                                              edits: dict[str, str]) -> None:
    path = _repo(temp_repo, BASE_FILES, edits)
    res = run_check(CheckRequest(root=path, base="HEAD~1", head="HEAD"))
    assert res.findings == [] and res.info["rows"] == [] and res.info["traces"] == 0, name
    assert res.info["base"]["traced-keys"] == {} and "scope" not in res.info["base"]
    assert "rows-from" not in res.info  # no master config was even read as configs


def test_history_scope_gives_the_whole_checks_findings(history_repo: Path) -> None:
    """The last real commit (a config block and the changelog): the scoped check finds
    exactly what the whole incremental check finds."""
    ctx = _ctx(history_repo)
    scope = _scope(history_repo)
    want_keys: list[str] = []
    for p in G._master_paths(ctx.blobs, ctx.head):
        head = ctx.blobs.get(ctx.head, p).decode()
        base = ctx.blobs.get(ctx.base, p)
        t = B.touched(head, base.decode() if base is not None else None)
        assert t is not None
        want_keys += [b.key for b in t[0]]
    assert scope == want_keys and scope
    whole = run_check_incremental(history_repo, base=ctx.base, head=ctx.head)
    for only_blocks in (False, True):  # keys_are_change: only the scope's blocks parsed
        scoped = run_check(CheckRequest(root=history_repo, base=ctx.base, head=ctx.head,
                                        config_keys=scope, keys_are_change=only_blocks))
        assert scoped.findings == whole.findings and whole.findings
        assert scoped.info["base"]["traced-keys"] == whole.info["base"]["traced-keys"]


def test_real_tree_scope_parses_only_the_changed_blocks(
        real_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec-decoding key's block edited on the real tree (no registry: the curves'
    model prefixes are looked up block by block): the stage finds what the whole
    incremental check finds, and no master config is parsed whole."""
    import re

    from inferencex_tools.sweep import load
    from tests.conftest import clone_real_tree, git

    root = clone_real_tree(real_tree, tmp_path / "tree")
    master = root / "configs" / "nvidia-master.yaml"
    text = master.read_text(encoding="utf-8")
    blocks = B.split(text)
    assert blocks is not None
    block = next(b for b in blocks if re.search(r"spec-decoding: \"?mtp", b.text)
                 and "conc-list: [" in b.text and "multinode: true" not in b.text)
    edited = re.sub(r"conc-list: \[([^]]*)\]", r"conc-list: [\1, 3]", block.text, count=1)
    master.write_text(text.replace(block.text, edited), encoding="utf-8")
    git(root, "commit", "-q", "-am", "one block")
    ctx = _ctx(root)
    assert _scope(root) == [block.key]
    whole_files: list[str] = []
    real = load._load_cached

    def spy(raw: bytes, label: str) -> object:
        if label.endswith("-master.yaml"):
            whole_files.append(label)
        return real(raw, label)

    load.clear_cache()
    monkeypatch.setattr(load, "_load_cached", spy)
    try:
        got = G.default_policy_stage(ctx)
    finally:
        ctx.repo.reader.close()
    assert whole_files == []
    monkeypatch.setattr(load, "_load_cached", real)
    whole = run_check_incremental(root, base="HEAD~1", head="HEAD")
    assert got == whole.findings
    assert list(whole.info["base"]["traced-keys"]) == [block.key] and whole.info["traces"]


CASE = Path(__file__).parents[1] / "cases" / "sweep" / "config" / "ok-agentic-dram.yaml"
NO_LAUNCHER_FILES = {
    "configs/x-master.yaml": CASE.read_text(encoding="utf-8"),
    "configs/runners.yaml": "labels:\n  cluster:h200-dgxc: [h200-dgxc_0]\nhardware:\n"
                            "  cluster:h200-dgxc: {available-cpu-dram-mib: 2000000, "
                            "gpus-per-node: 8}\n",
    "perf-changelog.yaml": "[]\n", "runners/launch_h100.sh": "echo\n"}


@pytest.mark.parametrize("name,edits,po201", [
    ("a workflow", {".github/workflows/x.yml": "on: push\n"}, False),
    ("another launcher", {"runners/launch_h100.sh": "echo 2\n"}, False),
    ("the key's block", {"configs/x-master.yaml": CASE.read_text(encoding="utf-8").replace(
        "conc-list: [1, 2]", "conc-list: [1, 2, 4]")}, True),
    ("its launcher deleted", {"runners/launch_h200-dgxc.sh": None}, True),
    # the whole check says "not checked" for a label runners.yaml does not list; a PR
    # moving a key there is the PR's to explain: still PO201
    ("its label to one runners.yaml does not list", {
        "configs/x-master.yaml": CASE.read_text(encoding="utf-8").replace(
            "cluster:h200-dgxc", "cluster:zz-unlisted"),
        "configs/runners.yaml": NO_LAUNCHER_FILES["configs/runners.yaml"]
        + "  cluster:zz-unlisted: {available-cpu-dram-mib: 2000000, gpus-per-node: 8}\n"}, True),
])
def test_a_missing_launcher_is_the_changes_only_when_it_can_be(
        temp_repo: TempRepo, name: str, edits: dict[str, str | None], po201: bool) -> None:
    """PR mode: a key without a launcher is PO201 when the change can have taken the
    launcher away (its block, its label's runners.yaml entry, the launcher itself), not
    for a change elsewhere (real PRs #1976, three workflows, and #1233, another
    launcher: PO201 for every multi-node key)."""
    files = {**NO_LAUNCHER_FILES, **({"runners/launch_h200-dgxc.sh": "echo\n"}
                                     if "runners/launch_h200-dgxc.sh" in edits else {})}
    rules = _rules_of_change(temp_repo, files, edits)
    assert ("PO201" in rules) is po201, (name, rules)


def _rules_of_change(temp_repo: TempRepo, base: dict[str, str],
                     edits: dict[str, str | None]) -> set[str]:
    """The rules of ``policy check --base`` on a commit of ``base`` then one of ``edits``
    (None: the file deleted)."""
    for rel, text in base.items():
        temp_repo.write(rel, text)
    temp_repo.commit("base")
    for rel, new in edits.items():
        if new is None:
            (temp_repo.path / rel).unlink()
        else:
            temp_repo.write(rel, new)
    temp_repo.git("add", "-A")
    temp_repo.commit("the change")
    res = run_check(CheckRequest(root=temp_repo.path, base="HEAD~1", head="HEAD"))
    return {f.rule for f in res.findings}


UNLISTED = CASE.read_text(encoding="utf-8").replace("cluster:h200-dgxc", "cluster:zz-unlisted")


@pytest.mark.parametrize("name,launchers,edits,po201", [
    ("another launcher edited", {}, {"runners/launch_h100.sh": "echo 2\n"}, False),
    # real head #1201: the key's block edited, its label kept
    ("the key's block edited, its label kept", {}, {"configs/x-master.yaml": UNLISTED.replace(
        "conc-list: [1, 2]", "conc-list: [1, 2, 4]")}, False),
    ("a launcher the label resolves to by name deleted",
     {"runners/launch_zz-unlisted-a.sh": "echo\n"}, {"runners/launch_zz-unlisted-a.sh": None},
     True),
])
def test_a_label_no_side_lists_is_not_the_changes_missing_launcher(
        temp_repo: TempRepo, name: str, launchers: dict[str, str],
        edits: dict[str, str | None], po201: bool) -> None:
    """PR mode, a key on a runner label runners.yaml lists at neither side (the whole
    check: not checked, PO308): only a change to a launcher the label resolves to by
    name (``runners/launch_<label>*.sh``) can have taken its launcher away, and the key
    is the change's only when the change put it on the label.  Real heads
    #1796, #1798 and #1949 edited other launchers and got PO201 for keys on 'b200-dsv4'
    (merged, and their jobs ran)."""
    hardware = NO_LAUNCHER_FILES["configs/runners.yaml"] + \
        "  cluster:zz-unlisted: {available-cpu-dram-mib: 2000000, gpus-per-node: 8}\n"
    base = {**NO_LAUNCHER_FILES, "configs/x-master.yaml": UNLISTED,
            "configs/runners.yaml": hardware, **launchers}
    rules = _rules_of_change(temp_repo, base, edits)
    assert ("PO201" in rules) is po201, (name, rules)
