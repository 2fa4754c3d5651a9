"""Shadow bench of real pull-request heads through ``ixtool ci gate`` (issue 33).

``inferencex-pr-heads-upto-0714.bundle`` holds the heads of InferenceX's pull requests,
merged and unmerged, as ``refs/pull/N/head``, and main as ``main-upto-0715``.  Each head
is replayed as CI judged it at the last push: a checkout of the head, then

    ixtool ci gate --base $(git merge-base main-upto-0715 HEAD) --pr N --format json

with no token and (as root, through ``unshare --net``) no network.  A PR is *merged*
when main has a first-parent commit whose subject ends ``(#N)`` (its squash commit);
for those the record says whether main took the head's change as it was (per file, the
lines the head's diff adds and removes against the lines the squash commit's diff adds
and removes), and with ``--squash-gate`` the gate also replays the squash commit
(``benchmarks/replay_prs.py``'s replay) so each finding on the head can be looked up on
what main took.

Per head the record holds the exit code, the verdict, the stages, every finding (rule,
severity, file, line, message), the CPU seconds of the gate and every process it waited
for (``wait4``: exact whatever else runs), the wall seconds and the 1-minute load when it
started.  Records are appended to ``--out`` (JSON Lines) as each head ends; a rerun with
the same ``--out`` skips the heads already there, so a long run can be stopped and
continued.

An *opened* date is the author date of the PR's oldest commit not on main (the bundle
holds no PR metadata).  Selection: ``--prs N …``, else every head matching
``--merged-only``/``--unmerged-only``, ``--since``/``--until`` (opened dates), then
``--sample N --seed S`` of those.

Every error on a merged head is a lead: ``--judgements FILE`` (JSON,
``benchmarks/pr_heads_judgements.json``) judges it true or false with a one-line reason
and a class.  Keys, most specific first: ``"N/RULE/FILE:LINE"``, ``"N/RULE/FILE"``,
``"N/RULE"``; values ``{"judged": "true"|"false", "class": "D1", "why": "…"}``.  A PO202
naming a script the head does not have is judged true without an entry.  The summary
counts false errors by those judgements and lists unjudged errors as such.

    nice -n 10 python benchmarks/pr_heads.py --merged-only --since 2026-06-01 -j 1 \\
        --out /tmp/heads.jsonl
    python benchmarks/pr_heads.py --report --out /tmp/heads.jsonl \\
        --judgements benchmarks/pr_heads_judgements.json --table /tmp/heads.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_prs as rp  # the replay of merged PRs: git, the gate run, classify

BUNDLE = rp.SHARED / "corpus" / "inferencex-pr-heads-upto-0714.bundle"
MAIN = rp.BRANCH  # main-upto-0715, in the heads bundle too
LOCATED = ("rule", "file", "line")


@dataclass
class Head:
    pr: int
    sha: str
    opened: str  # author date of the oldest commit not on main (YYYY-MM-DD)
    pushed: str  # committer date of the head
    commits: int
    squash: str | None = None  # main's first-parent commit "(#N)"
    merged_on: str | None = None


@dataclass
class HeadRun(rp.Replay):
    """One head's gate run (``sha``: the head, ``date``: the opened date)."""
    merged: bool = False
    squash: str | None = None
    merged_on: str | None = None
    pushed: str = ""
    base: str = ""  # the merge-base with main
    verdict: str | None = None  # "pass" / "fail" from the report's "ok"
    summary: str = ""
    tool_version: str = ""
    network: str = "isolated"
    main: dict[str, Any] | None = None  # merged: what main took (see compare_main)
    squash_gate: dict[str, Any] | None = None  # --squash-gate: the squash commit's gate
    # --trace-cache: the merge-base's whole check that filled it (as the base branch's
    # own run would; not the gate's cost) and the gate's policy info (traces, cache)
    warm: dict[str, Any] | None = None
    policy: dict[str, Any] | None = None


def _git(repo: Path, *args: str) -> str:
    return rp.git(repo, *args)


