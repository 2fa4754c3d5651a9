"""`ixtool launch submit` / `status` against a real Slurm (munged + slurmctld + slurmd on
localhost, 8 fake GPUs): the 14 seed rows run as batch jobs through the real launcher
and recipe, with the server stubbed to a short process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferencex_tools.launch.render import flag_values
from inferencex_tools.launch.service import RowSource, SubmitRequest, submit, wait
from tests.launch import slurm_cluster
from tests.launch.conftest import SEED_KEY, copy_repo

PY = sys.executable

# Stand-ins on the jobs' PATH.  Only the server and the clients are fakes; the batch
# jobs, the launcher, its srun step and the recipe are the real ones.
SRUN_SHIM = f"""#!{PY}
# pyxis stand-in: drop --container-* options, map the container mount onto the host
# path (environment values and working directory), then run the real srun.
import json, os, sys
args, maps, workdir = [], [], None
for a in sys.argv[1:]:
    if a.startswith("--container-mounts="):
        for m in a.split("=", 1)[1].split(","):
            host, cont = m.split(":")[:2]
            maps.append((host.rstrip("/"), cont.rstrip("/")))
    elif a.startswith("--container-workdir="):
        workdir = a.split("=", 1)[1]
    elif a.startswith(("--container-", "--no-container-")):
        pass
    else:
        args.append(a)
def to_host(v):
    for host, cont in maps:
        if v == cont or v.startswith(cont + "/"):
            return host + v[len(cont):]
    return v
for k, v in list(os.environ.items()):
    os.environ[k] = to_host(v)
if workdir:
    args.insert(0, "--chdir=" + to_host(workdir))
os.execv("{slurm_cluster.find("srun")}", ["srun", *args])
"""

VLLM_STUB = f"""#!{PY}
# the inference server, stubbed: record argv + environment, answer /health until stopped
import http.server, json, os, signal, sys, threading
out = os.path.join(os.environ["IXTEST_RECORDS"], os.environ["SLURM_JOB_ID"] + ".server.json")
with open(out, "w") as fh:
    json.dump({{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}, fh)
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer.allow_reuse_address = True
srv = http.server.HTTPServer(("127.0.0.1", port), H)
signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=srv.shutdown).start())
t = threading.Timer(60, srv.shutdown)
t.daemon = True
t.start()
srv.serve_forever()
os._exit(0)
"""

PYTHON_SHIM = f"""#!/bin/bash
# benchmark clients (aiperf, lm_eval) are recorded; every other python runs for real
if [[ $1 == -m && ( $2 == aiperf || $2 == lm_eval ) ]]; then
    printf '%s\\n' "$*" > "$IXTEST_RECORDS/$SLURM_JOB_ID.client.txt"
    exit 0
