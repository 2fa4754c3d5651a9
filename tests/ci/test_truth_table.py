"""The label truth table: documented rows (docs/labels.md) and the full product.

* ``test_documented_row`` — every row of the table in docs/labels.md, exactly.
* ``test_product_*`` — invariants plus an independent restatement of the rules
  (``model``) over the product of the 13 relevant labels × draft × fork ×
  head (no tag, ``[skip-sweep]`` on an ordinary commit, ``[skip-sweep]`` on a
  verified preparation commit) × event variant.  The complete product (1,081,344
  cases) is ``slow``; the unmarked tests cover all 8192 label sets for
  ``synchronize`` and all 512 sweep-label sets (policy labels rotating) for every
  other variant.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.ci.labels import (
    FULL_SWEEP,
    MODIFIERS,
    POLICY,
    PRIMARY,
    RELEVANT,
    Decision,
    Facts,
    decide,
)
from inferencex_tools.report.findings import Severity

DOC = Path(__file__).resolve().parents[2] / "docs" / "labels.md"
A, B = "a" * 40, "b" * 40


# ------------------------------------------------------------------ documented table

def _table_rows() -> list[dict[str, str]]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| # | event |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        assert len(cells) == len(header), ln
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


ROWS = _table_rows()


def _set(cell: str) -> frozenset[str]:
    return frozenset() if cell == "–" else frozenset(x.strip() for x in cell.split(","))


def facts_of(row: dict[str, str]) -> Facts:
    event, _, branch = row["event"].partition(":")
    action, _, changed = row["action"].partition(":")
    return Facts(
        event=event,
        action=None if action == "–" else action,
        labels=_set(row["labels"]),
        changed_label=changed or None,
        draft=row["draft"] == "yes",
        fork=row["fork"] == "yes",
        head_message="fix\n\n[skip-sweep]" if row["skip"] in ("yes", "prep") else "fix",
        pr_number=7 if event != "push" else None,
        ref=f"refs/heads/{branch or 'main'}",
        base_sha=A,
        head_sha=B,
        # "prep": ci/prepared.py found the head to be a preparation commit on "before"
        head_prepared=row["skip"] == "prep",
        head_not_prepared="" if row["skip"] == "prep" else "it changes a recipe",
    )


def flags_cell(d: Decision) -> str:
    s = d.sweep
    parts = (["canary"] if s.canary else []) + (["fail-fast"] if s.fail_fast else [])
    parts += s.flags()
    parts += (["agentx-fast"] if s.agentx_fast else []) + (["skip_queue"] if s.skip_queue else [])
    return ", ".join(parts) or "–"


def cells_of(d: Decision) -> dict[str, str]:
    runs = d.sweep.run and not any(f.severity is Severity.ERROR for f in d.findings)
    yn = {True: "yes", False: "no"}
    return {
        "gate": d.changelog_mode if d.changelog_gate else "–",
        "policy": yn[d.policy_check],
        "sweep": yn[runs],
        "mode": d.sweep.mode if runs else "–",
        "flags": flags_cell(d) if runs else "–",
        "reuse": d.reuse_check,
        "findings": " ".join(sorted({f.rule for f in d.findings})) or "–",
    }


def test_table_is_substantial() -> None:
    assert len(ROWS) >= 40
    assert [int(r["#"]) for r in ROWS] == list(range(1, len(ROWS) + 1))


@pytest.mark.parametrize("row", ROWS, ids=[f"row{r['#']}" for r in ROWS])
def test_documented_row(row: dict[str, str]) -> None:
    got = cells_of(decide(facts_of(row)))
    want = {k: row[k] for k in got}
    assert got == want, f"docs/labels.md row {row['#']} disagrees with decide()"


# ------------------------------------------------------------------- full product

PR_VARIANTS: list[tuple[str, str | None]] = [
    ("opened", None), ("synchronize", None), ("reopened", None), ("ready_for_review", None),
    ("labeled", "skip_queue"), ("labeled", "documentation"),
    ("unlabeled", "evals-only"), ("unlabeled", "wontfix"),
]
OTHER_VARIANTS = [("push", "main"), ("push", "feature"), ("merge_group", None)]


def label_sets(names: tuple[str, ...]) -> Iterator[frozenset[str]]:
    for mask in range(1 << len(names)):
        yield frozenset(n for i, n in enumerate(names) if mask >> i & 1)


def model(f: Facts) -> dict[str, Any]:
    """An independent, declarative restatement of docs/labels.md 'Rules of the decision'."""
    prim = [p for p in PRIMARY if p in f.labels]
    tag = "[skip-sweep]" in (f.head_message or "")
    # the tag counts only on the push of a verified preparation commit
    skip = tag and f.action == "synchronize" and f.head_prepared
    if f.event == "push":
        main = f.ref == "refs/heads/main"
        return {"gate": True, "policy": True, "sweep": main, "conflict": False,
                "reuse": "push" if main else "none", "trim": False, "canary": False,
                "rules": []}
    if f.event == "merge_group":
        return {"gate": True, "policy": True, "sweep": False, "conflict": False,
                "reuse": "none", "trim": False, "canary": False, "rules": []}
    noop = f.action in ("labeled", "unlabeled") and f.changed_label not in RELEVANT
    if noop:
        return {"gate": False, "policy": False, "sweep": False, "conflict": False,
                "reuse": "none", "trim": False, "canary": False, "rules": []}
    one = len(prim) == 1
    sweep = one and f.action != "opened" and not f.draft and not f.fork and not skip
    reuse = (f.action == "synchronize" and not f.draft and one and prim[0] in FULL_SWEEP
             and "evals-only" not in f.labels and "agentx-fast" not in f.labels)
    blockers = {"evals-only", "agentx-fast"} & f.labels
    rules = {
        "CI101": len(prim) > 1,
        "CI102": not prim and bool(set(MODIFIERS) & f.labels),
        "CI104": one and prim[0] in FULL_SWEEP and bool(blockers),
        "CI108": blockers == {"evals-only", "agentx-fast"},
        "CI109": "ci-patchwork-waived" in f.labels
        and not ({"ci-patchwork", "engine-patch"} & f.labels),
        # the first reason that stops a labeled sweep is reported (draft, fork, tag)
        "CI106": one and f.action != "opened" and f.draft,
        "CI105": one and f.action != "opened" and not f.draft and f.fork,
        "CI107": one and f.action != "opened" and not f.draft and not f.fork and skip,
        "CI110": one and f.action != "opened" and not f.draft and not f.fork and tag
        and not skip,
    }
    return {
        "gate": True, "policy": True, "sweep": sweep, "conflict": len(prim) > 1,
        "reuse": "pr" if reuse else "none",
        "trim": sweep and prim[0] == "sweep-enabled",
        "canary": sweep and prim[0] in ("full-sweep-enabled", "full-sweep-fail-fast")
        and "evals-only" not in f.labels,
        "rules": sorted(r for r, on in rules.items() if on),
    }


def observed(d: Decision) -> dict[str, Any]:
    errors = [f for f in d.findings if f.severity is Severity.ERROR]
    runs = d.sweep.run and not errors
    return {
        "gate": d.changelog_gate, "policy": d.policy_check, "sweep": runs,
        "conflict": any(f.rule == "CI101" for f in d.findings), "reuse": d.reuse_check,
        "trim": runs and d.sweep.trim_conc, "canary": runs and d.sweep.canary,
        # near misses (CI103) cannot occur: the product holds exact label names only
        "rules": sorted(x.rule for x in d.findings),
    }


def check(f: Facts) -> None:
    d = decide(f)
    assert observed(d) == model(f), f
    # invariants
    if d.noop:
        assert not d.findings and not d.changelog_gate and not d.policy_check
    if d.sweep.run:
        assert not any(x.severity is Severity.ERROR for x in d.findings)
        assert d.sweep.mode in ("trimmed", "full")
        assert d.sweep.reusable == (f.event == "pull_request" and d.sweep.label in FULL_SWEEP
                                    and not ({"evals-only", "agentx-fast"} & f.labels))
    if f.event == "pull_request" and not d.noop:
        assert d.diff_base == A and d.diff_head == B and d.changelog_mode == "pr"
        assert set(d.policy_labels) == set(POLICY) & f.labels
    if f.event != "pull_request":
        assert not d.labels and not d.findings


def facts(event: str, variant: str | None, labels: frozenset[str], draft: bool, fork: bool,
          skip: str) -> Facts:
    """``skip``: "no" (no tag), "tag" (``[skip-sweep]`` on a commit that is not a
    preparation commit), "prep" (the tag on a verified preparation commit)."""
    msg = "x [skip-sweep]" if skip != "no" else "x"
    prep = skip == "prep"
    if event in ("push", "merge_group"):
        return Facts(event=event, action=None if event == "push" else "checks_requested",
                     labels=labels, draft=draft, fork=fork, head_message=msg,
                     ref=f"refs/heads/{variant}" if variant else None, base_sha=A, head_sha=B,
                     head_prepared=prep)
    return Facts(event="pull_request", action=event, changed_label=variant, labels=labels,
                 draft=draft, fork=fork, head_message=msg, pr_number=3, base_sha=A, head_sha=B,
                 head_prepared=prep)


BOOLS3 = list(itertools.product((False, True), (False, True), ("no", "tag", "prep")))
SWEEP_LABELS = PRIMARY + MODIFIERS
POLICY_SETS = list(label_sets(POLICY))


def all_variants() -> list[tuple[str, str | None]]:
    return [*PR_VARIANTS, *OTHER_VARIANTS]


def test_product_synchronize_all_label_sets() -> None:
    n = 0
    for labels in label_sets(RELEVANT):
        for draft, fork, skip in BOOLS3:
            check(facts("synchronize", None, labels, draft, fork, skip))
            n += 1
    assert n == 8192 * 12


def test_product_every_variant_sweep_labels() -> None:
    n = 0
    for variant in all_variants():
        for i, labels in enumerate(label_sets(SWEEP_LABELS)):
            full = labels | POLICY_SETS[i % len(POLICY_SETS)]
            for draft, fork, skip in BOOLS3:
                check(facts(*variant, full, draft, fork, skip))
                n += 1
    assert n == 11 * 512 * 12


@pytest.mark.slow
def test_product_complete() -> None:
    n = 0
    for variant in all_variants():
        for labels in label_sets(RELEVANT):
            for draft, fork, skip in BOOLS3:
                check(facts(*variant, labels, draft, fork, skip))
                n += 1
    assert n == 1_081_344


def test_conflict_hint_names_the_labels() -> None:
    d = decide(Facts(event="pull_request", action="synchronize",
                     labels=frozenset({"sweep-enabled", "full-sweep-fail-fast"}),
                     pr_number=1, base_sha=A, head_sha=B))
    (f,) = [x for x in d.findings if x.rule == "CI101"]
    assert f.hint is not None
    assert re.search(r"two primary labels: remove all but one of sweep-enabled, "
                     r"full-sweep-fail-fast", f.hint)