def clone(work: Path, bundle: Path) -> Path:
    """A bare clone of the bundle with every ``refs/pull/*`` (reused when there)."""
    repo = work / "heads.git"
    if not (repo / "HEAD").exists():
        subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(repo)],
                       env=rp.GIT_ENV, check=True)
        subprocess.run(["git", "-C", str(repo), "fetch", "-q", str(bundle.resolve()),
                        "+refs/pull/*:refs/pull/*"], env=rp.GIT_ENV, check=True)
    return repo


def heads(repo: Path) -> list[Head]:
    """Every PR head of the bundle with its dates and, if merged, its squash commit;
    cached in the clone (the walk costs ~15 s)."""
    cache = repo / "ixtool-heads.json"
    tip = _git(repo, "rev-parse", MAIN).strip()
    if cache.is_file():
        doc = json.loads(cache.read_text())
        if doc.get("main") == tip:
            return [Head(**h) for h in doc["heads"]]
    squashes = {m.pr: m for m in rp.merges(repo)}
    out = []
    refs = _git(repo, "for-each-ref", "--format=%(refname) %(objectname) "
                "%(committerdate:short)", "refs/pull").split("\n")
    for line in filter(None, refs):
        ref, sha, pushed = line.split()
        pr = int(ref.split("/")[2])
        dates = _git(repo, "log", "--format=%ad", "--date=short", f"{MAIN}..{sha}").split()
        m = squashes.get(pr)
        out.append(Head(pr, sha, dates[-1] if dates else pushed, pushed, len(dates),
                        m.sha if m else None, m.date if m else None))
    out.sort(key=lambda h: h.pr)
    cache.write_text(json.dumps({"main": tip, "heads": [asdict(h) for h in out]}))
    return out


def select(all_: list[Head], args: argparse.Namespace) -> list[Head]:
    if args.prs:
        want = set(args.prs)
        return [h for h in all_ if h.pr in want]
    todo = [h for h in all_
            if not (args.merged_only and h.squash is None)
            and not (args.unmerged_only and h.squash is not None)
            and (args.since is None or h.opened >= args.since)
            and (args.until is None or h.opened < args.until)]
    if args.sample:
        todo = sorted(random.Random(args.seed).sample(todo, min(args.sample, len(todo))),
                      key=lambda h: h.pr)
    return todo


def _changed_lines(repo: Path, a: str, b: str) -> dict[str, Counter[str]]:
    """Per file: the lines the diff a..b removes ('-…') and adds ('+…'), as a multiset
    (positions and context left out: main's squash sits on a later base)."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    path = ""
    for line in _git(repo, "diff", "-U0", "--no-color", "--no-renames", a, b).splitlines():
        if line.startswith("diff --git "):
            path = line.split(" b/", 1)[-1]
            out[path]  # a file whose change is a mode or an empty file counts too
        elif line.startswith(("+++", "---")):
            continue
        elif line.startswith(("+", "-")):
            out[path][line] += 1
    return out


def compare_main(repo: Path, h: Head, base: str) -> dict[str, Any]:
    """What main took of a merged head: the files where the squash commit's change is
    not the head's change (lines added/removed), the files only one of them changes."""
    assert h.squash is not None
    mine = _changed_lines(repo, base, h.sha)
    theirs = _changed_lines(repo, f"{h.squash}^1", h.squash)
    differ = sorted(p for p in mine.keys() & theirs.keys() if mine[p] != theirs[p])
    only_head = sorted(mine.keys() - theirs.keys())
    only_main = sorted(theirs.keys() - mine.keys())
    return {"squash": h.squash, "same-change": not (differ or only_head or only_main),
            "files-differ": differ, "only-head": only_head, "only-main": only_main}


def _isolation() -> tuple[list[str], str]:
    """``unshare --net`` as root (the gate must need no network); else nothing."""
    exe = shutil.which("unshare")
    if os.geteuid() == 0 and exe:
        probe = subprocess.run([exe, "--net", "--", "true"], capture_output=True)
        if probe.returncode == 0:
            return [exe, "--net", "--"], "isolated"
    return [], "not isolated (needs root and unshare)"


