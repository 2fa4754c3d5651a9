#!/usr/bin/env python3
"""Gate ≡ (full check on the head − full check on the base), on replayed merged PRs.

For each merged PR of the full-history bundle (the squash commit C and its parent P, the
most recent ones first by default, replayed oldest to newest so that one PR's C is the
next one's P), this runs, as the CLI does:

* ``ixtool policy check --trace-cache DIR --format json`` on P and on C (the whole
  check; each commit once), the cache shared by every run, so a trace runs again only
  where what it read changed;
* ``ixtool ci gate --base P --pr N --trace-cache DIR --format json`` on C (the cache
  only read, as in CI), before the whole check of C: the cache then holds what CI's
  would (the traces of P and of earlier trees), not the head's own.

The oracle is the policy errors (rule, file, message) the whole check reports on C and
not on P; a **miss** is one of them the gate does not report.  Merged PRs seldom add an
error, so the rows are compared too: every row whose verdict table entry (script,
launch, server, source, thinking mode, registry row, expected AL, verdict, why not
checked) differs between the whole checks of P and C, or that only C has, must be one
the gate traced; a **row miss** is one it did not.  It prints, per PR and in
total: misses, the gate's extra errors, the CPU seconds of each run (``wait4``: the
process and every descendant), cache hits and misses, and the load.

    IXTOOL_SHARED=../shared python benchmarks/replay_oracle.py --limit 40 \\
        --workdir /tmp/oracle --out oracle.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replay_prs import (  # (a sibling script)
    BUNDLE,
    GIT_ENV,
    Merge,
    clone,
    gate_doc,
    gate_env,
    git,
    merges,
    run_measured,
)

ROW_ID = ("config-key", "entry", "conc", "mode", "family")
ROW_SEEN = ("script", "launch", "server", "source", "thinking", "registry-row", "expected",
            "verdict", "why-unchecked")


def _rows(doc: dict[str, Any]) -> dict[str, str]:
    """Row identity → what the whole check saw of it (JSON strings)."""
    out: dict[str, str] = {}
    for r in (doc.get("info") or {}).get("rows") or []:
        if isinstance(r, dict):
            out[json.dumps([r.get(k) for k in ROW_ID])] = json.dumps(
                [r.get(k) for k in ROW_SEEN], sort_keys=True)
    return out


def _errors(doc: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(str(f.get("rule")), str(f.get("file")), str(f.get("message")))
            for f in doc.get("findings") or []
            if f.get("severity") == "error" and str(f.get("rule", "")).startswith("PO")}


class Runner:
    def __init__(self, repo: Path, ixtool: list[str], cache: Path, timeout: float) -> None:
        self.repo, self.ixtool, self.cache, self.timeout = repo, ixtool, cache, timeout
        self.full: dict[str, dict[str, Any]] = {}

    def checkout(self, sha: str) -> None:
        git(self.repo, "checkout", "-q", "-f", "--detach", sha)
        git(self.repo, "clean", "-q", "-fdx")

    def full_check(self, sha: str) -> dict[str, Any]:
        if sha not in self.full:
            self.checkout(sha)
            run = run_measured([*self.ixtool, "policy", "check", "--trace-cache",
                                str(self.cache), "--format", "json"], self.repo,
                               gate_env(), self.timeout)
            doc, internal = gate_doc(run)
            info = doc.get("info") or {}
            self.full[sha] = {"errors": _errors(doc), "rows": _rows(doc),
                              "cpu": round(run.cpu, 2),
                              "seconds": round(run.seconds, 2), "internal": internal,
                              "cache": info.get("trace-cache"), "traces": info.get("traces"),
                              "read-map": info.get("read-map")}
        return self.full[sha]

    def gate(self, m: Merge) -> dict[str, Any]:
        self.checkout(m.sha)
        run = run_measured([*self.ixtool, "ci", "gate", "--base", f"{m.sha}^1", "--pr",
                            str(m.pr), "--trace-cache", str(self.cache), "--format", "json"],
                           self.repo, gate_env(), self.timeout)
        doc, internal = gate_doc(run)
        info = doc.get("info") or {}
        pol = (info.get("policy") or {}) if isinstance(info.get("policy"), dict) else {}
        return {"errors": _errors(doc), "cpu": round(run.cpu, 2),
                "seconds": round(run.seconds, 2), "internal": internal,
                "cache": pol.get("trace-cache"), "traces": pol.get("traces"),
                "rows": {json.dumps(r) for r in pol.get("rows") or []}}


def replay(r: Runner, m: Merge) -> dict[str, Any]:
    load = os.getloadavg()[0]
    parent = git(r.repo, "rev-parse", f"{m.sha}^1").strip()
    base = r.full_check(parent)
    g = r.gate(m)  # before the head's own traces are in the cache (as in CI)
    head = r.full_check(m.sha)
    oracle = head["errors"] - base["errors"]
    changed = {k for k, v in head["rows"].items() if base["rows"].get(k) != v}
    return {
        "changed_rows": len(changed), "row_misses": sorted(changed - g["rows"]),
        "pr": m.pr, "sha": m.sha, "date": m.date, "load": round(load, 2),
        "misses": sorted(oracle - g["errors"]), "extra": sorted(g["errors"] - oracle),
        "oracle": len(oracle),
        "internal": [x for x in (base["internal"], head["internal"], g["internal"]) if x],
        "full_cpu": [base["cpu"], head["cpu"]], "full_cache": head["cache"],
        "base_map": base["read-map"],
        "gate_cpu": g["cpu"], "gate_seconds": g["seconds"], "gate_traces": g["traces"],
        "gate_cache": g["cache"],
    }


def _p(xs: list[float], q: float) -> float:
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def summary(recs: list[dict[str, Any]]) -> str:
    cpu = [float(x["gate_cpu"]) for x in recs]
    full = [float(c) for x in recs for c in x["full_cpu"]]
    loads = [float(x["load"]) for x in recs]
    return (f"{len(recs)} PRs; misses {sum(len(x['misses']) for x in recs)} "
            f"(on {sum(1 for x in recs if x['misses'])} PRs); oracle errors "
            f"{sum(x['oracle'] for x in recs)}; changed rows "
            f"{sum(x.get('changed_rows', 0) for x in recs)}, row misses "
            f"{sum(len(x.get('row_misses', [])) for x in recs)} (on "
            f"{sum(1 for x in recs if x.get('row_misses'))} PRs); gate extra errors "
            f"{sum(len(x['extra']) for x in recs)}; internal "
            f"{sum(1 for x in recs if x['internal'])}\n"
            f"gate CPU s: p50 {statistics.median(cpu) if cpu else 0:.2f} "
            f"p95 {_p(cpu, 0.95):.2f} max {max(cpu, default=0):.2f}; "
            f"full check CPU s (cached): p50 {statistics.median(full) if full else 0:.2f} "
            f"max {max(full, default=0):.2f}; load {min(loads, default=0):.1f}–"
            f"{max(loads, default=0):.1f}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, default=BUNDLE)
    ap.add_argument("--workdir", type=Path, required=True, help="the clone and the cache")
    ap.add_argument("--limit", type=int, default=300, help="the N most recent merged PRs")
    ap.add_argument("--prs", type=int, nargs="*", help="exactly these PR numbers")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--out", type=Path, help="one JSON record per PR, appended as it ends")
    ap.add_argument("--report", type=Path, help="no replay: the summary of an --out file")
    args = ap.parse_args(argv)
    if args.report:
        recs = [json.loads(x) for x in args.report.read_text().splitlines() if x.strip()]
        sys.stdout.write(summary(recs))
        return 0
    args.workdir.mkdir(parents=True, exist_ok=True)
    repo = clone(args.workdir, args.bundle)
    todo = merges(repo)
    todo = [m for m in todo if m.pr in set(args.prs)] if args.prs else todo[-args.limit:]
    done = set()
    if args.out and args.out.exists():
        done = {json.loads(x)["pr"] for x in args.out.read_text().splitlines() if x.strip()}
    r = Runner(repo, [sys.executable, "-m", "inferencex_tools"], args.workdir / "cache",
               args.timeout)
    recs = []
    os.environ.update({k: v for k, v in GIT_ENV.items() if k.startswith("GIT_")})
    for i, m in enumerate(todo, 1):
        if m.pr in done:
            continue
        t0 = time.monotonic()
        rec = replay(r, m)
        recs.append(rec)
        if args.out:
            with args.out.open("a") as f:
                f.write(json.dumps(rec, default=list) + "\n")
        print(f"[{i}/{len(todo)}] #{m.pr} misses {len(rec['misses'])} row misses "
              f"{len(rec['row_misses'])}/{rec['changed_rows']} extra "
              f"{len(rec['extra'])} gate {rec['gate_cpu']:.1f} CPU-s full "
              f"{rec['full_cpu']} ({time.monotonic() - t0:.0f} s, load {rec['load']})",
              file=sys.stderr, flush=True)
    sys.stdout.write(summary(recs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
