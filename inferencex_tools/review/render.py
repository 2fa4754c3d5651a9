"""A :class:`Review` as Markdown (the sticky summary comment, the review body, the local
print-out) or JSON (pure)."""

from __future__ import annotations

import json

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
    if v is None:
        return "—"
    s = f"{v:g}" if isinstance(v, float) else str(v)
    s = s.replace("|", "\\|").replace("\n", " ")
    return f"`{s}`" if s and len(s) <= 80 else (f"`{s[:77]}…`" if s else "")


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
        out.append(f"| `{g.key}` | {g.rows} {g.mode} | {', '.join(g.arms)} | {g.engine} "
                   f"{g.method or ''} | {_cell(g.draft)} | {g.k if g.k is not None else '?'} | "
                   f"{g.thinking or 'undetermined'} | {_cell(g.curve)} | {golden} | {seen} | "
                   f"{g.verdict} |")
    return out


def _delta(d: ShapeDelta) -> list[str]:
    kind = "spec-decoding" if d.sibling_spec else "non-spec"
    head = (f"**`{d.key}`** vs {kind} sibling **`{d.sibling}`** (arm {d.arm}; "
            f"{_cell(d.ours_script)} vs {_cell(d.theirs_script)})")
    if not d.items:
        return [head, "", "same server arguments and environment", ""]
    out = [head, "", "| what | | this recipe | sibling |", "|---|---|---|---|"]
    for i in d.items:
        name = i.name if i.kind == "arg" else f"${i.name}"
        out.append(f"| {_CAT[i.category]} | `{name}` | {_cell(i.ours)} | {_cell(i.theirs)} |")
    other = d.unexpected
    out.append("")
    out.append("delta beyond the spec-decode flags, memory fraction, capture size and max "
               "sequences: " + (", ".join(f"`{i.name}`" for i in other) if other else "none"))
    return [*out, ""]


def _head(r: Review) -> list[str]:
    ok = r.verdict == "pass"
    out = [SUMMARY_MARKER,
           f"## ixtool review: {'✅ gate passes' if ok else '❌ gate fails'}",
           "",
           f"Head `{r.head_sha[:12]}` against `{r.base}` (merge-base `{r.merge_base[:12]}`)"
           + (f"; recipes touched: {', '.join(f'`{k}`' for k in r.touched)}"
              if r.touched else "; no recipe touched") + ".",
           "",
           "| stage | " + " | ".join(r.stages) + " |",
           "|---|" + "---|" * len(r.stages),
           "| result | " + " | ".join(r.stages.values()) + " |", ""]
    n_sugg = sum(1 for c in r.comments if c.suggestion is not None)
    out.append(f"{len(r.comments)} line comment(s), {n_sugg} with a suggested fix"
               + ("" if not r.other_findings else
                  f"; {len(r.other_findings)} finding(s) not on a changed line:"))
    for f in r.other_findings:
        where = f"{f.file}:{f.line}" if f.line else f.file
        out.append(f"- **{f.rule}** ({f.severity.value}) `{where}`: {f.message}"
                   + (f" — {f.hint}" if f.hint and f.severity.value != "note" else ""))
    return out


def _matrix(r: Review) -> list[str]:
    out = ["", "### Matrix at a glance", ""]
    if r.matrix_error:
        return [*out, f"no matrix: {r.matrix_error}"]
    if not r.arms:
        return [*out, "the change adds no changelog entry: no sweep jobs"]
    out += ["| key | arm | mode | concurrency | jobs | GPUs/job | GPU-hours |",
            "|---|---|---|---|---:|---:|---:|"]
    for a in r.arms:
        gh = f"{a.gpu_hours:.1f}" if a.gpu_hours is not None else "—"
        out.append(f"| `{a.key}` | {a.arm} | {a.mode} | {', '.join(map(str, a.concs))} | "
                   f"{a.jobs} | {a.gpus if a.gpus is not None else '?'} | {gh} |")
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
    if r.deltas:
        out += ["", "### Serve shape vs siblings", ""]
        for d in r.deltas:
            out += _delta(d)
    out += _matrix(r)
    out += _labels(r)
    out += ["", f"<sub>ixtool review · {r.head_sha} · edited in place on every new head"
            "</sub>"]
    return "\n".join(out) + "\n"


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
            out += [f"**`{c.path}:{span}`**", "", c.markdown(), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def to_json(r: Review) -> str:
    d = r.to_dict()
    d["summary-markdown"] = summary_markdown(r)
    d["review-body"] = review_body(r)
    return json.dumps(d, indent=2, ensure_ascii=False) + "\n"
