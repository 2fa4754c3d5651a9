"""Renderings of a :class:`~inferencex_tools.ci.labels.Decision`, pure.

* :func:`output_pairs` — the ``$GITHUB_OUTPUT`` pairs (formatted and written by
  :mod:`inferencex_tools.io.actions`);
* :func:`summary_markdown` — the ``$GITHUB_STEP_SUMMARY`` table;
* :func:`explain_text` — the human explanation (``labels explain``, ``ci plan``).
"""

from __future__ import annotations

import json

from inferencex_tools.ci.labels import LABEL_HELP, Decision, Sweep
from inferencex_tools.report.findings import Severity


def _b(x: bool) -> str:
    return "true" if x else "false"


def output_pairs(d: Decision) -> list[tuple[str, str]]:
    """Every output of ``ixtool ci plan`` (see docs/ci.md for the meaning)."""
    s = d.sweep
    errors = sum(1 for f in d.findings if f.severity is Severity.ERROR)
    return [
        ("noop", _b(d.noop)),
        ("changelog-gate", _b(d.changelog_gate)),
        ("changelog-mode", d.changelog_mode),
        ("diff-base", d.diff_base or ""),
        ("diff-head", d.diff_head or ""),
        ("pr-number", str(d.pr_number) if d.pr_number is not None else ""),
        ("policy-check", _b(d.policy_check)),
        ("sweep", _b(s.run and errors == 0)),
        ("sweep-mode", s.mode if s.run else "none"),
        ("sweep-label", s.label or ""),
        ("sweep-flags", " ".join(s.flags())),
        ("sweep-reason", s.reason),
        ("canary", _b(s.run and s.canary)),
        ("fail-fast", _b(s.fail_fast)),
        ("trim-conc", _b(s.trim_conc)),
        ("all-evals", _b(s.all_evals)),
        ("evals-only", _b(s.evals_only)),
        ("agentx-fast", _b(s.agentx_fast)),
        ("skip-queue", _b(s.skip_queue)),
        ("reusable", _b(s.reusable)),
        ("trusted-sweep", _b(d.trusted_sweep and errors == 0)),
        ("reuse-check", d.reuse_check),
        # true only when the tag skips the PR sweep (a preparation commit's push): a
        # workflow that maps the reference's skip-pr-sweep here gets ixtool's reading
        ("skip-sweep-tag", _b(d.skip_sweep)),
        ("concurrency-group", d.concurrency_group),
        ("labels", json.dumps(list(d.labels))),
        ("policy-labels", json.dumps(list(d.policy_labels))),
        ("errors", str(errors)),
        ("reasons", "\n".join(d.reasons)),
        ("decision", json.dumps(d.to_dict(), separators=(",", ":"), sort_keys=True)),
    ]


def _md(s: str) -> str:
    """Text in the summary (a table cell or a list item) that renders as that text: a
    reason or a finding can quote PR-controlled strings (report.inert)."""
    from inferencex_tools.report.inert import prose

    return prose(s)


def _sweep_detail(s: Sweep) -> str:
    if s.mode == "none":
        return "–"
    parts = [f"{s.mode} matrix"]
    parts.append("canary" if s.canary else "no canary")
    if s.fail_fast:
        parts.append("fail-fast")
    parts += s.flags()
    if s.agentx_fast:
        parts.append("agentx-fast")
    if s.skip_queue:
        parts.append("skip_queue")
    parts.append("reusable at merge" if s.reusable else "not reusable at merge")
    return ", ".join(parts)


def _tag_detail(d: Decision) -> str:
    if d.skip_sweep:
        return "[skip-sweep] on a preparation commit: PR sweep skipped"
    if d.skip_sweep_tag:
        return "[skip-sweep] in head commit, ignored" + (" on push" if d.event == "push" else "")
    return "–"


def _runs(x: bool) -> str:
    return "✅ runs" if x else "⏭️ skipped"


