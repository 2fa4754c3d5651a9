"""Slurm client command lines (salloc / sbatch / srun argv), pure."""

from __future__ import annotations

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


def last_value(opts: dict[str, list[str]], *names: str) -> str | None:
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
        v = last_value(opts, n)
        if v:
            tail = v.split(":")[-1]
            if tail.isdigit():
                return int(tail)
    return None


def step_runs(args: list[str], script: str | None) -> bool:
    """Does an srun argument list run ``script`` (any benchmark script when None)?"""
    _, cmd = parse_slurm_args(args)
    if not cmd:
        return False
    if script is None:
        return any(c.endswith(".sh") and "benchmarks/" in c for c in cmd)
    return any(c == script or c.endswith("/" + script) for c in cmd)
