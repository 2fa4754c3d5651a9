"""Trace records → what a row really launches, plus the row ↔ launch findings.

Pure functions: a :class:`~inferencex_tools.launch.trace.Trace` (or any list of
records) and the row in, a :class:`RenderedJob` with findings out.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.launch import rules as R
from inferencex_tools.launch.env import gpu_count
from inferencex_tools.launch.trace import FAKE_JOB_ID, Trace, TraceRecord, relativize
from inferencex_tools.report.findings import Finding

SERVER_TOOLS = ("vllm", "sglang", "trtllm-serve")
SERVER_MODULES = ("vllm.entrypoints", "sglang.launch_server", "tensorrt_llm",
                  "atom.entrypoints")
ALLOC_TOOLS = ("salloc", "sbatch")
# environment noise that is not an export of the launcher
_NOISE = {"PWD", "OLDPWD", "SHLVL", "_", "SLURM_JOB_ID"}

_SHORT = {"-p": "--partition", "-A": "--account", "-N": "--nodes", "-t": "--time",
          "-J": "--job-name", "-G": "--gpus", "-n": "--ntasks", "-c": "--cpus-per-task",
          "-w": "--nodelist", "-o": "--output", "-e": "--error", "-D": "--chdir"}
_VALUED = {"--partition", "--account", "--nodes", "--time", "--job-name", "--gpus",
           "--ntasks", "--cpus-per-task", "--nodelist", "--output", "--error", "--chdir",
           "--gres", "--export", "--jobid", "--gpus-per-node", "--mem", "--ntasks-per-node",
           "--qos", "--reservation", "--container-image", "--container-mounts",
           "--container-workdir", "--container-name", "--mpi", "--exclude", "--constraint"}


def parse_slurm_args(argv: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Slurm client argv → ({long option: [values]}, command).  Flags map to ``[""]``."""
    opts: dict[str, list[str]] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return opts, argv[i + 1:]
        if not a.startswith("-"):
            return opts, argv[i:]
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            opts.setdefault(k, []).append(v)
            i += 1
            continue
        name = _SHORT.get(a, a)
        if name in _VALUED and i + 1 < len(argv):
            opts.setdefault(name, []).append(argv[i + 1])
            i += 2
        else:
            opts.setdefault(name, []).append("")
            i += 1
    return opts, []


def _last(opts: dict[str, list[str]], *names: str) -> str | None:
    for n in names:
        if opts.get(n):
            return opts[n][-1]
    return None


def gpus_requested(opts: dict[str, list[str]]) -> int | None:
    for g in opts.get("--gres", []):
        for part in g.split(","):
            bits = part.split(":")
            if bits[0] == "gpu" and bits[-1].isdigit():
                return int(bits[-1])
    for n in ("--gpus", "--gpus-per-node"):
        v = _last(opts, n)
        if v:
            tail = v.split(":")[-1]
            if tail.isdigit():
                return int(tail)
    return None


@dataclass
class Allocation:
    tool: str
    argv: list[str]
    partition: str | None = None
    account: str | None = None
    nodes: int | None = None
    gpus: int | None = None
    gres: str | None = None
    time: str | None = None
    exclusive: bool = False
    job_name: str | None = None
    container_image: str | None = None
    container_mounts: list[str] = field(default_factory=list)
    container_workdir: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool, "argv": self.argv, "partition": self.partition,
            "account": self.account, "nodes": self.nodes, "gpus": self.gpus,
            "gres": self.gres, "time": self.time, "exclusive": self.exclusive,
            "job-name": self.job_name, "container-image": self.container_image,
            "container-mounts": self.container_mounts,
            "container-workdir": self.container_workdir,
        }


@dataclass
class ServerLaunch:
    tool: str
    argv: list[str]
    env: dict[str, str]  # variables the script set for the server (vs the job step)

    @property
    def command(self) -> list[str]:
        return [self.tool, *self.argv]

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "argv": self.argv, "command": shlex.join(self.command),
                "env": self.env}


