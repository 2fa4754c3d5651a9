"""A throw-away one-node Slurm cluster on localhost for the launch tests.

munged, slurmctld and one slurmd run in the foreground as child processes of
the test (``-F``/``-D``), with a generated munge key, ``slurm.conf`` and
``gres.conf`` in a temporary directory and free TCP ports.  The node fakes 8
GPUs: ``gres.conf`` lists eight ``File=`` entries that are symlinks to
``/dev/null`` (slurmd drops file-less GPUs, and wants character devices).
Tear-down stops exactly the three processes started here.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SBIN = ("/usr/sbin", "/usr/bin", "/sbin", "/usr/local/sbin")
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sacct", "scontrol", "sinfo", "srun")
NODE = "ixnode"
PARTITION = "ixgpu"
GPUS = 8


def find(binary: str) -> str | None:
    found = shutil.which(binary)
    if found:
        return found
    for d in SBIN:
        p = Path(d) / binary
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def missing() -> list[str]:
    return [b for b in (*DAEMONS, *CLIENTS) if find(b) is None]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Cluster:
    base: Path
    env: dict[str, str]
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.base / "slurm.conf"

    def logs(self) -> str:
        out = []
        for name in ("slurmctld.log", "slurmd.log", "munged.log"):
            p = self.base / "log" / name
            if p.is_file():
                out.append(f"--- {name}\n" + p.read_text(errors="replace")[-3000:])
        return "\n".join(out)

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True,
                              timeout=30, check=False)

    def stop(self) -> None:
        """Cancel this cluster's jobs, then stop the daemons it started, newest first."""
        if self.procs.get("slurmctld") is not None and self.procs["slurmctld"].poll() is None:
            ids = self.run("squeue", "-h", "-o", "%i").stdout.split()
            if ids:
                self.run("scancel", *ids)
                end = time.monotonic() + 10
                while time.monotonic() < end and \
                        self.run("squeue", "-h", "-o", "%i").stdout.strip():
                    time.sleep(0.2)
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)


def write_config(base: Path, partition: str = PARTITION) -> dict[str, str]:
    for d in ("state", "spool", "log", "munge", "dev"):
        (base / d).mkdir(parents=True, exist_ok=True)
    # munged wants its socket directory searchable by everyone (clients of any uid)
    base.chmod(0o755)
    (base / "munge").chmod(0o755)
    key = base / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    for i in range(GPUS):
        (base / "dev" / f"gpu{i}").symlink_to("/dev/null")
    host = socket.gethostname()
    ctld_port, d_port = _free_port(), _free_port()
    cpus = os.cpu_count() or 1
    conf = f"""\
ClusterName=ixtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={base}/munge/munge.sock
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={base}/log/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
MinJobAge=600
PlugStackConfig={base}/plugstack.conf
NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 \
Gres=gpu:{GPUS} State=UNKNOWN
PartitionName={partition} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
"""
    (base / "slurm.conf").write_text(conf)
    (base / "gres.conf").write_text(
        f"AutoDetect=off\nNodeName={NODE} Name=gpu File={base}/dev/gpu[0-{GPUS - 1}]\n")
    (base / "plugstack.conf").write_text("")
    env = dict(os.environ)
    env["SLURM_CONF"] = str(base / "slurm.conf")
    return env


def start(base: Path, *, ready_timeout: float = 30.0, partition: str = PARTITION) -> Cluster:
    env = write_config(base, partition)
    cl = Cluster(base, env)
    m = base / "munge"
    try:
        cl.procs["munged"] = subprocess.Popen(
            [str(find("munged")), "-F", f"--key-file={m / 'munge.key'}",
             f"--socket={m / 'munge.sock'}", f"--pid-file={m / 'munged.pid'}",
             f"--log-file={base / 'log' / 'munged.log'}", f"--seed-file={m / 'seed'}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for(lambda: (m / "munge.sock").exists(), 10, "munged socket", cl)
        cl.procs["slurmctld"] = subprocess.Popen(
            [str(find("slurmctld")), "-D", "-i"], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        _wait_for(lambda: cl.run("scontrol", "ping").returncode == 0, 15, "slurmctld", cl)
        cl.procs["slurmd"] = subprocess.Popen(
            [str(find("slurmd")), "-D", "-N", NODE], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        _wait_for(lambda: cl.run("sinfo", "-h", "-N", "-o", "%T").stdout.strip() == "idle",
                  ready_timeout, "node idle", cl)
    except BaseException:
        cl.stop()
        raise
    return cl


def _wait_for(cond: object, timeout: float, what: str, cl: Cluster) -> None:
    assert callable(cond)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for name, p in cl.procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited ({p.returncode}) while waiting for "
                                   f"{what}\n{cl.logs()}")
        if cond():
            return
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}\n{cl.logs()}")
