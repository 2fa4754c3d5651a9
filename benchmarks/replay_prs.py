"""Replay merged PRs of the full-history bundle through ``ixtool ci gate``.

Each first-parent commit of ``inferencex-full-history-9aeaa75d8.bundle`` whose subject
ends in ``(#N)`` is one merged PR.  The gate sees it as it saw the PR: a checkout of the
merge commit, ``ixtool ci gate --base <sha>^1 --pr N --format json``.  Per PR the
harness records the exit code, the wall time, the gate's stages and its findings (rule,
severity, file, line, message), and classifies the findings that say *ixtool could not
check something* rather than *the recipe violates the policy*:

* **internal**: exit code 2, a traceback, output that is not the JSON report;
* **stage errors** (CI501: a gate stage whose input is unusable, e.g. no
  perf-changelog.yaml yet) are listed apart: the gate says so, it is not a crash;
* **tool-failure**: PO301 (a trace failed), PO310 (the sandbox stopped a trace: a
  limit, the timeout), PO202 naming a script that exists in the merge commit, LA2xx (a
  launch finding that may come from a sandbox artefact).  A PO202 whose script is absent
  at the merge commit is listed and judged true automatically (the script really is
  missing), not counted.

With ``--review`` the same checkout also runs ``ixtool review --base <sha>^1 --pr N
--format json`` (no token: nothing is read from or posted to GitHub), and the record says
whether the review's gate section is the gate's result: the verdict, the exit code, the
stages and the set of (rule, severity, file, line) findings (``review`` below; any
difference is listed under ``disagree``).

Selection: every PR merged on or after ``--since`` (default 2026-07-02) plus a
deterministic sample of ``--older N`` earlier ones (``--seed``), or exactly
``--prs N …``.  Replays run in ``--jobs`` worktrees (1–2 on a shared machine; run it
under ``nice``).  Output: a JSON file of every record (``--out``) and, with
``--table FILE``, the Markdown table of the remaining tool-failure findings; judgements
(true/false and why) come from ``--judgements FILE`` (JSON: "PR/RULE" → text).

    nice -n 15 python benchmarks/replay_prs.py --older 200 --jobs 2 --out /tmp/replay.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("IXTOOL_SHARED", ROOT.parent / "shared"))
BUNDLE = SHARED / "corpus" / "inferencex-full-history-9aeaa75d8.bundle"
BRANCH = "main-upto-0715"
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "replay", "GIT_AUTHOR_EMAIL": "replay@ixtool.invalid",
           "GIT_COMMITTER_NAME": "replay", "GIT_COMMITTER_EMAIL": "replay@ixtool.invalid"}
PR_RX = re.compile(r"\(#(\d+)\)\s*$")
TOOL_RULES = ("PO301", "PO202", "PO310")
SCRIPT_RX = re.compile(r"\b((?:benchmarks|runners)/[\w./+-]+\.(?:sh|py|bash))\b")


@dataclass
class Merge:
    sha: str
    pr: int
    date: str
    subject: str


@dataclass
class Replay:
    pr: int
    sha: str
    date: str
    exit: int
    seconds: float
    cpu: float = 0.0  # CPU seconds of the gate process and its descendants (user + sys)
    stages: dict[str, str] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    internal: str | None = None  # why the run counts as an internal error
    tool_failures: list[dict[str, Any]] = field(default_factory=list)
    stage_errors: list[str] = field(default_factory=list)  # CI501: a stage's input unusable
    true_findings: list[dict[str, Any]] = field(default_factory=list)  # judged mechanically
    load: float = 0.0  # 1-minute load average when the replay started
    review: dict[str, Any] | None = None  # with --review: what `ixtool review` said
    disagree: list[str] = field(default_factory=list)  # review's gate section vs the gate


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True,
                          capture_output=True, text=True).stdout


def merges(repo: Path) -> list[Merge]:
    """Every first-parent commit of the branch with a PR number, oldest first."""
    out = []
    for line in git(repo, "log", "--first-parent", "--reverse", "--date=short",
                    "--format=%H%x09%ad%x09%s", BRANCH).splitlines():
        sha, date, subject = line.split("\t", 2)
        m = PR_RX.search(subject)
        if m:
            out.append(Merge(sha, int(m.group(1)), date, subject))
    return out


def select(all_: list[Merge], since: str, older: int, seed: int,
           prs: list[int] | None) -> list[Merge]:
    if prs:
        want = set(prs)
        return [m for m in all_ if m.pr in want]
    recent = [m for m in all_ if m.date >= since]
    before = [m for m in all_ if m.date < since]
    sample = random.Random(seed).sample(before, min(older, len(before)))
    return sorted(sample, key=lambda m: m.date) + recent


def _exists(repo: Path, sha: str, path: str) -> bool:
    r = subprocess.run(["git", "cat-file", "-e", f"{sha}:{path}"], cwd=repo, env=GIT_ENV,
                       capture_output=True)
    return r.returncode == 0


def classify(rep: Replay, worktree: Path) -> None:
    """Internal errors and tool-failure findings of one replay."""
    if rep.exit not in (0, 1):
        rep.internal = rep.internal or f"exit {rep.exit}"
    rep.stage_errors = [str(f.get("message")) for f in rep.findings if f.get("rule") == "CI501"]
    for f in rep.findings:
        if f.get("severity") != "error":
            continue
        rule = str(f.get("rule"))
        if rule == "PO202":
            names = SCRIPT_RX.findall(f.get("message", ""))
            exists = bool(names) and _exists(worktree, rep.sha, names[0])
            item = {**f, "script": names[0] if names else None, "script-exists": exists}
            (rep.tool_failures if exists or not names else rep.true_findings).append(item)
        elif rule in TOOL_RULES or rule.startswith("LA2"):
            rep.tool_failures.append(dict(f))


def _gate_key(findings: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(f.get("rule"), f.get("severity"), f.get("file"), f.get("line"))
            for f in findings}


def compare_review(rep: Replay, code: int, doc: dict[str, Any]) -> list[str]:
    """Where ``ixtool review``'s gate section (``doc``, exit ``code``) is not the gate's
    result ``rep``: the verdict, the exit codes, the stages, the findings."""
    gate_ok = rep.exit == 0
    out = []
    if code != rep.exit:
        out.append(f"exit: review {code}, gate {rep.exit}")
    if doc.get("verdict") != ("pass" if gate_ok else "fail"):
        out.append(f"verdict: review {doc.get('verdict')!r}, gate exit {rep.exit}")
    section = doc.get("gate")
    if not isinstance(section, dict):
        return [*out, "review has no gate section"]
    if section.get("exit-code") != rep.exit:
        out.append(f"gate exit-code: review {section.get('exit-code')}, gate {rep.exit}")
    if dict(section.get("stages") or {}) != rep.stages:
        out.append(f"stages: review {section.get('stages')}, gate {rep.stages}")
    review = [dict(f) for f in section.get("findings") or []]
    mine, theirs = _gate_key(review), _gate_key(rep.findings)
    said = {k: str(f.get("message", ""))[:400] for fs in (review, rep.findings) for f in fs
            for k in _gate_key([f])}
    for what, keys in (("only in review", mine - theirs), ("only in gate", theirs - mine)):
        if keys:
            shown = "; ".join(f"{r}/{s} {f}:{n} ({said.get((r, s, f, n), '')})"
                              for r, s, f, n in sorted(keys, key=str)[:5])
            out.append(f"{len(keys)} finding(s) {what}: {shown}")
    return out


def review_one(rep: Replay, worktree: Path, ixtool: list[str], timeout: float) -> None:
    """``ixtool review`` on the same checkout and pair, compared with the gate's result."""
    cmd = [*ixtool, "review", "--base", f"{rep.sha}^1", "--pr", str(rep.pr),
           "--format", "json"]
    run = run_measured(cmd, worktree, gate_env(), timeout)
    code, out, err, secs = run.code, run.out, run.err, round(run.seconds, 2)
    try:
        doc = json.loads(out) if out.strip() else {}
    except json.JSONDecodeError:
        doc = {}
    rep.review = {"exit": code, "seconds": secs, "verdict": doc.get("verdict")}
    if not isinstance(doc, dict) or not doc:
        tail = " ".join(err.strip().splitlines()[-2:])[:300]
        rep.disagree = [f"review exit {code}, no JSON report: {tail}"]
        return
    rep.disagree = compare_review(rep, code, doc)


