"""A :class:`Review` as Markdown (the sticky summary comment, the review body, the local
print-out) or JSON (pure)."""

from __future__ import annotations

import json
from collections import Counter

from inferencex_tools.report.findings import Finding
from inferencex_tools.report.inert import cap, code, prose
from inferencex_tools.review.glance import mermaid
from inferencex_tools.review.model import (
    CHECKLIST_PHRASE,
    REVIEW_MARKER,
    SUMMARY_MARKER,
    GoldenRow,
    Review,
    ShapeDelta,
)

_CAT = {"spec": "spec config", "memory": "memory fraction", "capture": "CUDA-graph capture size",
        "seqs": "max sequences", "other": "**other**"}


def _cell(v: object) -> str:
    """A value in a table cell: code that nothing in it can close or split."""
    if v is None:
        return "—"
    s = f"{v:g}" if isinstance(v, float) else str(v)
    if not s:
        return ""
    return code(s if len(s) <= 80 else s[:77] + "…", table=True)


def _text(v: object) -> str:
    """PR-derived words in a table cell (prose, ``|`` escaped)."""
    return prose(str(v))


def _golden(rows: list[GoldenRow]) -> list[str]:
    out = ["| key | rows | arms | engine | draft | K | thinking | curve | golden (engine unit)"
           " | trace saw | verdict |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for g in rows:
        if g.golden is not None:
            golden = f"{g.golden:g}" + (f" ({g.setting})" if g.setting else "")
        elif g.by_mode:
            golden = " / ".join(f"{v:g} ({m})" for m, v in g.by_mode.items()) + (
                f" ({g.setting}; mode undetermined)" if g.setting else "")
        else:
            golden = "not forced" if g.mode == "eval" and g.seen is None else "—"
        seen = _cell(g.seen) if g.seen else "real verification"
        out.append(f"| {_cell(g.key)} | {_jobs(g)} | {_text(', '.join(g.job_arms or g.arms))} | "
                   f"{_text(g.engine)} {_text(g.method or '')} | {_cell(g.draft)} | "
                   f"{g.k if g.k is not None else '?'} | {_text(g.thinking or 'undetermined')} | "
                   f"{_cell(g.curve)} | {_text(golden)} | {seen} | {_text(g.verdict)} |")
    return out


def _jobs(g: GoldenRow) -> str:
    """The jobs a table line covers, counted as the matrix at a glance counts them."""
    if g.jobs is None:
        return f"{g.rows} {g.mode} row(s) checked"
    if g.jobs == 0:
        return f"0 {g.mode} (checked, not in this sweep)"
    return f"{g.jobs} {g.mode}"


def _delta(d: ShapeDelta) -> list[str]:
    kind = "spec-decoding" if d.sibling_spec else "non-spec"
    head = (f"**{code(d.key)}** vs {kind} sibling **{code(d.sibling)}** (arm "
            f"{prose(d.arm)}; {_cell(d.ours_script)} vs {_cell(d.theirs_script)})")
    if not d.items:
        return [head, "", "same server arguments and environment", ""]
    out = [head, "", "| what | | this recipe | sibling |", "|---|---|---|---|"]
    for i in d.items:
        name = i.name if i.kind == "arg" else f"${i.name}"
        out.append(f"| {_CAT[i.category]} | {_cell(name)} | {_cell(i.ours)} | "
                   f"{_cell(i.theirs)} |")
    other = d.unexpected
    out.append("")
    out.append("delta beyond the spec-decode flags, memory fraction, capture size and max "
               "sequences: " + (", ".join(code(i.name) for i in other) if other else "none"))
    return [*out, ""]


def _finding(f: Finding) -> str:
    where = f"{f.file}:{f.line}" if f.line else f.file
    return (f"- **{prose(f.rule)}** ({f.severity.value}) {code(where)}: {prose(f.message)}"
            + (f" — {prose(f.hint)}" if f.hint and f.severity.value != "note" else ""))


def _head(r: Review) -> list[str]:
    ok = r.verdict == "pass"
    out = [SUMMARY_MARKER,
           f"## ixtool review: {'✅ gate passes' if ok else '❌ gate fails'}",
           "",
           f"Head `{r.head_sha[:12]}` against {code(r.base)} (merge-base "
           f"`{r.merge_base[:12]}`)"
           + (f"; recipes touched: {', '.join(code(k) for k in r.touched)}"
              if r.touched else "; no recipe touched") + ".",
           "",
           "| gate stage | " + " | ".join(prose(k) for k in r.stages) + " |",
           "|---|" + "---|" * len(r.stages),
           "| result | " + " | ".join(prose(v) for v in r.stages.values()) + " |", ""]
    n_sugg = sum(1 for c in r.comments if c.suggestion is not None)
    out.append(f"{len(r.comments)} line comment(s), {n_sugg} with a suggested fix"
               + ("" if not r.other_findings else
                  f"; {len(r.other_findings)} finding(s) not on a changed line:"))
    out += [_finding(f) for f in r.other_findings]
    if r.preexisting:
        out += ["", _preexisting(r.preexisting)]
    return out


def _preexisting(fs: list[Finding]) -> str:
    """One collapsed line: the gate's findings the base already has."""
    rules = Counter(f.rule for f in fs)
    what = ", ".join(f"{prose(k)}×{n}" if n > 1 else prose(k) for k, n in sorted(rules.items()))
    items = "\n".join(_finding(f) for f in fs)
    return (f"<details><summary>{len(fs)} finding(s) already present at the base, not this "
            f"PR's ({what}; the gate does not count them)</summary>\n\n{items}\n\n"
            "</details>")


def _matrix(r: Review) -> list[str]:
    out = ["", "### Matrix at a glance", ""]
    if r.matrix_error:
        return [*out, f"no matrix: {prose(r.matrix_error)}"]
    if not r.arms:
        return [*out, "the change adds no changelog entry: no sweep jobs"]
    out += ["| key | arm | mode | concurrency | jobs | GPUs/job | GPU-hours |",
            "|---|---|---|---|---:|---:|---:|"]
    for a in r.arms:
        gh = f"{a.gpu_hours:.1f}" if a.gpu_hours is not None else "—"
        out.append(f"| {_cell(a.key)} | {_text(a.arm)} | {a.mode} | "
                   f"{', '.join(map(str, a.concs))} | {a.jobs} | "
                   f"{a.gpus if a.gpus is not None else '?'} | {gh} |")
    tp = [a for a in r.arms if a.mode == "throughput"]
    hours = sum(a.gpu_hours or 0.0 for a in r.arms)
    n_ev = sum(a.jobs for a in r.arms if a.mode == "eval")
    out += ["", f"**{sum(a.jobs for a in tp)} throughput jobs in {len(tp)} arms**"
            + (f" + {n_ev} eval job(s)" if n_ev else "")
            + f", est. {hours:.1f} GPU-hours (jobs × GPUs × duration).", ""]
    chart = mermaid(r.arms)
    return [*out, chart] if chart else out


def _labels(r: Review) -> list[str]:
    la = r.labels
    if la is None:
        return []
    out = ["", "### Labels and CODEOWNER checklist", "", f"- sweep label: {la.advice}"]
    if la.checklist_present is None:
        out.append("- checklist: unknown (no PR given)")
    elif la.checklist_present:
        out.append(f"- checklist: ✅ the sign-off phrase is in the {la.checklist_where}")
    else:
        out.append(f"- checklist: ❌ missing — a CODEOWNER fills in "
                   f"docs/PR_REVIEW_CHECKLIST.md including the phrase "
                   f"`{CHECKLIST_PHRASE}` (the sign-off bot triggers on it)")
    return out


def summary_markdown(r: Review) -> str:
    out = _head(r)
    if r.golden:
        out += ["", "### Golden acceptance length", "", *_golden(r.golden)]
    if r.al_audit:  # after a sweep: what the launches really served
        out += ["", r.al_audit.rstrip("\n")]
    if r.deltas:
        out += ["", "### Serve shape vs siblings", ""]
        for d in r.deltas:
            out += _delta(d)
    out += _matrix(r)
    out += _labels(r)
    out += ["", f"<sub>ixtool review · {r.head_sha} · edited in place on every new head"
            "</sub>"]
    return cap("\n".join(out) + "\n", what="the summary")


def review_body(r: Review) -> str:
    n_sugg = sum(1 for c in r.comments if c.suggestion is not None)
    return (REVIEW_MARKER.format(sha=r.head_sha) + "\n"
            f"**ixtool review** of `{r.head_sha[:12]}`: {len(r.comments)} comment(s), "
            f"{n_sugg} suggested fix(es). The summary (gate, golden AL, serve shape, "
            "matrix, labels) is the sticky ixtool comment.\n")


def markdown(r: Review) -> str:
    """The local print-out: the summary, then every line comment as it would be posted."""
    out = [summary_markdown(r)]
    if r.comments:
        out += ["### Line comments", ""]
        for c in r.comments:
            span = f"{c.start_line}-{c.line}" if c.start_line else str(c.line)
            out += [f"**{code(f'{c.path}:{span}')}**", "", c.markdown(), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def to_json(r: Review) -> str:
    d = r.to_dict()
    d["summary-markdown"] = summary_markdown(r)
    d["review-body"] = review_body(r)
    return json.dumps(d, indent=2, ensure_ascii=False) + "\n"
