"""``ixtool policy check`` orchestration: read configs, resolve, trace, judge, aggregate."""

from __future__ import annotations

import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferencex_tools.errors import InputError, UsageError, YamlError
from inferencex_tools.io.files import read_bytes
from inferencex_tools.io.layout import master_files
from inferencex_tools.io.yamlio import load_safe
from inferencex_tools.policy import rules as R
from inferencex_tools.policy.check import RowOutcome, Verdict, evaluate
from inferencex_tools.policy.resolve import (
    MultiPoint,
    Row,
    enumerate_rows,
    launcher_families,
    multinode_points,
    resolve_script,
)
from inferencex_tools.policy.static import extract
from inferencex_tools.policy.store import CurveStore, open_store
from inferencex_tools.policy.trace import TraceResult, namespaces_available, trace_script
from inferencex_tools.report.findings import Finding, Result


@dataclass
class CheckRequest:
    root: Path
    configs: list[Path] | None = None
    config_keys: list[str] | None = None
    registry: Path | None = None
    curves_dir: Path | None = None
    timeout: float = 60.0
    jobs: int = 2
    all_evals: bool = False
    isolate: bool | None = None


def _rel(p: Path, root: Path) -> str:
    try:
        return p.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(p)


def _runners(root: Path) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    p = root / "configs" / "runners.yaml"
    if not p.is_file():
        return None, None
    try:
        doc = load_safe(read_bytes(p), source=str(p))
    except YamlError:
        return None, None
    if not isinstance(doc, dict):
        return None, None
    return doc.get("labels"), doc.get("hardware")


def run_check(req: CheckRequest) -> Result:
    started = time.monotonic()
    root = req.root
    if not root.is_dir():
        raise InputError(f"{root}: not a directory", hint="pass --root REPO")
    store = open_store(req.registry, req.curves_dir, root=root)
    result = Result("policy check")
    result.extend(store.findings)
    result.extend(store.check_rows(require_files=False))
    configs = req.configs or master_files(root)
    if not configs:
        raise InputError(f"no master configs under {root / 'configs'}",
                         hint="pass --configs FILE…")
    labels, hardware = _runners(root)
    rows: list[Row] = []
    matched_any = False
    multi: list[MultiPoint] = []
    sources: dict[str, str] = {}
    for cfg in configs:
        shown = _rel(cfg, root)
        raw = read_bytes(cfg)
        try:
            doc = load_safe(raw, source=shown)
        except YamlError as exc:
            result.add(R.CONFIG_INVALID.at(shown, exc.line, exc.column, exc.detail))
            continue
        if not isinstance(doc, dict):
            result.add(R.CONFIG_INVALID.at(shown, 1, 1, "root is not a mapping of config keys"))
            continue
        text = raw.decode("utf-8", errors="replace")
        sources[shown] = text
        rows.extend(enumerate_rows(shown, doc, text, globs=req.config_keys,
                                   all_evals=req.all_evals, hardware=hardware))
        result.checked.append(shown)
        points = multinode_points(shown, doc, text, globs=req.config_keys)
        if points:
            matched_any = True
        multi.extend(points)
    if req.config_keys and not rows and not matched_any:
        raise UsageError("no spec-decoding config key matches "
                         + " ".join(repr(g) for g in req.config_keys))

    jobs: list[tuple[Row, str, str]] = []
    unresolved: set[tuple[str, str, str]] = set()
    for row in rows:
        runner = str(row.config.get("runner"))
        families = launcher_families(root, runner, labels)
        if not families:
            k = ("launcher", row.key, runner)
            if k not in unresolved:
                unresolved.add(k)
                result.add(R.NO_LAUNCHER.at(
                    row.config_file, row.key_line, 1,
                    f"{row.key}: no runners/launch_<family>.sh for runner '{runner}'"))
            continue
        for fam in families:
            res = resolve_script(root, row, fam)
            if res.script is None:
                k = ("script", row.key, f"{fam}:{res.why}")
                if k not in unresolved:
                    unresolved.add(k)
                    rule = R.NO_LAUNCHER if res.launcher is None else R.NO_SCRIPT
                    result.add(rule.at(row.config_file, row.key_line, 1,
                                       f"{row.key} [{row.entry_label()}] on {fam}: {res.why}"))
                continue
            jobs.append((row, res.script, fam))

    isolate = namespaces_available() if req.isolate is None else req.isolate
    if jobs and not isolate:
        result.add(R.SANDBOX_WEAK.at(jobs[0][1], None, None,
                                     f"{len(jobs)} trace(s) ran without network/filesystem "
                                     "isolation (user namespaces unavailable)"))

    def one(job: tuple[Row, str, str]) -> RowOutcome:
        row, script, fam = job
        text = (root / script).read_text(encoding="utf-8", errors="replace")
        sources.setdefault(script, text)
        tr = trace_script(root, script, row.env(f"{fam}_0"), timeout=req.timeout,
                          isolate=isolate)
        return evaluate(row, script, text, tr, store)

    with ThreadPoolExecutor(max_workers=max(1, req.jobs)) as pool:
        outcomes = list(pool.map(one, jobs))

    static = _static(root, multi, store, sources, result)
    result.info["traces"] = len(outcomes)
    result.info["static"] = len(static)
    outcomes.extend(static)
    result.extend(aggregate(outcomes))
    result.info["rows"] = [row_summary(o) for o in outcomes]
    result.info["seconds"] = round(time.monotonic() - started, 2)
    result.info["isolation"] = "namespaces" if isolate else "basic"
    result.info["registry"] = {"file": store.registry.file, "version": store.registry.version}
    result.info["sources"] = sources
    return result