def _warm(worktree: Path, base: str, ixtool: list[str], cache: Path,
          timeout: float) -> dict[str, Any]:
    """The merge-base's whole check with ``cache`` (what the base branch's run keeps)."""
    _git(worktree, "checkout", "-q", "-f", "--detach", base)
    _git(worktree, "clean", "-q", "-fdx")
    run = rp.run_measured([*ixtool, "policy", "check", "--trace-cache", str(cache),
                           "--format", "json"], worktree, rp.gate_env(), timeout)
    doc, internal = rp.gate_doc(run)
    info = doc.get("info") or {}
    return {"cpu": round(run.cpu, 2), "seconds": round(run.seconds, 2), "internal": internal,
            "cache": info.get("trace-cache"), "read-map": info.get("read-map")}


def run_head(h: Head, repo: Path, worktree: Path, ixtool: list[str], timeout: float,
             squash_gate: bool, cache: Path | None = None) -> HeadRun:
    _git(worktree, "checkout", "-q", "-f", "--detach", h.sha)
    _git(worktree, "clean", "-q", "-fdx")
    base = _git(worktree, "merge-base", MAIN, "HEAD").strip()
    warm = None
    if cache is not None:
        warm = _warm(worktree, base, ixtool, cache, timeout)
        _git(worktree, "checkout", "-q", "-f", "--detach", h.sha)
        _git(worktree, "clean", "-q", "-fdx")
    prefix, network = _isolation()
    load = os.getloadavg()[0]
    cmd = [*prefix, *ixtool, "ci", "gate", "--base", base, "--pr", str(h.pr),
           "--format", "json"]
    if cache is not None:
        cmd += ["--trace-cache", str(cache)]
    run = rp.run_measured(cmd, worktree, rp.gate_env(), timeout)
    rec = HeadRun(h.pr, h.sha, h.opened, run.code, round(run.seconds, 2), round(run.cpu, 2),
                  load=round(load, 2), merged=h.squash is not None, squash=h.squash,
                  merged_on=h.merged_on, pushed=h.pushed, base=base, network=network)
    doc, rec.internal = rp.gate_doc(run)
    info = doc.get("info") or {}
    rec.stages = dict(info.get("stages") or {})
    rec.findings = rp.findings_of(doc)
    rec.verdict = None if "ok" not in doc else ("pass" if doc["ok"] else "fail")
    rec.summary = str(doc.get("summary") or "")
    rec.tool_version = str(doc.get("tool_version") or "")
    rec.warm = warm
    rec.policy = info.get("policy") if isinstance(info.get("policy"), dict) else None
    rp.classify(rec, worktree)
    if h.squash is not None:
        rec.main = compare_main(repo, h, base)
        if squash_gate:
            m = rp.Merge(h.squash, h.pr, h.merged_on or "", "")
            sq = rp.replay_one(m, worktree, ixtool, timeout)
            rec.squash_gate = {"exit": sq.exit, "stages": sq.stages, "seconds": sq.seconds,
                               "cpu": sq.cpu, "internal": sq.internal,
                               "errors": [[f.get(k) for k in LOCATED] for f in sq.findings
                                          if f.get("severity") == "error"]}
    return rec


def load(path: Path) -> dict[int, HeadRun]:
    """The records of an earlier run, the last one per PR (a rerun appends)."""
    out: dict[int, HeadRun] = {}
    if not path.is_file():
        return out
    names = {f.name for f in fields(HeadRun)}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            doc = json.loads(line)
            out[doc["pr"]] = HeadRun(**{k: v for k, v in doc.items() if k in names})
    return out