@dataclass
class RenderedJob:
    row: dict[str, Any]
    config_key: str | None
    arm: int | None
    eval_only: bool
    node: str | None
    launcher: str | None
    script: str | None
    workflow_env: dict[str, str] = field(default_factory=dict)
    launcher_env: dict[str, str] = field(default_factory=dict)
    allocation: Allocation | None = None
    step: list[str] | None = None
    server: ServerLaunch | None = None
    findings: list[Finding] = field(default_factory=list)
    trace_exit: int | None = None

    @property
    def name(self) -> str:
        return str(self.row.get("exp-name", "?"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "exp-name": self.name, "config-key": self.config_key, "arm": self.arm,
            "conc": self.row.get("conc"), "mode": "eval" if self.eval_only else "throughput",
            "node": self.node, "launcher": self.launcher, "script": self.script,
            "workflow-env": self.workflow_env, "launcher-env": self.launcher_env,
            "allocation": self.allocation.to_dict() if self.allocation else None,
            "step": self.step,
            "server": self.server.to_dict() if self.server else None,
            "row": self.row,
            "findings": [f.to_dict() for f in self.findings],
        }


def _is_server(rec: TraceRecord) -> bool:
    if rec.tool in SERVER_TOOLS:
        return rec.tool != "vllm" or (bool(rec.argv) and rec.argv[0] == "serve")
    if rec.kind == "python-module":
        args = rec.argv
        if "-m" in args:
            mod = args[args.index("-m") + 1] if args.index("-m") + 1 < len(args) else ""
            return mod.startswith(SERVER_MODULES)
    if rec.tool == "mpirun":
        return any(a in SERVER_TOOLS for a in rec.argv)
    return False


def _step_env(rec: TraceRecord) -> dict[str, str]:
    opts, _ = parse_slurm_args(rec.argv)
    env = dict(rec.env)
    for val in opts.get("--export", []):
        for p in val.split(","):
            if "=" in p:
                k, v = p.split("=", 1)
                env[k] = v
    return env


def _runs_script(rec: TraceRecord, script: str | None) -> bool:
    _, cmd = parse_slurm_args(rec.argv)
    if not cmd:
        return False
    if script is None:
        return any(c.endswith(".sh") and "benchmarks/" in c for c in cmd)
    return any(c == script or c.endswith("/" + script) or c.endswith(script) for c in cmd)


def analyse(trace: Trace, *, row: dict[str, Any], script: str | None, launcher: str,
            workflow_env: dict[str, str]) -> tuple[
        Allocation | None, list[str] | None, ServerLaunch | None, dict[str, str],
        list[Finding]]:
    """Allocation, job step, server launch, launcher exports and findings of one trace."""
    ws = trace.workspace
    findings: list[Finding] = []

    def rel(s: str) -> str:
        return relativize(s, ws)

    srun = [r for r in trace.records if r.tool == "srun"]
    step_rec = next((r for r in srun if _runs_script(r, script)), None)
    alloc_rec = next((r for r in trace.records if r.tool in ALLOC_TOOLS), None)
    if alloc_rec is None and step_rec is not None:
        sopts, _ = parse_slurm_args(step_rec.argv)
        if "--jobid" not in sopts:
            alloc_rec = step_rec  # srun allocates by itself
    alloc: Allocation | None = None
    if alloc_rec is None:
        findings.append(R.NO_ALLOCATION.at(launcher, None, None,
                                           "no salloc/sbatch/srun allocation was recorded"))
    else:
        opts, _ = parse_slurm_args(alloc_rec.argv)
        nodes = _last(opts, "--nodes")
        alloc = Allocation(
            tool=alloc_rec.tool, argv=[rel(a) for a in alloc_rec.argv],
            partition=_last(opts, "--partition"), account=_last(opts, "--account"),
            nodes=int(nodes.split("-")[0]) if nodes and nodes.split("-")[0].isdigit() else 1,
            gpus=gpus_requested(opts), gres=_last(opts, "--gres"), time=_last(opts, "--time"),
            exclusive="--exclusive" in opts, job_name=_last(opts, "--job-name"),
        )
    step: list[str] | None = None
    if step_rec is None:
        findings.append(R.NO_STEP.at(launcher, None, None,
                                     f"no srun step ran {script or 'a benchmark script'}"))
    else:
        step = ["srun", *[rel(a) for a in step_rec.argv]]
        sopts, _ = parse_slurm_args(step_rec.argv)
        if alloc is not None:
            alloc.container_image = _last(sopts, "--container-image")
            mounts = _last(sopts, "--container-mounts")
            alloc.container_mounts = [rel(m) for m in mounts.split(",")] if mounts else []
            alloc.container_workdir = _last(sopts, "--container-workdir")
    launcher_env: dict[str, str] = {}
    if step_rec is not None:
        senv = _step_env(step_rec)
        for k, v in sorted(senv.items()):
            if k in _NOISE or trace.initial_env.get(k) == v:
                continue
            launcher_env[k] = rel(v)
        for k, v in workflow_env.items():
            if k in ("GITHUB_WORKSPACE", "PATH", "HOME"):
                continue
            if senv.get(k) != v and k not in launcher_env:
                findings.append(R.VAR_DROPPED.at(
                    launcher, None, None,
                    f"{k}={v!r} is exported by the workflow but the job step sees "
                    f"{senv.get(k)!r}"))
    server: ServerLaunch | None = None
    srv = next((r for r in trace.records if _is_server(r)), None)
    if srv is None:
        findings.append(R.NO_SERVER.at(script or launcher, None, None,
                                       "no server launch was recorded"))
    else:
        base = dict(trace.initial_env)
        maps: list[tuple[str, str]] = []
        if step_rec is not None:
            base = _step_env(step_rec)
            for spec in parse_slurm_args(step_rec.argv)[0].get("--container-mounts", []):
                for m in spec.split(","):
                    bits = m.split(":")
                    if len(bits) >= 2 and bits[0] and bits[1]:
                        maps.append((bits[0].rstrip("/"), bits[1].rstrip("/")))

        def seen(v: str) -> str:
            for host, cont in maps:
                v = v.replace(host, cont)
            return v

        extra = {k: rel(v) for k, v in sorted(srv.env.items())
                 if k not in _NOISE and seen(base.get(k, "\0")) != v and k != "PATH"}
        server = ServerLaunch(srv.tool, [rel(a) for a in srv.argv], extra)
    if alloc is not None:
        for piece, value in (("partition", alloc.partition), ("time limit", alloc.time),
                             ("container image", alloc.container_image)):
            if not value:
                findings.append(R.ALLOC_UNRESOLVED.at(
                    launcher, None, None, f"the allocation states no {piece}"))
        want = gpu_count(row)
        if alloc.gpus is None:
            findings.append(R.ALLOC_UNRESOLVED.at(launcher, None, None,
                                                  "the allocation requests no GPUs"))
        elif alloc.gpus != want:
            findings.append(R.GPU_MISMATCH.at(
                launcher, None, None,
                f"allocation requests {alloc.gpus} GPU(s), the row needs {want} (tp·pp·pcp)"))
    if server is not None:
        findings.extend(check_server(server, row, script or launcher))
    if trace.timed_out:
        findings.append(R.TRACE_FAILED.at(launcher, None, None,
                                          "tracing timed out; last: " + _last_line(trace)))
    elif trace.exit_code != 0:
        findings.append(R.TRACE_FAILED.at(
            launcher, None, None,
            f"exit {trace.exit_code}; last recorded: {_last_line(trace)}; stderr: "
            + rel(trace.stderr.strip().splitlines()[-1] if trace.stderr.strip() else "")))
    return alloc, step, server, launcher_env, findings


def _last_line(trace: Trace) -> str:
    return trace.records[-1].line if trace.records else "(nothing)"


def flag_values(argv: list[str], *names: str) -> list[str]:
    """Values of ``--name value`` / ``--name=value`` occurrences in argv."""
    out: list[str] = []
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif a.startswith(n + "="):
                out.append(a.split("=", 1)[1])
    return out


def json_flag(argv: list[str], *names: str) -> dict[str, Any] | None:
    vals = flag_values(argv, *names)
    if not vals:
        return None
    try:
        v = json.loads(vals[-1])
    except json.JSONDecodeError:
        return None
    return v if isinstance(v, dict) else None


def check_server(server: ServerLaunch, row: dict[str, Any], where: str) -> list[Finding]:
    """Row ↔ server agreement (vLLM flags; other engines: what is engine-neutral)."""
    out: list[Finding] = []
    argv = server.argv
    if server.tool != "vllm":
        return out
    tp = flag_values(argv, "--tensor-parallel-size", "-tp")
    if str(row.get("tp")) not in tp[-1:]:
        out.append(R.TP_MISMATCH.at(where, None, None,
                                    f"server TP {tp[-1] if tp else 'unset'}, row tp "
                                    f"{row.get('tp')}"))
    ep = int(row.get("ep", 1) or 1)
    has_ep = "--enable-expert-parallel" in argv or "-ep" in argv
    if (ep > 1) != has_ep:
        out.append(R.EP_MISMATCH.at(
            where, None, None,
            f"row ep {ep} but --enable-expert-parallel is {'set' if has_ep else 'absent'}"))
    kv = json_flag(argv, "--kv-transfer-config")
    dram = row.get("kv-offloading") == "dram"
    if dram != (kv is not None):
        out.append(R.KV_MISMATCH.at(
            where, None, None,
            f"row kv-offloading {row.get('kv-offloading')!r} but the server "
            f"{'has' if kv is not None else 'has no'} --kv-transfer-config"))
    spec = row.get("spec-decoding", "none")
    if spec not in (None, "none") and json_flag(argv, "--speculative-config") is None:
        out.append(R.SPEC_MISSING.at(where, None, None,
                                     f"row spec-decoding {spec!r}, no --speculative-config"))
    seqs = flag_values(argv, "--max-num-seqs")
    conc = row.get("conc")
    if isinstance(conc, int) and seqs and seqs[-1].isdigit() and int(seqs[-1]) < conc:
        out.append(R.CONC_MISMATCH.at(where, None, None,
                                      f"--max-num-seqs {seqs[-1]} < conc {conc}"))
    return out


def format_command(cmd: list[str], indent: str = "  ") -> str:
    """A shell command, one option (with its value) per continuation line."""
    parts: list[str] = []
    i = 0
    head: list[str] = []
    while i < len(cmd) and not cmd[i].startswith("-"):
        head.append(cmd[i])
        i += 1
    parts.append(shlex.join(head))
    while i < len(cmd):
        a = cmd[i]
        if "=" not in a and i + 1 < len(cmd) and not cmd[i + 1].startswith("--"):
            parts.append(shlex.join([a, cmd[i + 1]]))
            i += 2
        else:
            parts.append(shlex.quote(a))
            i += 1
    return (" \\\n" + indent + "    ").join(parts)


def format_job_text(job: RenderedJob) -> str:
    """The human view of one rendered job."""
    lines: list[str] = []
    mode = "eval" if job.eval_only else "throughput"
    origin = ", ".join(x for x in (
        job.config_key, f"arm {job.arm}" if job.arm else None,
        f"conc {job.row.get('conc')}", mode) if x)
    lines.append(f"== {job.name}  ({origin})")
    lines.append(f"runner:    {job.row.get('runner')} → node {job.node or '?'}")
    lines.append(f"launcher:  {job.launcher or '(unresolved)'}")
    lines.append(f"script:    {job.script or '(unresolved)'}")
    a = job.allocation
    if a is not None:
        lines.append(f"slurm allocation ({a.tool}):")
        for label, val in (
            ("partition", a.partition), ("account", a.account), ("nodes", a.nodes),
            ("gpus", f"{a.gpus} ({a.gres})" if a.gres else a.gpus), ("time", a.time),
            ("exclusive", "yes" if a.exclusive else "no"), ("job name", a.job_name),
            ("image", a.container_image), ("mounts", ", ".join(a.container_mounts) or None),
            ("workdir", a.container_workdir),
        ):
            lines.append(f"  {label:<10} {val if val not in (None, '') else '(not stated)'}")
        lines.append(f"  {'command':<10} {shlex.join([a.tool, *a.argv])}")
    if job.step and (a is None or job.step[1:] != a.argv):
        lines.append("job step:")
        lines.append("  " + shlex.join(job.step))
    lines.append("environment exported by the workflow:")
    lines.extend(f"  {k}={shlex.quote(v)}" for k, v in job.workflow_env.items())
    if job.launcher_env:
        lines.append("environment added by the launcher (job step):")
        lines.extend(f"  {k}={shlex.quote(v)}" for k, v in job.launcher_env.items())
    if job.server is not None:
        lines.append("server command:")
        lines.append("  " + format_command(job.server.command))
        if job.server.env:
            lines.append("server environment set by the script:")
            lines.extend(f"  {k}={shlex.quote(v)}" for k, v in job.server.env.items())
    for f in job.findings:
        lines.append(f"  {f.severity.value} [{f.rule}] {f.message}")
    return "\n".join(lines) + "\n"


__all__ = ["FAKE_JOB_ID", "Allocation", "RenderedJob", "ServerLaunch", "analyse",
           "format_job_text"]