@dataclass
class Measured:
    """One child process run to its end: exit code, output, wall and CPU seconds."""
    code: int
    out: str
    err: str
    seconds: float
    cpu: float  # user + sys of the process and every descendant it waited for


def run_measured(cmd: list[str], cwd: Path, env: dict[str, str],
                 timeout: float) -> Measured:
    """Run ``cmd`` in its own process group and take its CPU from ``wait4`` (exact for
    this child alone, whatever else the harness runs in parallel).  On timeout the group
    gets SIGTERM, then SIGKILL after 5 s; the exit code is then -1."""
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=fo, stderr=fe,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        timer = threading.Timer(timeout, _stop_group, (p.pid,))
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = code = os.waitstatus_to_exitcode(status)  # Popen must not reap it
        secs = time.perf_counter() - t0
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read().decode(errors="replace"), fe.read().decode(errors="replace")
    if timer.finished.is_set() and code < 0:
        code, err = -1, f"{err}\ntimeout after {timeout:.0f} s"
    return Measured(code, out, err, secs, ru.ru_utime + ru.ru_stime)


def _stop_group(pid: int) -> None:
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        time.sleep(wait)


def gate_doc(run: Measured) -> tuple[dict[str, Any], str | None]:
    """The gate's JSON report and, if the run is an internal error, why."""
    internal = None
    try:
        doc = json.loads(run.out) if run.out.strip() else {}
    except json.JSONDecodeError:
        doc, internal = {}, "output is not JSON"
    if not isinstance(doc, dict):
        doc, internal = {}, "output is not a JSON object"
    if "Traceback (most recent call last)" in run.err:
        internal = "traceback: " + run.err.strip().splitlines()[-1][:200]
    elif run.code not in (0, 1):
        internal = f"exit {run.code}: " + " ".join(run.err.strip().splitlines()[-2:])[:300]
    return doc, internal


