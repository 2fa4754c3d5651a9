"""The edge to Slurm's client commands (sbatch, squeue, sacct, scontrol).

Every call has a timeout and returns text or a clear failure; nothing here
decides anything.  ``SLURM_CONF`` and ``PATH`` come from the caller's
environment, so the same code talks to a production cluster or a test one.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from inferencex_tools.errors import InputError

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
            "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"}


@dataclass
class JobStatus:
    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, … or UNKNOWN
    exit_code: str | None = None
    reason: str | None = None
    source: str = ""  # squeue | sacct | scontrol


def available(tool: str = "sbatch") -> bool:
    return shutil.which(tool) is not None


def _run(cmd: list[str], *, timeout: float = 30.0,
         input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              input=input_text, check=False)
    except FileNotFoundError:
        raise InputError(f"{cmd[0]}: command not found",
                         hint="install Slurm's client tools, or use --dry-run") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"{cmd[0]} did not answer within {timeout:.0f}s",
                         hint="is slurmctld reachable (SLURM_CONF)?") from None


def sbatch(script: Path, extra: list[str] | None = None) -> tuple[str | None, str]:
    """Submit ``script``; (job id, message).  The id is None when sbatch refused."""
    proc = _run(["sbatch", "--parsable", *(extra or []), str(script)])
    if proc.returncode != 0:
        return None, (proc.stderr or proc.stdout).strip()
    job_id = proc.stdout.strip().split(";", 1)[0]
    if not job_id.isdigit():
        return None, f"unexpected sbatch output: {proc.stdout.strip()!r}"
    return job_id, ""


def _parse_pipe(text: str, fields: int) -> list[list[str]]:
    out = []
    for line in text.splitlines():
        bits = line.strip().split("|")
        if len(bits) >= fields and bits[0]:
            out.append(bits)
    return out


def query(job_ids: list[str]) -> dict[str, JobStatus]:
    """States of ``job_ids``: squeue for live jobs, then sacct (accounting or the
    job-completion log), then ``scontrol show job`` for jobs the controller still holds."""
    if not job_ids:
        return {}
    found = _squeue(job_ids)
    missing = [j for j in job_ids if j not in found]
    if missing and available("sacct"):
        found.update(_sacct(missing))
    for jid in [j for j in job_ids if j not in found]:
        status = _scontrol(jid)
        if status is not None:
            found[jid] = status
    for jid in job_ids:
        found.setdefault(jid, JobStatus(jid, "UNKNOWN"))
    return found


def _squeue(job_ids: list[str]) -> dict[str, JobStatus]:
    proc = _run(["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i|%T|%r"])
    if proc.returncode != 0:
        return {}
    return {jid: JobStatus(jid, state, None, reason, "squeue")
            for jid, state, reason in _parse_pipe(proc.stdout, 3)}


def _sacct(missing: list[str]) -> dict[str, JobStatus]:
    """Accounting first, then the job-completion log (``-c``) for what is still missing."""
    found: dict[str, JobStatus] = {}
    for extra in ([], ["-c"]):
        proc = _run(["sacct", *extra, "-n", "-P", "-X", "-j", ",".join(missing),
                     "-o", "JobID,State,ExitCode"])
        if proc.returncode != 0:
            continue
        for jid, state, code in _parse_pipe(proc.stdout, 3):
            if jid in missing:
                found[jid] = JobStatus(jid, state.split()[0], code, None,
                                       "sacct" + (" -c" if extra else ""))
        if all(j in found for j in missing):
            break
    return found


def _scontrol(jid: str) -> JobStatus | None:
    proc = _run(["scontrol", "show", "job", "-o", jid])
    if proc.returncode != 0:
        return None
    fields = dict(tok.split("=", 1) for tok in proc.stdout.split() if "=" in tok)
    if "JobState" not in fields:
        return None
    return JobStatus(jid, fields["JobState"], fields.get("ExitCode"), fields.get("Reason"),
                     "scontrol")
