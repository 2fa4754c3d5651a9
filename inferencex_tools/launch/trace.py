"""Run a launcher (and, through its ``srun`` step, the benchmark script) with stubs.

This is the launch area's own small tracing sandbox: a temporary workspace
holding a copy of the repository's ``runners/``, ``benchmarks/`` and
``configs/``, a clean environment (``env -i`` + the row's variables), and stub
executables first on ``PATH``.  Each stub appends one JSON record (tool, argv,
cwd, full environment) to a log:

* Slurm: ``salloc``/``sbatch`` record and succeed (job id 4242), ``squeue``
  prints that id, ``scancel`` records; ``srun`` records and then runs its
  command (the job step) in the workspace with ``--export`` additions applied,
  so the benchmark script is traced too.
* Servers and heavy tools (``vllm``, ``sglang``, ``trtllm-serve``, ``python3 -m
  vllm…``, ``docker``, ``enroot``, ``hf``, ``nvidia-smi``, ``curl`` …) record
  and exit 0; ``sleep`` is capped.  Other ``python3`` calls run for real.

Nothing runs with network tools available, the repository is never the working
directory, and every run is bounded by a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

FAKE_JOB_ID = "4242"
COPY_DIRS = ("runners", "benchmarks", "configs")

RECORD_ONLY = (
    "salloc", "sbatch", "squeue", "scancel", "scontrol", "sinfo", "sacct",
    "vllm", "sglang", "trtllm-serve", "mpirun", "vllm-router", "docker", "enroot",
    "unsquashfs", "flock", "hf", "huggingface-cli", "nvidia-smi", "amd-smi", "rocm-smi",
    "numactl", "ibv_devinfo", "curl", "wget", "git", "pip", "pip3", "uv", "apt-get", "sudo",
    "make", "cmake", "modal", "lm_eval", "aiperf", "mooncake_master", "etcd", "nats-server",
)
SERVER_MODULES = ("vllm", "sglang", "tensorrt_llm", "atom", "lm_eval", "aiperf", "mooncake",
                  "lmcache", "dynamo", "pip", "uv")

# The recorder every stub executes.  It is written into the sandbox as a file.
_RECORDER = r'''
import json, os, subprocess, sys, time
LOG = {log!r}
REAL_PY = {real_py!r}
JOB = {job!r}
MOUNTS_VAR = "IXTOOL_TRACE_MOUNTS"
tool = sys.argv[1]
argv = sys.argv[2:]

def mounts():
    try:
        return [tuple(m) for m in json.loads(os.environ.get(MOUNTS_VAR, "[]"))]
    except ValueError:
        return []

def to_container(s):
    for host, cont in mounts():
        s = s.replace(host, cont)
    return s

def record(kind=None):
    env = {{k: to_container(v) for k, v in os.environ.items() if not k.startswith("IXTOOL_")}}
    rec = {{"tool": tool, "argv": [to_container(a) for a in argv],
            "cwd": to_container(os.getcwd()), "env": env}}
    if kind:
        rec["kind"] = kind
    with open(LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")

VALUED = {{"-p", "-A", "-N", "-n", "-c", "-J", "-t", "-G", "-w", "-o", "-e", "-D",
          "--partition", "--account", "--nodes", "--ntasks", "--cpus-per-task",
          "--job-name", "--time", "--gpus", "--gres", "--nodelist", "--output",
          "--error", "--jobid", "--container-image", "--container-mounts",
          "--container-workdir", "--export", "--mem", "--chdir", "--gpus-per-node",
          "--ntasks-per-node", "--mpi", "--exclude", "--reservation", "--qos"}}

def split_command(args):
    opts = {{}}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return opts, args[i + 1:]
        if not a.startswith("-"):
            return opts, args[i:]
        if "=" in a and a.startswith("--"):
            k, v = a.split("=", 1)
            opts.setdefault(k, []).append(v)
            i += 1
        elif a in VALUED and i + 1 < len(args):
            opts.setdefault(a, []).append(args[i + 1])
            i += 2
        else:
            opts.setdefault(a, []).append("")
            i += 1
    return opts, []

def step_env(opts):
    env = dict(os.environ)
    for val in opts.get("--export", []):
        parts = val.split(",")
        if parts and parts[0] == "NONE":
            env = {{k: v for k, v in env.items() if k in ("PATH", "HOME") or
                   k.startswith("IXTOOL_")}}
        for p in parts:
            if "=" in p:
                k, v = p.split("=", 1)
                env[k] = v
    return env

def run_step(opts, cmd):
    env = step_env(opts)
    env.setdefault("SLURM_JOB_ID", JOB)
    cwd = os.getcwd()
    maps = mounts()
    for spec in opts.get("--container-mounts", []):
        for m in spec.split(","):
            bits = m.split(":")
            if len(bits) >= 2 and bits[0] and bits[1]:
                maps.append((bits[0].rstrip("/") or "/", bits[1].rstrip("/") or "/"))
    if opts.get("--container-image"):
        def to_host(s):
            for host, cont in maps:
                if s == cont or s.startswith(cont + "/"):
                    return host + s[len(cont):]
            return s
        env = {{k: to_host(v) for k, v in env.items()}}
        cmd = [to_host(c) for c in cmd]
        wd = opts.get("--container-workdir")
        if wd:
            cwd = to_host(wd[-1])
        env[MOUNTS_VAR] = json.dumps(maps)
    return subprocess.call(cmd, env=env, cwd=cwd if os.path.isdir(cwd) else None)

if tool in ("python", "python3"):
    rest = list(argv)
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c", "-"):
        rest = rest[1:]
    if len(rest) >= 2 and rest[0] == "-m" and rest[1].split(".")[0] in {modules!r}:
        record("python-module")
        sys.exit(0)
    os.execv(REAL_PY, [REAL_PY] + argv)

if tool == "sleep":
    time.sleep(0.02)
    sys.exit(0)

record()
if tool == "squeue":
    if any(a.startswith(("-o", "--format", "-O")) for a in argv):
        print(JOB)
    sys.exit(0)
if tool == "sbatch":
    print(JOB if "--parsable" in argv else "Submitted batch job " + JOB)
    sys.exit(0)
if tool in ("srun", "salloc"):
    opts, cmd = split_command(argv)
    if tool == "salloc" and "--no-shell" in opts:
        cmd = []
    sys.exit(run_step(opts, cmd) if cmd else 0)
if tool == "nvidia-smi":
    print("GPU 0: NVIDIA H200 (UUID: GPU-0)")
sys.exit(0)
'''


@dataclass
class TraceRecord:
    tool: str
    argv: list[str]
    cwd: str
    env: dict[str, str]
    kind: str | None = None

    @property
    def line(self) -> str:
        return " ".join([self.tool, *self.argv])


@dataclass
class Trace:
    records: list[TraceRecord] = field(default_factory=list)
    exit_code: int = 0
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    workspace: str = ""
    initial_env: dict[str, str] = field(default_factory=dict)


def _write_stubs(bindir: Path, log: Path) -> None:
    rec = bindir / "_record.py"
    rec.write_text(_RECORDER.format(log=str(log), real_py=sys.executable, job=FAKE_JOB_ID,
                                    modules=SERVER_MODULES), encoding="utf-8")
    tools = (*RECORD_ONLY, "srun", "python", "python3", "sleep")
    for tool in dict.fromkeys(tools):
        stub = bindir / tool
        # SIGTERM/SIGINT ignored across exec: a recipe's cleanup trap that kills the
        # background server must not kill the stub before it has recorded the launch
        stub.write_text(f"#!/bin/bash\ntrap '' TERM INT HUP\n"
                        f'exec "{sys.executable}" "{rec}" {tool} "$@"\n',
                        encoding="utf-8")
        stub.chmod(0o755)


def _copy_tree(root: Path, dest: Path) -> None:
    for d in COPY_DIRS:
        src = root / d
        if src.is_dir():
            shutil.copytree(src, dest / d, symlinks=False,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def run_traced(root: Path, launcher: str, env: dict[str, str], *,
               timeout: float = 30.0) -> Trace:
    """Run ``bash <launcher>`` from a sandbox copy of ``root`` with ``env`` and stubs.

    ``env`` is the workflow's environment for the row; ``GITHUB_WORKSPACE`` is
    replaced by the sandbox workspace.
    """
    with tempfile.TemporaryDirectory(prefix="ixtool-launch-") as tmp:
        t = Path(tmp)
        ws, bindir, home = t / "ws", t / "bin", t / "home"
        for d in (ws, bindir, home):
            d.mkdir()
        log = t / "trace.jsonl"
        log.touch()
        _copy_tree(root, ws)
        _write_stubs(bindir, log)
        run_env = dict(env)
        run_env.update({
            "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "USER": "runner",
            "TMPDIR": str(t),
            "GITHUB_WORKSPACE": str(ws),
            "LANG": "C.UTF-8",
        })
        trace = Trace(workspace=str(ws), initial_env=dict(run_env))
        proc = subprocess.Popen(
            ["/bin/bash", launcher], cwd=ws, env=run_env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        try:
            trace.stdout, trace.stderr = proc.communicate(timeout=timeout)
            trace.exit_code = proc.returncode
        except subprocess.TimeoutExpired:
            trace.timed_out = True
            trace.exit_code = -1
        finally:
            # the whole session: background servers and stubs included
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            if trace.timed_out:
                trace.stdout, trace.stderr = proc.communicate()
        trace.records = _read_records(log, ws)
        return trace


def _read_records(log: Path, ws: Path) -> list[TraceRecord]:
    out: list[TraceRecord] = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue
        out.append(TraceRecord(d["tool"], list(d["argv"]), d["cwd"], dict(d["env"]),
                               d.get("kind")))
    return out


def relativize(value: str, workspace: str, replacement: str = "$GITHUB_WORKSPACE") -> str:
    """Replace the sandbox workspace path in ``value`` by ``replacement``."""
    return value.replace(workspace, replacement) if workspace else value

