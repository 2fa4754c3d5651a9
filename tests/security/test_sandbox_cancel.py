"""Issue 33 D3: a cancelled ixtool leaves nothing behind.

SIGTERM (a cancelled CI job), SIGINT and SIGHUP of a real ``ixtool policy check`` in the
middle of a trace end every process it started — trace servers (user nobody, which used
to be re-parented to init and keep tracing), their waiters, the traced processes — and
remove its ``ixtool-trace-*`` folders.  The test asserts the state after a generous
bounded wait, never a duration.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from inferencex_tools.sandbox.trace import namespaces_available
from tests.conftest import SHARED

ROOT = Path(__file__).resolve().parents[2]
KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"
RECIPE = "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"
SESSION = re.compile(r"/[\w./-]*?ixtool-trace-[A-Za-z0-9_]+")
GENEROUS = 60.0  # seconds: the bound of every wait (the check's trace timeout is 600 s)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tar = SHARED / "corpus" / "inferencex-tree-843c6254f.tar.xz"
    if not tar.exists():
        pytest.skip(f"{tar} not here")
    dest = tmp_path_factory.mktemp("tree")
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    return dest / "inferencex"


def _repo(tree: Path, tmp: Path, marker: str) -> Path:
    """The real tree whose seed recipe blocks in a process named ``marker``."""
    repo = tmp / "repo"
    shutil.copytree(tree, repo, symlinks=True)
    recipe = repo / RECIPE
    lines = recipe.read_text().splitlines(keepends=True)
    lines.insert(1, f"( exec -a {marker} /bin/sleep 1000 )\n")
    recipe.write_text("".join(lines))
    return repo


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _descendants(pid: int) -> dict[int, str | None]:
    out: dict[int, str | None] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        for tid in os.listdir(f"/proc/{p}/task") if os.path.isdir(f"/proc/{p}/task") else ():
            try:
                with open(f"/proc/{p}/task/{tid}/children") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except OSError:
                continue
            for k in kids:
                if k not in out:
                    out[k] = _start_time(k)
                    todo.append(k)
    return out


def _marked(marker: str) -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and marker in _cmdline(int(p))]


def _until(what: Callable[[], object], bound: float = GENEROUS) -> object:
    end = time.monotonic() + bound
    while True:
        got = what()
        if got or time.monotonic() > end:
            return got
        time.sleep(0.1)


MODES = {
    "namespaces": {},
    "bwrap": {"IXTOOL_TRACE_NO_NAMESPACES": "1"},
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_a_signal_mid_trace_ends_every_process_and_folder(
        tree: Path, tmp_path: Path, sig: int, mode: str) -> None:
    from inferencex_tools.sandbox import trace

    if mode == "namespaces" and not namespaces_available():
        pytest.skip("user namespaces unavailable here")
    if mode == "bwrap" and trace.find_bwrap(trace.BASE_PATH, prefix=trace._as_nobody()) is None:
        pytest.skip("bubblewrap cannot build a sandbox here")
    marker = f"ixtool-cancel-{uuid.uuid4().hex[:12]}"
    repo = _repo(tree, tmp_path, marker)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(MODES[mode], PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "inferencex_tools", "policy", "check", "--root", str(repo),
            "--config-keys", KEY, "--timeout", "600", "--jobs", "2"]
    if mode != "namespaces":
        args.append("--allow-unsandboxed")
    proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, text=True)
    try:
        assert _until(lambda: _marked(marker)), "the traced recipe never started"
        started = _descendants(proc.pid)
        sessions = {m for c in map(_cmdline, started) for m in SESSION.findall(c)}
        sessions = {s for s in sessions if "ixtool-trace-" in s and Path(s).is_dir()}
        assert started and sessions, (started, sessions)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=GENEROUS)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def left() -> list[str]:
        alive = [f"{p} {_cmdline(p)}" for p, t in started.items()
                 if t is not None and _start_time(p) == t]
        alive += [f"{p} {_cmdline(p)}" for p in _marked(marker)]
        return alive + [s for s in sessions if os.path.exists(s)]

    _until(lambda: not left())
    assert not left(), left()
    assert proc.returncode == 128 + sig, (proc.returncode, err[-800:])
    assert "Traceback" not in err, err[-2000:]


def test_a_cancelled_session_refuses_new_traces(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """After a cancel, no trace runs and none in flight gives a result: a caller that
    went on would get an error, never a verdict from a trace cut short."""
    from inferencex_tools.sandbox import Cancelled, Session, trace

    monkeypatch.setattr(trace, "find_bwrap", lambda path, **kw: None)
    repo = tmp_path / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "t.sh").write_text("echo hi\n")
    with Session(repo, isolate=False, allow_unsandboxed=True) as s:
        assert s.trace("benchmarks/t.sh", {}).ok
        s.cancel()
        with pytest.raises(Cancelled):
            s.trace("benchmarks/t.sh", {})
        left = s.dir
    assert not left.exists()
