"""The job step a launcher starts: which script runs, where, with which environment.

Pure: the argv and environment of a recorded ``srun`` / ``docker run`` / ``podman run``
call in, a :class:`Step` out.  Slurm semantics: ``--export`` (default ``ALL``; ``NONE``;
``ALL,VAR=value``; a bare list of names), pyxis ``--container-mounts`` /
``--container-workdir``; container runtimes: ``-e NAME`` / ``-e NAME=value`` /
``--env-file`` (not readable here: noted), ``-v host:container[:opts]``, ``-w``,
``--entrypoint``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# srun options written as "--opt value" (most launchers write "--opt=value")
_SRUN_VALUE_OPTS = frozenset({
    "--jobid", "--nodes", "--ntasks", "--partition", "--account", "--time", "--job-name",
    "--export", "--container-image", "--container-mounts", "--container-workdir",
    "--container-name", "--container-env", "--gres", "--nodelist", "--exclude", "--mem",
    "--cpus-per-task", "--ntasks-per-node", "--gpus", "--gpus-per-node", "--mpi",
    "--output", "--error", "--chdir", "--dependency", "--qos", "--reservation",
    "--constraint", "--distribution", "--cpu-bind", "--overlap-force",
    "-N", "-n", "-p", "-A", "-t", "-J", "-w", "-x", "-c", "-o", "-e", "-D", "-G", "-C", "-q",
})
_DOCKER_VALUE_OPTS = frozenset({
    "-v", "--volume", "-e", "--env", "--env-file", "-w", "--workdir", "--name", "--network",
    "--net", "--runtime", "--gpus", "--ipc", "--shm-size", "--ulimit", "--device",
    "--group-add", "--security-opt", "--cap-add", "--cap-drop", "--entrypoint", "-u",
    "--user", "--mount", "--cpus", "--memory", "-m", "--pid", "--hostname", "-h", "-p",
    "--publish", "--label", "-l", "--platform", "--pull", "--restart", "--tmpfs",
    "--log-driver", "--log-opt", "--cgroupns", "--uts", "--userns", "--add-host",
    "--dns", "--stop-signal", "--stop-timeout", "--cidfile", "--memory-swap",
})


@dataclass
class Step:
    """One job step that runs a script."""

    tool: str  # srun | docker | podman
    command: list[str]  # what runs in the step (e.g. ["bash", "benchmarks/x.sh"])
    script: str | None  # the script it runs, as written
    env: dict[str, str]  # the step's environment
    workdir: str | None  # the container's working directory (None: the caller's)
    mounts: list[tuple[str, str]] = field(default_factory=list)  # (host, container)
    container: bool = False
    notes: list[str] = field(default_factory=list)
    image: str | None = None  # the container image (``docker run IMAGE``, --container-image)
    gpus: str | None = None  # the container runtime's ``--gpus`` value


def _split_opts(args: Sequence[str], value_opts: frozenset[str]) -> tuple[list[tuple[str, str]],
                                                                          list[str]]:
    """(options as (name, value) pairs, the rest from the first positional)."""
    opts: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return opts, list(args[i + 1:])
        if not a.startswith("-") or a == "-":
            return opts, list(args[i:])
        if "=" in a and a.startswith("--"):
            k, _, v = a.partition("=")
            opts.append((k, v))
        elif a in value_opts and i + 1 < len(args):
            opts.append((a, args[i + 1]))
            i += 1
        elif len(a) > 2 and not a.startswith("--") and a[:2] in value_opts:
            opts.append((a[:2], a[2:]))
        else:
            opts.append((a, ""))
        i += 1
    return opts, []


def _script_of(command: Sequence[str]) -> str | None:
    if not command:
        return None
    prog = command[0].rsplit("/", 1)[-1]
    if prog in ("bash", "sh"):
        rest = [c for c in command[1:] if not c.startswith("-")]
        if "-c" in command[1:]:
            return None
        return rest[0] if rest and rest[0].endswith(".sh") else None
    return command[0] if command[0].endswith(".sh") else None


def _mounts(specs: Sequence[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for spec in specs:
        for m in spec.split(","):
            bits = m.split(":")
            if len(bits) >= 2 and bits[0] and bits[1]:
                out.append((bits[0].rstrip("/") or "/", bits[1].rstrip("/") or "/"))
    return out


def _srun_export(specs: list[str], env: Mapping[str, str]) -> dict[str, str]:
    """The step's environment after ``--export`` (ALL, NONE, names, NAME=value)."""
    step_env = dict(env)
    for spec in specs:
        parts = [p for p in spec.split(",") if p]
        names = [p for p in parts if "=" not in p]
        if "NONE" in names or (names and "ALL" not in names):
            keep = {n for n in names if n not in ("ALL", "NONE")}
            step_env = {k: v for k, v in env.items() if k in keep or k.startswith("SLURM_")}
        for p in parts:
            if "=" in p:
                k, _, v = p.partition("=")
                step_env[k] = v
    return step_env


