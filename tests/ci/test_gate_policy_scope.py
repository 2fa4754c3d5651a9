"""The gate's policy stage judges only the changed keys' rows when no other row can be
selected (ci.gate._policy_scope), with the findings of the whole incremental check."""

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
    assert G._policy_scope(_ctx(path)) == scope, name


def test_no_scope_when_the_checkout_is_not_the_head(temp_repo: TempRepo) -> None:
    path = _repo(temp_repo, BASE_FILES,
                 {"configs/x-master.yaml": MASTER.replace("image: y", "image: z")})
    (path / "configs" / "x-master.yaml").write_text(MASTER, encoding="utf-8")
    assert G._policy_scope(_ctx(path)) is None


def test_history_scope_gives_the_whole_checks_findings(history_repo: Path) -> None:
    """The last real commit (a config block and the changelog): the scoped check finds
    exactly what the whole incremental check finds."""
    ctx = _ctx(history_repo)
    scope = G._policy_scope(ctx)
    want_keys: list[str] = []
    for p in G._master_paths(ctx.blobs, ctx.head):
        head = ctx.blobs.get(ctx.head, p).decode()
        base = ctx.blobs.get(ctx.base, p)
        t = B.touched(head, base.decode() if base is not None else None)
        assert t is not None
        want_keys += [b.key for b in t[0]]
    assert scope == want_keys and scope
    whole = run_check_incremental(history_repo, base=ctx.base, head=ctx.head)
    scoped = run_check(CheckRequest(root=history_repo, base=ctx.base, head=ctx.head,
                                    config_keys=scope))
    assert scoped.findings == whole.findings and whole.findings
    assert scoped.info["base"]["traced-keys"] == whole.info["base"]["traced-keys"]


def test_gate_policy_stage_equals_the_incremental_check(history_repo: Path) -> None:
    """The stage (scoped, on the gate's own git reader) finds what the policy area's
    incremental check finds on its own."""
    ctx = _ctx(history_repo)
    try:
        got = G.default_policy_stage(ctx)
    finally:
        ctx.repo.reader.close()
    whole = run_check_incremental(history_repo, base=ctx.base, head=ctx.head)
    assert got == whole.findings and got