def run(repo: Path, todo: list[Head], jobs: int, ixtool: list[str], timeout: float,
        out: Path, squash_gate: bool = False, progress: bool = True,
        cache: Path | None = None) -> list[HeadRun]:
    trees = []
    for i in range(jobs):
        wt = repo.parent / f"wt{i}"
        if not wt.exists():
            _git(repo, "worktree", "add", "-q", "--detach", str(wt), MAIN)
        trees.append(wt)
    free = list(trees)
    lock = threading.Lock()
    done: list[HeadRun] = []

    def work(h: Head) -> HeadRun:
        with lock:
            wt = free.pop()
        try:
            rec = run_head(h, repo, wt, ixtool, timeout, squash_gate, cache)
        finally:
            with lock:
                free.append(wt)
        with lock:
            done.append(rec)
            with out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(asdict(rec)) + "\n")
            if progress:
                errs = Counter(f["rule"] for f in rec.findings if f["severity"] == "error")
                print(f"[{len(done)}/{len(todo)}] #{h.pr} {'merged' if rec.merged else 'open'}"
                      f" exit {rec.exit} {rec.seconds:.1f}s cpu {rec.cpu:.1f}s "
                      f"load {rec.load:.1f} {rec.internal or ''} {dict(errs) or ''}",
                      file=sys.stderr, flush=True)
        return rec

    with ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(work, todo))


# --- judgements and the summary -------------------------------------------------------

def judgement(j: dict[str, dict[str, str]], rec: HeadRun,
              f: dict[str, Any]) -> dict[str, str] | None:
    """The judgement of one error of a head: the most specific key that is there."""
    missing = rec.true_findings  # PO202 naming a script the head does not have
    if f.get("rule") == "PO202" and any(all(t.get(k) == f.get(k) for k in f) for t in missing):
        return {"judged": "true", "class": "missing-script",
                "why": "the script the step runs is not in the head"}
    stem = f"{rec.pr}/{f.get('rule')}"
    for key in (f"{stem}/{f.get('file')}:{f.get('line')}", f"{stem}/{f.get('file')}", stem):
        if key in j:
            return j[key]
    return None


def errors(rec: HeadRun) -> list[dict[str, Any]]:
    return [f for f in rec.findings if f.get("severity") == "error"]


def _pct(n: int, d: int) -> float:
    return round(100.0 * n / d, 1) if d else 0.0


def _judged_counts(recs: list[HeadRun], j: dict[str, dict[str, str]]) -> dict[str, Any]:
    false_heads, false_only, classes = [], [], defaultdict(lambda: [0, set()])
    unjudged: list[str] = []
    true_n = false_n = 0
    for r in recs:
        verdicts = []
        for f in errors(r):
            v = judgement(j, r, f)
            if v is None:
                unjudged.append(f"#{r.pr} {f['rule']} {f.get('file')}:{f.get('line')}")
                verdicts.append("unjudged")
                continue
            verdicts.append(v["judged"])
            if v["judged"] == "false":
                false_n += 1
                classes[v.get("class", "?")][0] += 1
                classes[v.get("class", "?")][1].add(r.pr)
            else:
                true_n += 1
        if "false" in verdicts:
            false_heads.append(r.pr)
            if all(v == "false" for v in verdicts):
                false_only.append(r.pr)
    return {"true-errors": true_n, "false-errors": false_n,
            "heads-with-a-false-error": false_heads,
            "heads-with-a-false-error-%": _pct(len(false_heads), len(recs)),
            "heads-failing-on-false-errors-alone": false_only,
            "false-by-class": {c: {"errors": n, "heads": sorted(p)}
                               for c, (n, p) in sorted(classes.items())},
            "unjudged": unjudged}