def findings_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: f.get(k) for k in ("rule", "severity", "file", "line", "message")}
            for f in doc.get("findings") or []]


def gate_env() -> dict[str, str]:
    """The gate as CI runs it on a PR from a fork: no token, no colour."""
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")}
    return {**env, "NO_COLOR": "1", "CI": ""}


def replay_one(m: Merge, worktree: Path, ixtool: list[str], timeout: float,
               review: bool = False) -> Replay:
    git(worktree, "checkout", "-q", "-f", "--detach", m.sha)
    git(worktree, "clean", "-q", "-fdx")
    load = os.getloadavg()[0]
    cmd = [*ixtool, "ci", "gate", "--base", f"{m.sha}^1", "--pr", str(m.pr),
           "--format", "json"]
    run = run_measured(cmd, worktree, gate_env(), timeout)
    rep = Replay(m.pr, m.sha, m.date, run.code, round(run.seconds, 2), round(run.cpu, 2),
                 load=round(load, 2))
    doc, rep.internal = gate_doc(run)
    info = doc.get("info") or {}
    rep.stages = dict(info.get("stages") or {})
    rep.findings = findings_of(doc)
    classify(rep, worktree)
    if review and rep.internal is None:
        review_one(rep, worktree, ixtool, timeout)
    return rep