def row_summary(o: RowOutcome) -> dict[str, Any]:
    f = o.facts[0] if o.facts else None
    return {
        "config-key": o.row.key,
        "entry": o.row.entry_label(),
        "conc": o.row.conc,
        "mode": "eval" if o.row.eval_only else "throughput",
        "script": o.script,
        "launch": f.summary() if f else "no server",
        "source": (o.trace.isolation if o.trace else None),
        "thinking": o.thinking,
        "registry-row": o.registry_row,
        "expected": o.expected,
        "trace-seconds": round(o.trace.seconds, 2) if o.trace else None,
        "verdict": "ok" if not any(v.rule.severity.value == "error" for v in o.verdicts)
        else "FAIL " + ",".join(sorted({v.rule.id for v in o.verdicts})),
    }


def aggregate(outcomes: list[RowOutcome]) -> list[Finding]:
    """One finding per (rule, place, message), naming every row it applies to."""
    groups: dict[tuple[str, str, int | None, str], tuple[Verdict, dict[str, list[int]]]] = {}
    for o in outcomes:
        label = f"{o.row.key} [{o.row.entry_label()} {'eval' if o.row.eval_only else 'tput'}]"
        for v in o.verdicts:
            k = (v.rule.id, v.file, v.line, v.message)
            if k not in groups:
                groups[k] = (v, defaultdict(list))
            concs = groups[k][1][label]
            if o.row.conc not in concs:
                concs.append(o.row.conc)
    out: list[Finding] = []
    for v, rows in groups.values():
        where = "; ".join(f"{lbl} conc {','.join(map(str, cs))}" for lbl, cs in rows.items())
        out.append(v.rule.at(v.file, v.line, 1 if v.line else None,
                             f"{v.message} — {where}", hint=v.hint))
    return out


def render_rows(rows: list[dict[str, Any]]) -> str:
    """The verdict table (text) for ``--rows``."""
    out = []
    for r in rows:
        out.append(f"{r['verdict']:<10} {r['config-key']} [{r['entry']} conc={r['conc']} "
                   f"{r['mode']}] {r['script']} ({r['source']}): {r['launch']}"
                   + (f"; {r['thinking']}; {r['registry-row']} golden {r['expected']}"
                      if r['expected'] else ""))
    return "\n".join(out) + ("\n" if out else "")