def summary(recs: list[HeadRun], j: dict[str, dict[str, str]]) -> dict[str, Any]:
    merged = [r for r in recs if r.merged]
    with_error = [r for r in merged if errors(r)]
    cpu = sorted(r.cpu for r in recs)
    wall = sorted(r.seconds for r in recs)
    out: dict[str, Any] = {
        "heads": len(recs), "merged": len(merged), "unmerged": len(recs) - len(merged),
        "internal": {str(r.pr): r.internal for r in recs if r.internal},
        "exit-codes": dict(Counter(str(r.exit) for r in recs)),
        "merged-with-an-error": len(with_error),
        "merged-with-an-error-%": _pct(len(with_error), len(merged)),
        "merged-judged": _judged_counts(merged, j),
        "error-rules-merged": _rules(merged, "error"),
        "error-rules-unmerged": _rules([r for r in recs if not r.merged], "error"),
        "warning-rules": _rules(recs, "warning"),
        "cpu-seconds": rp._spread(cpu), "wall-seconds": rp._spread(wall),
        "cpu-over-60": [r.pr for r in recs if r.cpu > 60],
        "load": {"min": min((r.load for r in recs), default=0.0),
                 "max": max((r.load for r in recs), default=0.0)},
        "main-took-the-head-as-is": sum(1 for r in merged if r.main and r.main["same-change"]),
    }
    sq = [r for r in merged if r.squash_gate]
    if sq:
        out["squash-gate"] = {"replayed": len(sq),
                              "head-errors-also-on-squash": sum(
                                  1 for r in sq for f in errors(r) if _on_squash(r, f)),
                              "head-errors": sum(len(errors(r)) for r in sq)}
    return out


def _rules(recs: Iterable[HeadRun], severity: str) -> dict[str, dict[str, int]]:
    """Per rule: findings and heads."""
    n: Counter[str] = Counter()
    heads_: defaultdict[str, set[int]] = defaultdict(set)
    for r in recs:
        for f in r.findings:
            if f.get("severity") == severity:
                n[f["rule"]] += 1
                heads_[f["rule"]].add(r.pr)
    return {k: {"findings": n[k], "heads": len(heads_[k])} for k in sorted(n)}


def _on_squash(r: HeadRun, f: dict[str, Any]) -> bool | None:
    """Is a head's error also an error of the squash commit's gate (rule and file)?"""
    if not r.squash_gate:
        return None
    return any(e[0] == f.get("rule") and e[1] == f.get("file")
               for e in r.squash_gate["errors"])