fi
exec {PY} "$@"
"""

SLEEP_SHIM = "#!/bin/bash\nexec /bin/sleep 0.2\n"
MOONCAKE_STUB = "#!/bin/bash\nexec /bin/sleep 30\n"


@pytest.fixture(scope="module")
def cluster() -> Iterator[slurm_cluster.Cluster]:
    gone = slurm_cluster.missing()
    if gone:
        pytest.skip("Slurm/munge not installed (apt-get install slurm-wlm munge): missing "
                    + ", ".join(gone))
    if os.geteuid() != 0:
        pytest.skip("the local Slurm cluster needs root (slurmd)")
    base = Path(tempfile.mkdtemp(prefix="ixslurm-"))
    cl = slurm_cluster.start(base)
    try:
        yield cl
    finally:
        cl.stop()
        shutil.rmtree(base, ignore_errors=True)


def _shims(d: Path) -> None:
    d.mkdir()
    for name, text in (("srun", SRUN_SHIM), ("vllm", VLLM_STUB), ("python3", PYTHON_SHIM),
                       ("sleep", SLEEP_SHIM), ("mooncake_master", MOONCAKE_STUB)):
        (d / name).write_text(text)
        (d / name).chmod(0o755)


def _free_port() -> int:
    return slurm_cluster._free_port()


@pytest.mark.slow  # ~45 s: 14 jobs one after another on the 8-GPU node
def test_seed_rows_run_as_slurm_jobs(cluster: slurm_cluster.Cluster, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    ws = copy_repo(tmp_path / "ws")
    shims, records, out = tmp_path / "shims", tmp_path / "records", tmp_path / "jobs"
    _shims(shims)
    records.mkdir()
    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    req = SubmitRequest(
        src=RowSource(config_key=SEED_KEY), partition=slurm_cluster.PARTITION,
        out_dir=out, workspace=ws, submit=True, check=False,
        extra_env={"PATH": f"{shims}:/usr/local/bin:/usr/bin:/bin",
                   "PORT": str(_free_port()), "IXTEST_RECORDS": str(records)})
    result, jobs, state_path = submit(ws, req)
    assert state_path is not None, [f.message for f in result.findings]
    assert not result.errors, [f.message for f in result.errors]
    assert len(jobs) == 14

    seen: list[dict[str, int]] = []
    st = wait(state_path, interval=0.5, timeout=120,
              progress=lambda s, e: seen.append(
                  {str(j["state"]): 1 for j in s["jobs"]}))  # type: ignore[index,union-attr]
    recorded = json.loads(state_path.read_text())
    assert recorded == st
    states = {j["job-id"]: (j["state"], j["exit-code"]) for j in recorded["jobs"]}
    assert all(s == ("COMPLETED", "0:0") for s in states.values()), (states, cluster.logs())
    assert seen, "the progress callback was never called"

    acct = cluster.run("sacct", "-c", "-n", "-P", "-o", "JobID,JobName,State")
    names = {ln.split("|")[0]: ln.split("|")[1] for ln in acct.stdout.splitlines() if ln}
    for j, job in zip(recorded["jobs"], jobs, strict=True):
        assert names[j["job-id"]] == job.row["exp-name"]  # job name = the row's exp-name
        row, jid = job.row, j["job-id"]
        server = json.loads((records / f"{jid}.server.json").read_text())
        env, argv = server["env"], server["argv"]
        # the job is the allocation the row asks for, and the server ran inside it
        assert env["SLURM_JOB_ID"] == jid
        assert env["SLURM_JOB_NAME"] == "ix-" + row["exp-name"]  # the launcher's step name
        assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
        assert env["SLURM_STEP_ID"] == "0"  # the launcher's srun is a step of the job
        # the row's variables reached the server's environment
        for var, key in (("TP", "tp"), ("EP", "ep"), ("CONC", "conc"),
                         ("KV_OFFLOADING", "kv-offloading"), ("EXP_NAME", "exp-name"),
                         ("MODEL", "model"), ("IMAGE", "image")):
            assert env[var] == str(row[key]), var
        assert env["EVAL_ONLY"] == "false"
        assert env["TOTAL_CPU_DRAM_GB"] == str(row["total-cpu-dram-gb"])
        assert env["RESULT_DIR"] == f"{ws}/results/{row['exp-name']}"
        # … and the command it was started with is the row's
        assert argv[:2] == ["serve", row["model"]]
        assert flag_values(argv, "--tensor-parallel-size") == [str(row["tp"])]
        assert ("--enable-expert-parallel" in argv) is (row["ep"] == 8)
        assert flag_values(argv, "--max-num-seqs") == [str(2 * row["conc"])]
        assert bool(flag_values(argv, "--kv-transfer-config")) is (
            row["kv-offloading"] == "dram")
        spec = json.loads(flag_values(argv, "--speculative-config")[0])
        assert spec["synthetic_acceptance_length"] == 2.83
        client = (records / f"{jid}.client.txt").read_text()
        assert f"--concurrency {row['conc']}" in client
        assert Path(j["output"]).is_file()


def test_status_command_reads_jobs_back(cluster: slurm_cluster.Cluster,
                                        tmp_path: Path) -> None:
    """The CLI end to end: submit two rows, `launch status --wait` until done."""
    ws = copy_repo(tmp_path / "ws")
    shims, records, out = tmp_path / "shims", tmp_path / "records", tmp_path / "jobs"
    _shims(shims)
    records.mkdir()
    env = dict(cluster.env)
    base = [PY, "-m", "inferencex_tools", "launch"]
    sub = subprocess.run(
        [*base, "submit", "--root", str(ws), "--config-key", SEED_KEY, "--arm", "3",
         "--conc", "4", "--conc", "16", "--partition", slurm_cluster.PARTITION,
         "--out-dir", str(out), "--submit", "--no-check",
         "--set", f"PATH={shims}:/usr/local/bin:/usr/bin:/bin",
         "--set", f"PORT={_free_port()}", "--set", f"IXTEST_RECORDS={records}"],
        env=env, capture_output=True, text=True, timeout=60, check=False)
    assert sub.returncode == 0, sub.stdout + sub.stderr
    assert sub.stdout.count("submitted ") == 2
    stat = subprocess.run(
        [*base, "status", "--state", str(out / "state.json"), "--wait", "--interval", "0.5",
         "--timeout", "60", "--format", "json"],
        env=env, capture_output=True, text=True, timeout=90, check=False)
    assert stat.returncode == 0, stat.stdout + stat.stderr + cluster.logs()
    doc = json.loads(stat.stdout)
    assert [j["state"] for j in doc["info"]["jobs"]] == ["COMPLETED", "COMPLETED"]
    assert [j["conc"] for j in doc["info"]["jobs"]] == [4, 16]
    assert "launch: 2 jobs" in stat.stderr  # the progress display


def test_failed_and_unknown_jobs_are_findings(cluster: slurm_cluster.Cluster,
                                             tmp_path: Path) -> None:
    """A job whose server cannot start ends FAILED; a job id Slurm never saw is UNKNOWN."""
    ws = copy_repo(tmp_path / "ws")
    shims, records, out = tmp_path / "shims", tmp_path / "records", tmp_path / "jobs"
    _shims(shims)
    (shims / "vllm").unlink()  # the server binary is missing on this "node"
    records.mkdir()
    base = [PY, "-m", "inferencex_tools", "launch"]
    sub = subprocess.run(
        [*base, "submit", "--root", str(ws), "--config-key", SEED_KEY, "--arm", "1",
         "--conc", "1", "--partition", slurm_cluster.PARTITION, "--out-dir", str(out),
         "--submit", "--no-check", "--wait", "--interval", "0.5", "--timeout", "60",
         "--set", f"PATH={shims}:/usr/local/bin:/usr/bin:/bin",
         "--set", f"PORT={_free_port()}", "--set", f"IXTEST_RECORDS={records}"],
        env=cluster.env, capture_output=True, text=True, timeout=90, check=False)
    assert sub.returncode == 1, sub.stdout + sub.stderr
    assert "[LA403]" in sub.stdout and "FAILED" in sub.stdout
    state_path = out / "state.json"
    st = json.loads(state_path.read_text())
    (job,) = st["jobs"]
    assert job["state"] == "FAILED" and job["exit-code"] != "0:0"
    log = Path(job["output"]).read_text()
    assert "exited before becoming ready" in log  # the recipe's own diagnosis, per row
    st["jobs"].append({**job, "index": 2, "job-id": "999999"})
    state_path.write_text(json.dumps(st))
    stat = subprocess.run([*base, "status", "--state", str(state_path), "--format", "json"],
                          env=cluster.env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert stat.returncode == 1
    doc = json.loads(stat.stdout)
    assert sorted(f["rule"] for f in doc["findings"]) == ["LA402", "LA403"]
    assert [j["state"] for j in doc["info"]["jobs"]] == ["FAILED", "UNKNOWN"]