def run(repo: Path, todo: list[Merge], jobs: int, ixtool: list[str], timeout: float,
        progress: bool = True, log: Path | None = None, review: bool = False
        ) -> list[Replay]:
    trees = [repo]
    for i in range(1, jobs):
        wt = repo.parent / f"wt{i}"
        if not wt.exists():
            git(repo, "worktree", "add", "-q", "--detach", str(wt), BRANCH)
        trees.append(wt)
    free = list(trees)
    lock = threading.Lock()
    done: list[Replay] = []

    def work(m: Merge) -> Replay:
        with lock:
            wt = free.pop()
        try:
            rep = replay_one(m, wt, ixtool, timeout, review)
        finally:
            with lock:
                free.append(wt)
        with lock:
            done.append(rep)
            if log is not None:  # one JSON line per replay as it ends (a partial run counts)
                with log.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(asdict(rep)) + "\n")
            if progress:
                tag = rep.internal or ("tool-failure" if rep.tool_failures else "")
                if rep.review is not None:
                    tag += (f" review {rep.review['seconds']:.1f}s "
                            + ("DISAGREES: " + " | ".join(rep.disagree) if rep.disagree
                               else "agrees"))
                print(f"[{len(done)}/{len(todo)}] #{m.pr} {m.date} exit {rep.exit} "
                      f"{rep.seconds:.1f}s (cpu {rep.cpu:.1f}s, load {rep.load:.1f}) {tag}",
                      file=sys.stderr, flush=True)
        return rep

    with ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(work, todo))


def _spread(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"median": 0.0, "p95": 0.0, "max": 0.0}
    return {"median": round(statistics.median(xs), 2),
            "p95": xs[max(0, round(0.95 * len(xs)) - 1)], "max": xs[-1]}


def summary(reps: list[Replay]) -> dict[str, Any]:
    times = sorted(r.seconds for r in reps)
    p95 = times[max(0, round(0.95 * len(times)) - 1)] if times else 0.0
    tool = [r for r in reps if r.tool_failures]
    return {
        "prs": len(reps),
        "internal": [r.pr for r in reps if r.internal],
        "stage-errors": dict(Counter(e.split(" at ")[0] for r in reps for e in r.stage_errors)),
        "tool-failure-prs": [r.pr for r in tool],
        "tool-failure-share": round(len(tool) / len(reps), 4) if reps else 0.0,
        "true-missing-script-prs": [r.pr for r in reps if r.true_findings],
        "exit-codes": dict(Counter(str(r.exit) for r in reps)),
        "seconds": {"median": round(statistics.median(times), 2) if times else 0.0,
                    "p95": p95, "max": times[-1] if times else 0.0,
                    "over-60": [r.pr for r in reps if r.seconds > 60]},
        "cpu-seconds": _spread(sorted(r.cpu for r in reps)),
        "rules": dict(Counter(f["rule"] for r in reps for f in r.findings
                              if f.get("severity") == "error")),
        "review": _review_summary(reps),
        "load": {"min": min((r.load for r in reps), default=0.0),
                 "max": max((r.load for r in reps), default=0.0)},
    }


def _review_summary(reps: list[Replay]) -> dict[str, Any] | None:
    """With --review: how many PRs the review saw and on which it disagrees with the gate."""
    seen = [r for r in reps if r.review is not None]
    if not seen:
        return None
    return {"prs": len(seen), "agree": sum(1 for r in seen if not r.disagree),
            "disagree": {str(r.pr): r.disagree for r in seen if r.disagree},
            "seconds": _spread(sorted(float(r.review["seconds"]) for r in seen
                                      if r.review is not None))}


def table(reps: list[Replay], judgements: dict[str, str]) -> str:
    """The Markdown table of every remaining tool-failure finding, with its judgement."""
    lines = ["| PR | merged | rule | finding | judged |", "|---|---|---|---|---|"]
    for r in sorted(reps, key=lambda r: r.pr):
        for f in r.true_findings:
            msg = " ".join(str(f.get("message", "")).split())
            msg = (msg if len(msg) <= 220 else msg[:217] + "…").replace("|", "\\|")
            lines.append(f"| #{r.pr} | {r.date} | {f['rule']} | {msg} | true: "
                         f"{f['script']} does not exist at the merge commit |")
        for f in r.tool_failures:
            msg = " ".join(str(f.get("message", "")).split())
            msg = msg if len(msg) <= 220 else msg[:217] + "…"
            msg = msg.replace("|", "\\|")
            verdict = judgements.get(f"{r.pr}/{f['rule']}", "not judged yet")
            lines.append(f"| #{r.pr} | {r.date} | {f['rule']} | {msg} | {verdict} |")
    for r in sorted(reps, key=lambda r: r.pr):
        for why in r.disagree:
            lines.append(f"| #{r.pr} | {r.date} | review ≠ gate | {why.replace('|', '/')} | "
                         f"{judgements.get(f'{r.pr}/review', 'a defect: one verdict path')} |")
    for r in sorted(reps, key=lambda r: r.pr):
        if r.internal:
            lines.append(f"| #{r.pr} | {r.date} | internal | {r.internal} | "
                         f"{judgements.get(f'{r.pr}/internal', 'not judged yet')} |")
    return "\n".join(_collapse(lines)) + "\n"