def _step_workdir(d: dict[str, list[str]]) -> str | None:
    wds = d.get("--container-workdir") or d.get("--chdir") or d.get("-D") or []
    return (wds[-1].rstrip("/") or "/") if wds else None


def srun_step(args: Sequence[str], env: Mapping[str, str]) -> Step:
    opts, command = _split_opts(args, _SRUN_VALUE_OPTS)
    d: dict[str, list[str]] = {}
    for k, v in opts:
        d.setdefault(k, []).append(v)
    step_env = _srun_export(d.get("--export", []), env)
    notes: list[str] = []
    mounts = _mounts(d.get("--container-mounts", []))
    # a pyxis container step (an empty image value is a sandbox artefact, e.g. realpath
    # of a squash file that only exists on the cluster)
    container = any(k.startswith("--container-") and k != "--container-env" for k in d)
    return Step("srun", command, _script_of(command), step_env, _step_workdir(d), mounts,
                container, notes)


def container_step(tool: str, args: Sequence[str], env: Mapping[str, str]) -> Step | None:
    if not args or args[0] != "run":
        return None
    opts, rest = _split_opts(args[1:], _DOCKER_VALUE_OPTS)
    if not rest:
        return None
    image, command = rest[0], rest[1:]
    step_env: dict[str, str] = {}
    mounts: list[tuple[str, str]] = []
    workdir: str | None = None
    entry: str | None = None
    notes: list[str] = []
    for k, v in opts:
        if k in ("-e", "--env"):
            name, eq, val = v.partition("=")
            if eq:
                step_env[name] = val
            elif name in env:
                step_env[name] = env[name]
        elif k == "--env-file":
            notes.append(f"{tool} --env-file {v}: not read")
        elif k in ("-v", "--volume"):
            mounts.extend(_mounts([v.rsplit(":", 1)[0] if v.count(":") >= 2 else v]))
        elif k in ("-w", "--workdir"):
            workdir = v.rstrip("/") or "/"
        elif k == "--entrypoint":
            entry = v
    if entry:
        command = [entry, *command]
    step = Step(tool, command, _script_of(command), step_env, workdir, mounts, True, notes,
                image=image, gpus=next((v for k, v in reversed(opts) if k == "--gpus"), None))
    step.notes.append(f"image {image}: its own environment is not known here")
    return step


def step_of(tool: str, argv: Sequence[str], env: Mapping[str, str]) -> Step | None:
    """The step a recorded call starts, if it runs a script (else None)."""
    args = list(argv[1:]) if argv and argv[0].rsplit("/", 1)[-1] == tool else list(argv)
    if tool == "srun":
        step: Step | None = srun_step(args, env)
    elif tool in ("docker", "podman"):
        step = container_step(tool, args, env)
    else:
        return None
    if step is None or step.script is None:
        return None
    return step
