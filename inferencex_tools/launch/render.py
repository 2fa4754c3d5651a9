"""Trace records → what a row really launches, plus the row ↔ launch findings.

Pure functions: a :class:`~inferencex_tools.launch.stages.LaunchTrace` and the row
in, the allocation, job step, server launch and findings out.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.launch.env import gpu_count
from inferencex_tools.launch.rules import (
    ALLOC_UNRESOLVED,
    CONC_MISMATCH,
    EP_MISMATCH,
    GPU_MISMATCH,
    IMAGE_MISMATCH,
    KV_MISMATCH,
    NO_ALLOCATION,
    NO_SERVER,
    NO_STEP,
    OTHER_SCRIPT,
    SPEC_MISSING,
    STUB_OUTPUT,
    TP_MISMATCH,
    TRACE_FAILED,
    VAR_DROPPED,
)
from inferencex_tools.launch.slurmargs import gpus_requested, last_value, parse_slurm_args
from inferencex_tools.launch.stages import CONTAINER_TOOLS, LaunchTrace, args_of
from inferencex_tools.report.findings import Finding
from inferencex_tools.safetext import bounded_json

ALLOC_TOOLS = ("salloc", "sbatch")
SIDECAR_TOOLS = ("mooncake_master", "mooncake_client", "etcd", "nats-server", "vllm-router")
SANDBOX_ENV = frozenset({"PATH", "HOME", "PWD", "OLDPWD", "TMPDIR", "LANG", "SHLVL", "_"})

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
        return [*self.tool.split(" "), *self.argv]  # "python3 -m sglang.launch_server"

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
    env_source: str = "built-in"  # the workflow template the environment was derived from
    launcher_env: dict[str, str] = field(default_factory=dict)
    allocation: Allocation | None = None
    step: list[str] | None = None
    server: ServerLaunch | None = None
    sidecars: list[list[str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # multi-node: what the launcher submits (srtctl apply -f RECIPE, sbatch …) and where
    submission: list[str] | None = None
    submission_cwd: str | None = None
    recipe: str | None = None  # the submitted recipe as a repository path, when vendored

    @property
    def name(self) -> str:
        return str(self.row.get("exp-name", "?"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "exp-name": self.name, "config-key": self.config_key, "arm": self.arm,
            "conc": self.row.get("conc"), "mode": "eval" if self.eval_only else "throughput",
            "node": self.node, "launcher": self.launcher, "script": self.script,
            "workflow-env": self.workflow_env, "env-source": self.env_source,
            "launcher-env": self.launcher_env,
            "allocation": self.allocation.to_dict() if self.allocation else None,
            "step": self.step,
            "server": self.server.to_dict() if self.server else None,
            "sidecars": [shlex.join(c) for c in self.sidecars],
            "submission": shlex.join(self.submission) if self.submission else None,
            "submission-cwd": self.submission_cwd,
            "recipe": self.recipe,
            "row": self.row,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class Inspection:
    allocation: Allocation | None = None
    step: list[str] | None = None
    server: ServerLaunch | None = None
    launcher_env: dict[str, str] = field(default_factory=dict)
    sidecars: list[list[str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def inspect_launch(lt: LaunchTrace, *, row: dict[str, Any], script: str | None,
                   launcher: str, workflow_env: dict[str, str],
                   reads: frozenset[str] | None = None) -> Inspection:
    """Allocation, job step, server launch, launcher exports and findings of one launch.

    ``reads``: the variables the step's script reads, when the step gets an explicit
    list of variables (a workflow variable the launcher leaves out matters only if the
    script reads it); None: every variable counts."""
    out = Inspection()
    out.allocation = _allocation(lt, launcher, out.findings)
    if lt.step_record is None:
        out.findings.append(NO_STEP.at(launcher, None, None,
                                         f"no srun step ran {script or 'a benchmark script'}"))
    else:
        _job_step(lt, out, launcher, workflow_env, reads)
    if lt.step_script is not None and script is not None and lt.step_script != script:
        out.findings.append(OTHER_SCRIPT.at(
            launcher, None, None, f"the job step runs {lt.step_script}, the row resolves to "
            f"{script}"))
    _script_processes(lt, out)
    if lt.step_record is not None and lt.script is not None and out.server is None:
        out.findings.append(NO_SERVER.at(script or launcher, None, None,
                                           "no server launch was recorded"))
    if out.allocation is not None:
        out.findings.extend(_allocation_checks(out.allocation, row, launcher,
                                               _stubbed_image(lt)))
    if out.server is not None:
        out.findings.extend(check_server(out.server, row, script or launcher))
    out.findings.extend(_trace_failures(lt, launcher, script))
    return out


def _allocation(lt: LaunchTrace, launcher: str, findings: list[Finding]) -> Allocation | None:
    """The salloc/sbatch the launcher ran (an srun outside an allocation allocates by
    itself); NO_ALLOCATION when there is none."""
    step_rec = lt.step_record
    alloc_rec = next((r for r in lt.launcher.records if r.tool in ALLOC_TOOLS), None)
    if alloc_rec is None and step_rec is not None and step_rec.tool in CONTAINER_TOOLS:
        return _container_allocation(lt)  # the node itself: no scheduler
    if alloc_rec is None and step_rec is not None \
            and "--jobid" not in parse_slurm_args(args_of(step_rec))[0]:
        alloc_rec = step_rec
    if alloc_rec is None:
        findings.append(NO_ALLOCATION.at(
            launcher, None, None, "no salloc/sbatch/srun allocation was recorded"))
        return None
    args = [lt.show(a) for a in args_of(alloc_rec)]
    opts, _ = parse_slurm_args(args)
    nodes = last_value(opts, "--nodes")
    first = nodes.split("-")[0] if nodes else "1"
    return Allocation(
        tool=alloc_rec.tool, argv=args, partition=last_value(opts, "--partition"),
        account=last_value(opts, "--account"), nodes=int(first) if first.isdigit() else None,
        gpus=gpus_requested(opts), gres=last_value(opts, "--gres"),
        time=last_value(opts, "--time"), exclusive="--exclusive" in opts,
        job_name=last_value(opts, "--job-name"))


def _container_allocation(lt: LaunchTrace) -> Allocation:
    """A job step a container runtime runs on the node itself (``docker run``): its GPUs
    (``--gpus N``, ``device=0,1``), name, image, mounts and working directory."""
    assert lt.step_record is not None and lt.container is not None
    args = [lt.show(a) for a in args_of(lt.step_record)]
    c = lt.container
    return Allocation(
        tool=lt.step_record.tool, argv=args, nodes=1, gpus=docker_gpus(c.gpus),
        job_name=next((a.split("=", 1)[1] if "=" in a else args[i + 1]
                       for i, a in enumerate(args[:-1])
                       if a == "--name" or a.startswith("--name=")), None),
        container_image=lt.show(c.image) if c.image else None,
        container_mounts=[f"{lt.show(h)}:{lt.show(m)}" for h, m in c.mounts],
        container_workdir=c.workdir)


def docker_gpus(value: str | None) -> int | None:
    """GPUs a container runtime's ``--gpus`` value gives (``8``, ``count=8``,
    ``"device=0,1"``); None for ``all`` or nothing."""
    if not value:
        return None
    v = value.strip("'\"")
    for part in v.split(","):
        if part.startswith("count="):
            v = part[6:]
    if v.isdigit():
        return int(v)
    if v.startswith("device="):
        return len([d for d in v[7:].split(",") if d])
    return None


def _flat(s: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "_", s.lower()).strip("_")


_SQUASHFS = (".sqsh", ".sqfs", ".squashfs")


def squashfs_of(image: str, container: str) -> bool:
    """A launcher convention: the container is a squashfs file imported from the row's
    image, named after it (``vllm/vllm-openai:v0.27.1`` →
    ``/data/containers/vllm_vllm-openai_v0.27.1.sqsh``; a registry host may be dropped)."""
    if not container.lower().endswith(_SQUASHFS):
        return False
    name = _flat(container.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    ref = image.split("@", 1)[0]
    cands = {_flat(ref)}
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        cands.add(_flat(rest))
    return any(c and c in name for c in cands)


def mapped_to_storage(value: str, got: str) -> bool:
    """A launcher convention: a model id the workflow exports (``org/Name``) that the
    launcher points at its copy on shared storage (``/lustre/…/Name``, ``/data/models/…``):
    an absolute path ending in the id's name (or its ``org--name`` / ``org_name`` forms);
    or a storage directory the workflow names (``HF_HUB_CACHE=/mnt/hf_hub_cache/``) that the
    launcher moves to another absolute path of the node."""
    if not got.startswith("/") or "/" not in value:
        return False
    if value.startswith("/"):  # a storage location (cache, models dir) moved to the node's
        return True
    org, _, name = value.rstrip("/").rpartition("/")
    forms = {_flat(name), _flat(f"{org}--{name}"), _flat(f"{org}_{name}"),
             _flat(f"models--{org}--{name}")}
    parts = {_flat(p) for p in got.rstrip("/").split("/") if p}
    return bool(name) and (bool(forms & parts) or got.rstrip("/").endswith("/" + value))


def _job_step(lt: LaunchTrace, out: Inspection, launcher: str,
              workflow_env: dict[str, str], reads: frozenset[str] | None) -> None:
    """The job step's command, its container (into the allocation), what the launcher
    added to the environment and which workflow variables it lost (VAR_DROPPED)."""
    assert lt.step_record is not None
    out.step = [lt.step_record.tool, *[lt.show(a) for a in args_of(lt.step_record)]]
    sopts, _ = parse_slurm_args(out.step[1:])
    # (a container runtime's step is the allocation itself: _container_allocation)
    if out.allocation is not None and lt.container is None:
        out.allocation.container_image = last_value(sopts, "--container-image")
        mounts = last_value(sopts, "--container-mounts")
        out.allocation.container_mounts = mounts.split(",") if mounts else []
        out.allocation.container_workdir = last_value(sopts, "--container-workdir")
    for k, v in sorted(lt.step_env.items()):
        if k != "GITHUB_WORKSPACE" and workflow_env.get(k) != v:
            out.launcher_env[k] = v
    for k, v in workflow_env.items():
        got = lt.step_env.get(k)
        if k == "GITHUB_WORKSPACE" or got == v or (got is not None and mapped_to_storage(v, got)):
            continue
        if got is None and reads is not None and k not in reads:
            continue  # left out of an explicit list, and the script does not read it
        out.findings.append(VAR_DROPPED.at(
            launcher, None, None,
            f"{k}={v!r} is exported by the workflow but the job step sees "
            + ("it unset" if got is None else repr(got))))


def _script_processes(lt: LaunchTrace, out: Inspection) -> None:
    """The first inference-server launch of the benchmark script, and its sidecars."""
    from inferencex_tools.policy.engines import engine_of

    if lt.script is None:
        return
    show = lt.show
    for rec in lt.script.records:
        if out.server is None and engine_of(rec) is not None:
            env = {k: show(v) for k, v in sorted(rec.env.items())
                   if k not in SANDBOX_ENV and k != "GITHUB_WORKSPACE"
                   and lt.step_env.get(k) != show(v)}
            argv = args_of(rec)
            if rec.tool.startswith("python -m "):  # the arguments after the module
                mod = rec.tool.split(" ")[-1]
                argv = argv[argv.index(mod) + 1:] if mod in argv else argv
            out.server = ServerLaunch(rec.tool.replace("python -m ", "python3 -m "),
                                      [show(a) for a in argv], env)
        elif rec.tool in SIDECAR_TOOLS:
            out.sidecars.append([rec.tool, *[show(a) for a in args_of(rec)]])


def _stubbed_image(lt: LaunchTrace) -> Any:
    """The image file a stubbed ``enroot import`` of the launcher would have written
    (its :class:`~inferencex_tools.policy.unreproducible.Output`), if any."""
    from inferencex_tools.policy.unreproducible import stub_outputs

    imports = [r for r in lt.launcher.records if r.tool == "enroot" and "import" in r.argv]
    found = stub_outputs(imports)
    return found[-1] if found else None


def _allocation_checks(a: Allocation, row: dict[str, Any], launcher: str,
                       stubbed: Any = None) -> list[Finding]:
    """The allocation against the row: stated pieces, GPU count, container image
    (``stubbed``: the image a stubbed ``enroot import`` would have written: an image the
    allocation names only through that file is not checked, LA207)."""
    out: list[Finding] = []
    pieces = [("container image", a.container_image)]
    if a.tool not in CONTAINER_TOOLS:  # a scheduler's allocation (the node needs none)
        pieces[:0] = [("partition", a.partition), ("time limit", a.time)]
    for piece, value in pieces:
        if not value and piece == "container image" and stubbed is not None:
            out.append(STUB_OUTPUT.at(
                launcher, None, None, f"the allocation's container image is the file "
                f"`{stubbed.call}` writes in the job ({stubbed.path}); the stub writes "
                "none, so the launcher's path to it is empty here"))
        elif not value:
            out.append(ALLOC_UNRESOLVED.at(
                launcher, None, None, f"the allocation states no {piece}"))
    want = gpu_count(row)
    if a.gpus is None:
        out.append(ALLOC_UNRESOLVED.at(launcher, None, None,
                                         "the allocation requests no GPUs"))
    elif a.gpus * (a.nodes or 1) != want:
        out.append(GPU_MISMATCH.at(
            launcher, None, None, f"allocation requests {a.gpus} GPU(s) per node on "
            f"{a.nodes or 1} node(s), the row needs {want} (tp·pp·pcp)"))
    image = row.get("image")
    if a.container_image and image and a.container_image != image \
            and str(image) not in a.container_image \
            and not squashfs_of(str(image), a.container_image):
        out.append(IMAGE_MISMATCH.at(
            launcher, None, None, f"container {a.container_image}, row image {image}"))
    return out


def _trace_failures(lt: LaunchTrace, launcher: str, script: str | None) -> list[Finding]:
    """TRACE_FAILED for a launcher or benchmark script that did not finish cleanly."""
    out: list[Finding] = []
    for stage, tr, where in (("launcher", lt.launcher, launcher),
                             ("benchmark script", lt.script, script or launcher)):
        if tr is None or tr.ok:
            continue
        from inferencex_tools.policy.unreproducible import missing_stub_output

        why = missing_stub_output(tr)
        if why is not None:
            out.append(STUB_OUTPUT.at(where, None, None, f"the {stage}: {lt.show(why)}"))
            continue
        what = (f"was stopped by the sandbox ({tr.stopped_by})" if tr.stopped_by and
                not tr.timed_out else f"timed out after {tr.seconds:.0f}s" if tr.timed_out
                else f"exited {tr.returncode}")
        err = tr.stderr_tail.strip().splitlines()
        out.append(TRACE_FAILED.at(
            where, None, None,
            f"the {stage} {what}; last traced line: {lt.show(tr.last_line or '?')}"
            + (f"; stderr: {lt.show(err[-1])}" if err else "")))
    return out


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
    try:  # a server argument is untrusted data: bounded size and depth
        v = bounded_json(vals[-1])
    except ValueError:
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
        out.append(TP_MISMATCH.at(where, None, None,
                                    f"server TP {tp[-1] if tp else 'unset'}, row tp "
                                    f"{row.get('tp')}"))
    ep = int(row.get("ep", 1) or 1)
    has_ep = "--enable-expert-parallel" in argv or "-ep" in argv
    if (ep > 1) != has_ep:
        out.append(EP_MISMATCH.at(
            where, None, None,
            f"row ep {ep} but --enable-expert-parallel is {'set' if has_ep else 'absent'}"))
    kv = json_flag(argv, "--kv-transfer-config")
    dram = row.get("kv-offloading") == "dram"
    if dram != (kv is not None):
        out.append(KV_MISMATCH.at(
            where, None, None,
            f"row kv-offloading {row.get('kv-offloading')!r} but the server "
            f"{'has' if kv is not None else 'has no'} --kv-transfer-config"))
    spec = row.get("spec-decoding", "none")
    if spec not in (None, "none") and json_flag(argv, "--speculative-config") is None:
        out.append(SPEC_MISSING.at(where, None, None,
                                     f"row spec-decoding {spec!r}, no --speculative-config"))
    seqs = flag_values(argv, "--max-num-seqs")
    conc = row.get("conc")
    if isinstance(conc, int) and seqs and seqs[-1].isdigit() and int(seqs[-1]) < conc:
        out.append(CONC_MISMATCH.at(where, None, None,
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
    if head and i + 1 < len(cmd) and cmd[i] == "-m":  # python3 -m module
        head += cmd[i:i + 2]
        i += 2
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


def _wrap(items: list[str], width: int = 96, indent: str = "  ") -> list[str]:
    """Space-separated items packed into lines of at most ``width`` characters."""
    lines: list[str] = []
    cur = ""
    for it in items:
        if cur and len(indent) + len(cur) + 1 + len(it) > width:
            lines.append(indent + cur)
            cur = it
        else:
            cur = f"{cur} {it}" if cur else it
    if cur:
        lines.append(indent + cur)
    return lines


def _env_items(env: dict[str, str]) -> list[str]:
    return [f"{k}={shlex.quote(v)}" for k, v in env.items()]


def _stated(v: object) -> str:
    return "(not stated)" if v in (None, "") else str(v)


def format_job_text(job: RenderedJob) -> str:
    """The human view of one rendered job."""
    lines: list[str] = []
    mode = "eval" if job.eval_only else "throughput"
    origin = ", ".join(x for x in (
        job.config_key, f"arm {job.arm}" if job.arm else None,
        f"conc {job.row.get('conc')}", mode) if x)
    lines.append(f"== {job.name}  ({origin})")
    lines.append(f"runner    {job.row.get('runner')} → node {job.node or '(unresolved)'}")
    lines.append(f"launcher  {job.launcher or '(unresolved)'}")
    if job.row.get("prefill") is not None:  # multi-node: the launcher submits a recipe
        lines += _submission_lines(job)
    else:
        lines.append(f"script    {job.script or '(unresolved)'}")
    a = job.allocation
    if a is not None:
        lines += _allocation_lines(a)
    if job.step and (a is None or job.step[1:] != a.argv):
        lines.append("job step:")
        lines.append("  $ " + shlex.join(job.step))
    lines += _process_lines(job)
    for f in job.findings:
        lines.append(f"{f.severity.value} [{f.rule}] {f.message}")
    return "\n".join(lines) + "\n"


def _submission_lines(job: RenderedJob) -> list[str]:
    if not job.submission:
        return ["submits   (not reached under tracing: see the findings)"]
    where = f" (in {job.submission_cwd})" if job.submission_cwd else ""
    lines = [f"submits   {shlex.join(job.submission)}{where}"]
    if job.recipe:
        lines.append(f"recipe    {job.recipe}")
    return lines


def _allocation_lines(a: Allocation) -> list[str]:
    gpus = f"{a.gpus} (--gres={a.gres})" if a.gres else _stated(a.gpus)
    if a.tool in CONTAINER_TOOLS:  # on the node itself, no scheduler
        return [
            f"container ({a.tool} run on the node): gpus {gpus} · name {_stated(a.job_name)}",
            f"  image {_stated(a.container_image)} · mounts "
            f"{_stated(', '.join(a.container_mounts))} · workdir "
            f"{_stated(a.container_workdir)}",
            "  $ " + shlex.join([a.tool, *a.argv]),
        ]
    return [
        f"slurm allocation ({a.tool}): partition {_stated(a.partition)} · "
        f"account {_stated(a.account)} · nodes {_stated(a.nodes)} · gpus {gpus}",
        f"  time {_stated(a.time)} · exclusive {'yes' if a.exclusive else 'no'} · "
        f"job name {_stated(a.job_name)}",
        f"  image {_stated(a.container_image)} · mounts "
        f"{_stated(', '.join(a.container_mounts))} · workdir "
        f"{_stated(a.container_workdir)}",
        "  $ " + shlex.join([a.tool, *a.argv]),
    ]


def _process_lines(job: RenderedJob) -> list[str]:
    """The environment handed down, the server command and the other processes."""
    lines = [f"environment exported by the workflow ({len(job.workflow_env)}):"]
    lines.extend(_wrap(_env_items(job.workflow_env)))
    if job.launcher_env:
        lines.append("added or changed by the launcher for the job step:")
        lines.extend(_wrap(_env_items(job.launcher_env)))
    if job.server is not None:
        lines.append("server command:")
        lines.append("  " + format_command(job.server.command))
        if job.server.env:
            lines.append("server environment set by the script:")
            lines.extend(_wrap(_env_items(job.server.env)))
    if job.sidecars:
        lines.append("other processes started by the script:")
        lines.extend("  " + shlex.join(c) for c in job.sidecars)
    return lines


__all__ = ["Allocation", "Inspection", "RenderedJob", "ServerLaunch", "format_job_text",
           "inspect_launch"]