def _collapse(lines: list[str]) -> list[str]:
    """Identical rows once, with their count (a PO202 repeated for every key and row)."""
    counts = Counter(lines)
    out = []
    for line in dict.fromkeys(lines):
        n = counts[line]
        if n > 1:
            cells = line.split(" | ")
            cells[3] = f"({n}×) {cells[3]}"
            line = " | ".join(cells)
        out.append(line)
    return out


def clone(dest: Path, bundle: Path) -> Path:
    repo = dest / "repo"
    if not (repo / ".git").exists():
        subprocess.run(["git", "clone", "-q", "-b", BRANCH, str(bundle), str(repo)],
                       env=GIT_ENV, check=True)
    return repo


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, default=BUNDLE)
    ap.add_argument("--since", default="2026-07-02", help="replay every PR merged on or after")
    ap.add_argument("--older", type=int, default=200, help="sample of earlier PRs")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--prs", type=int, nargs="*", help="exactly these PR numbers")
    ap.add_argument("--limit", type=int, default=0, help="only the first N selected")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per PR")
    ap.add_argument("--workdir", type=Path, help="reuse this clone (default: a temp dir)")
    ap.add_argument("--out", type=Path, help="write every record here (JSON; and each "
                    "record as it ends to OUT.jsonl)")
    ap.add_argument("--table", type=Path, help="write the tool-failure table (Markdown)")
    ap.add_argument("--judgements", type=Path, help="JSON: 'PR/RULE' → judgement")
    ap.add_argument("--review", action="store_true",
                    help="also run `ixtool review` on each pair and compare its gate section")
    ap.add_argument("--report", type=Path, nargs="+", metavar="JSON",
                    help="no replay: the summary and table of earlier --out files, together")
    args = ap.parse_args(argv)
    if args.report:
        reps = [Replay(**r) for f in args.report
                for r in json.loads(f.read_text())["replays"]]
        print(json.dumps(summary(reps), indent=2))
        if args.table:
            j = json.loads(args.judgements.read_text()) if args.judgements else {}
            args.table.write_text(table(reps, j))
        return 0
    if not args.bundle.is_file():
        print(f"no bundle at {args.bundle}", file=sys.stderr)
        return 2
    ixtool = [sys.executable, "-m", "inferencex_tools"]
    tmp = None
    if args.workdir is None:
        tmp = tempfile.mkdtemp(prefix="ixtool-replay-")
        work = Path(tmp)
    else:
        work = args.workdir
        work.mkdir(parents=True, exist_ok=True)
    try:
        repo = clone(work, args.bundle)
        todo = select(merges(repo), args.since, args.older, args.seed, args.prs)
        if args.limit:
            todo = todo[:args.limit]
        print(f"replaying {len(todo)} PRs with {args.jobs} job(s), {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        log = args.out.with_suffix(".jsonl") if args.out else None
        if log is not None:
            log.unlink(missing_ok=True)
        reps = run(repo, todo, max(1, args.jobs), ixtool, args.timeout, log=log,
                   review=args.review)
        s = summary(reps)
        print(json.dumps(s, indent=2))
        if args.out:
            args.out.write_text(json.dumps({"summary": s, "replays": [asdict(r) for r in reps]},
                                           indent=1) + "\n")
        if args.table:
            j = json.loads(args.judgements.read_text()) if args.judgements else {}
            args.table.write_text(table(reps, j))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