def table(recs: list[HeadRun], j: dict[str, dict[str, str]]) -> str:
    """Every error on a merged head: one row per (head, rule, judgement), with the count of
    its errors, the files they are in and the first one's message; judged, class, why."""
    rows: dict[tuple[Any, ...], list[Any]] = {}
    for r in sorted((r for r in recs if r.merged), key=lambda r: r.pr):
        for f in errors(r):
            v = judgement(j, r, f) or {"judged": "not judged", "class": "", "why": ""}
            key = (r.pr, f["rule"], v["judged"], v.get("class"), v.get("why"))
            if key in rows:
                rows[key][0] += 1
                rows[key][4].add(f.get("file"))
                continue
            rows[key] = [1, r, f, v, {f.get("file")}]
    lines = ["| PR | opened | exit | rule | errors | first at | finding (first) | judged | class "
             "| why |", "|---|---|---|---|---|---|---|---|---|---|"]
    for n, r, f, v, files in rows.values():
        msg = " ".join(str(f.get("message", "")).split())
        msg = (msg if len(msg) <= 110 else msg[:107] + "…").replace("|", "\\|")
        where = f"`{f.get('file')}:{f.get('line')}`" + (f" (+{len(files) - 1} files)"
                                                        if len(files) > 1 else "")
        lines.append(f"| #{r.pr} | {r.date} | {r.exit} | {f['rule']} | {n} | {where} | {msg} | "
                     f"{v['judged']} | {v.get('class', '')} | "
                     f"{_short(str(v.get('why', ''))).replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def _short(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def _print_summary(s: dict[str, Any], title: str = "", full: bool = True) -> None:
    jd = s["merged-judged"]
    if full:
        print(json.dumps(s, indent=1))
    print(f"\n{title}heads {s['heads']} (merged {s['merged']}, unmerged {s['unmerged']}); "
          f"internal errors {len(s['internal'])}")
    print(f"merged heads with an error: {s['merged-with-an-error']} "
          f"({s['merged-with-an-error-%']} %); with a false error: "
          f"{len(jd['heads-with-a-false-error'])} ({jd['heads-with-a-false-error-%']} %), "
          f"failing on false errors alone: {len(jd['heads-failing-on-false-errors-alone'])}; "
          f"unjudged errors: {len(jd['unjudged'])}")
    c, w = s["cpu-seconds"], s["wall-seconds"]
    print(f"CPU s p50 {c['median']} p95 {c['p95']} max {c['max']}; wall s p50 {w['median']} "
          f"p95 {w['p95']} max {w['max']}; load {s['load']['min']}–{s['load']['max']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, default=BUNDLE)
    ap.add_argument("--out", type=Path, required=True,
                    help="JSON Lines of the records; appended to, and read to resume")
    ap.add_argument("--prs", type=int, nargs="*", help="exactly these PR numbers")
    ap.add_argument("--merged-only", action="store_true")
    ap.add_argument("--unmerged-only", action="store_true")
    ap.add_argument("--since", help="PRs opened on or after this date (YYYY-MM-DD)")
    ap.add_argument("--until", help="PRs opened before this date (YYYY-MM-DD)")
    ap.add_argument("--sample", type=int, default=0, help="a random sample of N of those")
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per gate run")
    ap.add_argument("--squash-gate", action="store_true",
                    help="merged heads: also replay the squash commit through the gate")
    ap.add_argument("--redo", action="store_true", help="run heads already in --out again")
    ap.add_argument("--trace-cache", type=Path, metavar="DIR",
                    help="before each gate, the merge-base's whole check fills DIR (as "
                    "the base branch's run would; its cost is reported apart), and the "
                    "gate reads it")
    ap.add_argument("--workdir", type=Path, help="keep the clone and worktrees here")
    ap.add_argument("--report", action="store_true", help="no run: the summary of --out")
    ap.add_argument("--judgements", type=Path,
                    default=Path(__file__).with_name("pr_heads_judgements.json"))
    ap.add_argument("--table", type=Path, help="write the Markdown table of merged errors")
    ap.add_argument("--split", metavar="DATE",
                    help="also the figures of heads opened before and from DATE")
    args = ap.parse_args(argv)
    j = json.loads(args.judgements.read_text()) if args.judgements.is_file() else {}
    if not args.report:
        code = _replay(args)
        if code:
            return code
    recs = list(load(args.out).values())
    _print_summary(summary(recs, j))
    if args.split:  # the same figures for heads opened before and from the date
        for title, part in ((f"opened before {args.split}: ", [r for r in recs
                                                                if r.date < args.split]),
                            (f"opened from {args.split}: ", [r for r in recs
                                                              if r.date >= args.split])):
            if part:
                _print_summary(summary(part, j), title, full=False)
    if args.table:
        args.table.write_text(table(recs, j))
    return 0


def _replay(args: argparse.Namespace) -> int:
    if not args.bundle.is_file():
        print(f"no bundle at {args.bundle}", file=sys.stderr)
        return 2
    tmp = None
    if args.workdir is None:
        tmp = tempfile.mkdtemp(prefix="ixtool-pr-heads-")
        work = Path(tmp)
    else:
        work = args.workdir
        work.mkdir(parents=True, exist_ok=True)
    try:
        repo = clone(work, args.bundle)
        todo = select(heads(repo), args)
        seen = {} if args.redo else load(args.out)
        todo = [h for h in todo if not (h.pr in seen and seen[h.pr].sha == h.sha and
                                        (seen[h.pr].squash_gate or not args.squash_gate
                                         or h.squash is None))]
        print(f"{len(todo)} head(s) to replay with {args.jobs} job(s), {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        ixtool = [sys.executable, "-m", "inferencex_tools"]
        run(repo, todo, max(1, args.jobs), ixtool, args.timeout, args.out, args.squash_gate,
            cache=args.trace_cache)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