def _static(root: Path, points: list[MultiPoint], store: CurveStore,
            sources: dict[str, str], result: Result) -> list[RowOutcome]:
    """Multi-node points: recipe YAML read statically (PO304), or PO204 when missing."""
    out: list[RowOutcome] = []
    noted: set[str] = set()
    for p in points:
        row = p.row
        path = root / p.recipe
        if not path.is_file():
            out.append(RowOutcome(row, p.recipe, [], [Verdict(
                R.NO_RECIPE, row.config_file, row.key_line,
                f"{p.recipe} is not vendored in this repository (external srt-slurm ref?)")]))
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        sources.setdefault(p.recipe, text)
        launch = extract(text, p.recipe, selector=p.selector,
                         framework=str(row.config.get("framework")),
                         runner=str(row.config.get("runner")), settings=p.settings,
                         eval_only=row.eval_only)
        if p.recipe not in noted:
            noted.add(p.recipe)
            result.add(R.STATIC_ONLY.at(p.recipe, None, None,
                                        f"{row.key}: {'; '.join(launch.notes) or p.recipe}"))
        if launch.record is None:
            out.append(RowOutcome(row, p.recipe, [], [Verdict(
                R.NO_SERVER, p.recipe, None, launch.error or "no worker found")]))
            continue
        tr = TraceResult(script=p.recipe, env={}, root="", isolation="static", returncode=0,
                         timed_out=False, seconds=0.0, records=[launch.record])
        out.append(evaluate(row, p.recipe, text, tr, store))
    return out


def trace_report(root: Path, script: str, assignments: list[str], *,
                 timeout: float) -> dict[str, Any]:
    """``ixtool policy trace``: one script, the given variables, what it launched."""
    from inferencex_tools.policy.engines import engine_of, facts_of

    if not (root / script).is_file():
        raise InputError(f"{root / script}: no such script", hint="SCRIPT is relative to --root")
    env: dict[str, str] = {}
    for a in assignments:
        name, eq, value = a.partition("=")
        if not eq or not name.isidentifier():
            raise UsageError(f"--set expects VAR=VALUE, got {a!r}")
        env[name] = value
    tr = trace_script(root, script, env, timeout=timeout)
    launches = []
    for rec in tr.records:
        eng = engine_of(rec)
        item: dict[str, Any] = {"tool": rec.tool, "argv": list(rec.argv)}
        extra = {k: v for k, v in rec.env.items()
                 if k not in env and k not in ("PATH", "HOME", "PWD", "LANG", "TMPDIR")}
        if extra:
            item["env-set-by-script"] = extra
        if eng:
            f = facts_of(rec, eng)
            item["engine"] = eng
            item["facts"] = {"summary": f.summary(), "method": f.method, "draft": f.draft,
                             "k": f.k, "synthetic": f.synthetic, "al": f.al, "raw": f.raw,
                             "issues": f.issues}
        launches.append(item)
    return {"script": script, "isolation": tr.isolation, "returncode": tr.returncode,
            "timed_out": tr.timed_out, "seconds": round(tr.seconds, 2),
            "last_line": tr.last_line, "events": tr.events, "records": launches,
            "stderr_tail": tr.stderr_tail[-2000:]}


def run_curves(root: Path, registry: Path | None, curves_dir: Path | None) -> Result:
    """``ixtool policy curves``: every curve file validates; registry and files agree."""
    store = open_store(registry, curves_dir, root=root)
    result = Result("policy curves")
    result.extend(store.findings)
    files = sorted(p for p in store.curves_dir.glob("*.yaml") if p.name != "registry.yaml")
    for p in files:
        store.curve(p.name)  # loads and validates; findings collect in the store
    result.extend(f for f in store.findings if f not in result.findings)
    result.extend(store.check_rows(require_files=False))
    named = {e.curve for e in store.registry.entries}
    for p in files:
        if p.name not in named:
            shown = f"{store.display_dir}/{p.name}" if store.display_dir else p.name
            result.add(R.REGISTRY_INVALID.at(
                store.registry.file, None, None,
                f"the registry does not cover {shown}: add a row naming it "
                "(model-prefix, method, draft, curve, model-key)"))
    result.checked = [store.registry.file, *(p.name for p in files)]
    result.info["registry"] = {"file": store.registry.file, "version": store.registry.version,
                               "rows": len(store.registry.entries)}
    return result