def summary_markdown(d: Decision, *, errors: int | None = None) -> str:
    """The readable decision table for ``$GITHUB_STEP_SUMMARY``.  ``errors``: ``ci
    gate``'s error findings in all its stages (the gate's verdict is its first row, and
    the sweep runs only without any: the plan's decision alone would show it green)."""
    what = d.event + (f" ({d.action})" if d.action else "")
    if d.pr_number is not None:
        what += f", PR #{d.pr_number}"
    gate = f"{d.changelog_mode} mode"
    if d.diff_base:
        gate += f", {d.diff_base[:12]}..{(d.diff_head or '')[:12]}"
    blocked = any(f.severity is Severity.ERROR for f in d.findings) or bool(errors)
    sweep_ok = d.sweep.run and not blocked
    lines = [
        f"### `ixtool {'ci plan' if errors is None else 'ci gate'}`: {what}",
        "",
        "| step | decision | details |",
        "|---|---|---|",
    ]
    if errors is not None:
        lines.append(f"| gate | {'❌ fail' if errors else '✅ pass'} | "
                     f"{errors} error finding{'' if errors == 1 else 's'} |")
    lines += [
        f"| changelog gate | {_runs(d.changelog_gate)} | "
        f"{_md(gate if d.changelog_gate else '–')} |",
        f"| policy check | {_runs(d.policy_check)} | "
        f"{_md(', '.join(d.policy_labels) or '–')} |",
        f"| sweep | {_runs(sweep_ok)} | {_md(d.sweep.reason)} |",
        f"| sweep mode | {_md(d.sweep.label or '–')} | {_md(_sweep_detail(d.sweep))} |",
        f"| reuse check | {d.reuse_check} | {_tag_detail(d)} |",
        f"| labels | {len(d.labels)} relevant | {_md(', '.join(d.labels) or '–')} |",
        "",
    ]
    return "\n".join(lines + _why_and_findings(d)) + "\n"


def _why_and_findings(d: Decision) -> list[str]:
    lines: list[str] = []
    if d.reasons:
        lines += ["Why:", *[f"- {_md(r)}" for r in d.reasons], ""]
    if d.findings:
        lines += ["| severity | rule | message | fix |", "|---|---|---|---|"]
        lines += [f"| {f.severity.value} | `{f.rule}` | {_md(f.message)} | {_md(f.hint or '')} |"
                  for f in d.findings]
        lines.append("")
    return lines


def explain_text(d: Decision, *, with_catalog: bool = False) -> str:
    """A human explanation of ``d`` (findings are printed by the text reporter)."""
    out: list[str] = []
    out.append("labels: " + (", ".join(d.labels) if d.labels else "(no sweep/policy labels)"))
    for lab in d.labels:
        out.append(f"  {lab:<32} {LABEL_HELP[lab]}")
    out.append(f"event: {d.event}" + (f" ({d.action})" if d.action else ""))
    gate = f"yes, {d.changelog_mode} mode" if d.changelog_gate else "no"
    out.append(f"changelog gate: {gate}")
    out.append(f"policy check: {'yes' if d.policy_check else 'no'}")
    blocked = any(f.severity is Severity.ERROR for f in d.findings)
    if d.sweep.run and not blocked:
        out.append(f"sweep: yes — {_sweep_detail(d.sweep)}")
        if d.sweep.flags():
            out.append(f"  ixtool sweep from-changelog {' '.join(d.sweep.flags())}")
    else:
        out.append(f"sweep: no — {d.sweep.reason}")
        if d.sweep.mode != "none" and not blocked:
            out.append(f"  (when it runs: {_sweep_detail(d.sweep)})")
    out.append(f"reuse check: {d.reuse_check}")
    if with_catalog:
        out.append("")
        out.append("relevant labels:")
        for lab, text in LABEL_HELP.items():
            out.append(f"  {lab:<32} {text}")
    return "\n".join(out) + "\n"
