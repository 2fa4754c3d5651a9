"""Security issue #18, items 2-5: the trace sandbox.

Fail-closed and bubblewrap selection are tested everywhere; the namespace-mode attacks
need unprivileged user namespaces (skipped with the reason otherwise); the bubblewrap
live test needs ``bwrap`` (not installed here: skipped with the reason).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferencex_tools.sandbox.trace import Ledger, Session, TraceResult, namespaces_available
from tests.reliability.helpers import ixtool

ROOT = Path(__file__).resolve().parents[2]
NS = pytest.mark.skipif(not namespaces_available(),
                        reason="user namespaces unavailable here: namespace-mode attacks "
                        "not run (fail-closed tests still run)")
SECRET = "ixtool-test-secret-4f1d"


def _repo(tmp: Path, body: str) -> Path:
    repo = tmp / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "t.sh").write_text("#!/bin/bash\n" + body)
    return repo


def _trace(tmp: Path, body: str, timeout: float = 20) -> TraceResult:
    with Session(_repo(tmp, body)) as s:
        assert s.isolation == "namespaces"
        return s.trace("benchmarks/t.sh", {}, timeout=timeout)


# ------------------------------------------------------------------ item 3: fail closed

def test_no_isolation_is_an_error_unless_allowed(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from inferencex_tools.sandbox import trace
    from inferencex_tools.sandbox.isolation import SandboxUnavailable

    monkeypatch.setattr(trace, "find_bwrap", lambda path, **kw: None)
    repo = _repo(tmp_path, "echo hi\n")
    with pytest.raises(SandboxUnavailable) as exc:
        Session(repo, isolate=False)
    assert exc.value.exit_code == 2 and "--allow-unsandboxed" in (exc.value.hint or "")
    with Session(repo, isolate=False, allow_unsandboxed=True) as s:
        assert s.isolation == "basic"


def test_isolation_choice() -> None:
    from inferencex_tools.sandbox.isolation import SandboxUnavailable, choose_isolation

    assert choose_isolation(None, namespaces=True, bwrap="/usr/bin/bwrap",
                            allow_unsandboxed=False).mode == "namespaces"
    got = choose_isolation(None, namespaces=False, bwrap="/usr/bin/bwrap",
                           allow_unsandboxed=False)
    assert (got.mode, got.bwrap) == ("bwrap", "/usr/bin/bwrap")
    for requested in (None, False):
        with pytest.raises(SandboxUnavailable):
            choose_isolation(requested, namespaces=False, bwrap=None, allow_unsandboxed=False)
        assert choose_isolation(requested, namespaces=False, bwrap=None,
                                allow_unsandboxed=True).mode == "basic"
    # issue 27 item 7: turning namespaces off (IXTOOL_TRACE_NO_NAMESPACES=1) skips them
    # and nothing else: bubblewrap still comes before any unsandboxed run
    for namespaces in (True, False):
        for allow in (True, False):
            got = choose_isolation(False, namespaces=namespaces, bwrap="/usr/bin/bwrap",
                                   allow_unsandboxed=allow)
            assert (got.mode, got.bwrap) == ("bwrap", "/usr/bin/bwrap"), (namespaces, allow)


def test_policy_check_fails_closed_from_the_cli(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """No namespaces (forced) and no bubblewrap (as on a host without it): exit 2 with the
    reason; with --allow-unsandboxed the run fails with the error PO305 (issue 27 item 7:
    missing isolation is an error, not a warning)."""
    import json

    from inferencex_tools.cli.main import run
    from inferencex_tools.sandbox import trace

    monkeypatch.setattr(trace, "find_bwrap", lambda path, **kw: None)
    monkeypatch.setenv("IXTOOL_TRACE_NO_NAMESPACES", "1")
    args = ["policy", "check", "--root", str(ROOT), "--config-keys",
            "minimaxm3-fp8-h200-vllm-agentic-mtp", "--format", "json"]

    def cli(*extra: str) -> tuple[object, str, str]:
        with pytest.raises(SystemExit) as exc:
            run([*args, *extra])
        out, err = capsys.readouterr()
        return exc.value.code, out, err

    code, _, err = cli()
    assert code == 2 and "no sandbox" in err, (code, err[-600:])
    code, out, err = cli("--allow-unsandboxed")
    assert code == 1, (code, err[-600:])
    doc = json.loads(out)
    assert doc["info"]["isolation"] == "basic"
    po305 = [f for f in doc["findings"] if f["rule"] == "PO305"]
    assert po305 and po305[0]["severity"] == "error", doc["findings"]


def test_bubblewrap_comes_before_unsandboxed_whatever_the_environment(tmp_path: Path) -> None:
    """PoC (issue 27 item 7): `IXTOOL_TRACE_NO_NAMESPACES=1` with `--allow-unsandboxed`
    ran the recipes without isolation although bubblewrap works here."""
    from inferencex_tools.sandbox import trace

    if trace.find_bwrap(trace.BASE_PATH, prefix=trace._as_nobody()) is None:
        pytest.skip("bubblewrap cannot build a sandbox here")
    args = ("policy", "check", "--root", str(ROOT), "--config-keys",
            "minimaxm3-fp8-h200-vllm-agentic-mtp", "--format", "json", "--allow-unsandboxed")
    r = ixtool(*args, cwd=tmp_path, env={"IXTOOL_TRACE_NO_NAMESPACES": "1"}, timeout=300)
    r.assert_clean_exit()
    assert r.json()["info"]["isolation"] == "bwrap", (r.code, r.err[-600:])
    assert r.code == 0 and "PO305" not in r.rules, (r.code, r.out[-600:])


@pytest.mark.parametrize("missing", ["socket.send_fds", "os.pidfd_open"])
def test_no_weaker_namespace_mode_without_the_trace_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    """PoC: a Python without `socket.send_fds`/`os.pidfd_open` fell back to a namespace
    layout that showed the whole host read-only at `/.host`."""
    from inferencex_tools.sandbox import trace
    from inferencex_tools.sandbox.isolation import SandboxUnavailable

    mod, name = missing.split(".")
    monkeypatch.delattr({"socket": socket, "os": os}[mod], name)
    monkeypatch.setattr(trace, "find_bwrap", lambda path, **kw: None)
    repo = _repo(tmp_path, "test -e /.host && echo HOST-VIEW\necho ran\n")
    with pytest.raises(SandboxUnavailable) as exc:
        Session(repo)
    assert exc.value.exit_code == 2
    with Session(repo, allow_unsandboxed=True) as s:
        assert s.isolation == "basic"


@NS
def test_a_trace_server_that_cannot_start_fails_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PoC: when the trace server could not enter its namespaces, traces fell back to
    `unshare` and the `/.host` layout."""
    from inferencex_tools.sandbox import trace
    from inferencex_tools.sandbox.isolation import SandboxUnavailable

    class Dead:
        ok, error = False, "user namespace refused"

        def close(self) -> None:
            pass

    monkeypatch.setattr(trace, "_Server", lambda session: Dead())
    with Session(_repo(tmp_path, "test -e /.host && echo HOST-VIEW\n")) as s:
        assert s.isolation == "namespaces"
        with pytest.raises(SandboxUnavailable, match="user namespace refused"):
            s.trace("benchmarks/t.sh", {}, timeout=10)


def test_bwrap_command_line() -> None:
    from inferencex_tools.sandbox.isolation import bwrap_argv

    argv = bwrap_argv("/usr/bin/bwrap", trace_dir="/s/t/1", readonly_after=("/s",))
    text = " ".join(argv)
    for part in ("--unshare-all", "--die-with-parent", "--new-session", "--uid 65534",
                 "--gid 65534", "--cap-drop ALL", "--ro-bind / /", "--dev /dev",
                 "--proc /proc", "--tmpfs /tmp", "--tmpfs /run"):
        assert part in text, part
    assert "--share-net" not in argv
    # order: host read-only, then the own /dev /proc /tmp /run, then the session read-only
    # again, the trace directory writable last
    assert argv.index("/dev") < argv.index("/s") < argv.index("/s/t/1")
    assert argv[-3:] == ["--bind", "/s/t/1", "/s/t/1"]


@pytest.mark.skipif(shutil.which("bwrap") is None,
                    reason="bubblewrap (bwrap) is not installed here: live bwrap run skipped "
                    "(its command line and selection are tested above)")
def test_bwrap_live(tmp_path: Path) -> None:
    from inferencex_tools.sandbox.isolation import bwrap_argv

    bw = shutil.which("bwrap")
    assert bw is not None
    trace = tmp_path / "t"
    trace.mkdir(mode=0o777)
    argv = bwrap_argv(bw, trace_dir=str(trace))
    p = subprocess.run([*argv, "sh", "-c", f"id -u; touch {trace}/ok; touch /etc/x || echo RO;"
                        " (exec 3<>/dev/tcp/127.0.0.1/1) 2>/dev/null || echo NONET"],
                       capture_output=True, text=True, timeout=30, check=False)
    if p.returncode != 0 and "Operation not permitted" in p.stderr:
        pytest.skip(f"bwrap cannot create namespaces here: {p.stderr.strip()}")
    assert "65534" in p.stdout and "RO" in p.stdout and (trace / "ok").exists()


@pytest.mark.skipif(shutil.which("bwrap") is None,
                    reason="bubblewrap (bwrap) is not installed here: the live bwrap trace is "
                    "skipped (.ci/run installs it where apt-get works)")
def test_bwrap_trace_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole trace in bubblewrap mode (namespace mode turned off): an unprivileged
    user (as root: never root without capabilities, which still reads /etc/shadow), no
    capabilities, no network, the host read-only, records through the ledger, which the
    trace can neither read nor remove, and files it writes as bookkeeping ignored."""
    from inferencex_tools.sandbox import trace

    monkeypatch.setattr(trace, "namespaces_available", lambda: False)
    repo = _repo(tmp_path, "id -u; grep CapEff /proc/self/status\n"
                 "head -c1 /etc/shadow >/dev/null 2>&1 && echo SHADOW-READ\n"
                 "touch /etc/ixtool-x 2>/dev/null && echo ETC-WRITTEN\n"
                 "(exec 3<>/dev/tcp/127.0.0.1/22) 2>/dev/null && echo NET\n"
                 "echo ok > $HOME/own && echo HOME-WRITABLE\n"
                 "vllm serve m --tp 8\n"
                 "L=$(readlink -f $HOME/../.ix/trace)/ledger\n"
                 "rm -f $L 2>/dev/null && echo REMOVED\n"
                 "timeout 1 cat $L >/dev/null 2>&1 && echo READ\n"
                 "mkdir -p $HOME/../.ix/records; : > $HOME/../.ix/done\n"
                 "printf 'vllm\\0/w\\0' > $HOME/../.ix/records/1-1-1.rec\nexit 1\n")
    with Session(repo) as s:
        if s.isolation != "bwrap":
            pytest.skip(f"bwrap cannot build a sandbox here (isolation {s.isolation})")
        tr = s.trace("benchmarks/t.sh", {}, timeout=20, stop=("sbatch",))
    out = tr.stdout_tail
    assert out.split()[0] == "65534" and "CapEff:\t0000000000000000" in out, out
    for word in ("SHADOW-READ", "ETC-WRITTEN", "NET", "REMOVED", "READ"):
        assert word not in out.split(), out
    assert "HOME-WRITABLE" in out, (out, tr.stderr_tail[-500:])
    assert [r.argv for r in tr.records] == [("vllm", "serve", "m", "--tp", "8")]
    assert not tr.stopped and not tr.ok and tr.returncode == 1


# ------------------------------------------------------------------ item 4: namespace mode

@NS
def test_root_is_mapped_to_an_unprivileged_uid(tmp_path: Path) -> None:
    tr = _trace(tmp_path, "cat /proc/self/uid_map; grep ^Groups: /proc/self/status\n"
                "cat /etc/shadow > /dev/null 2>&1 && echo SHADOW-READ || echo SHADOW-DENIED\n")
    out = tr.stdout_tail
    if os.geteuid() == 0:
        assert out.split()[:3] == ["0", "65534", "1"], out
        assert "SHADOW-DENIED" in out, out
    assert out.split("Groups:")[1].split("\n")[0].strip() in ("", "0"), out


@NS
def test_minimal_dev_private_run_tmp_and_read_only_rest(tmp_path: Path) -> None:
    marker = Path("/tmp") / f"ixtool-host-marker-{os.getpid()}"
    marker.write_text("host")
    try:
        tr = _trace(tmp_path, f"ls /dev | tr '\\n' ' '; echo\n"
                    f"ls -A /run | wc -l\ntest -e {marker} && echo HOST-TMP-SEEN\n"
                    "for p in /dev/x /usr/x /etc/x /opt/x /sys/x; do "
                    "touch $p 2>/dev/null && echo WROTE $p; done\n"
                    "echo ok > $HOME/own && echo HOME-WRITABLE\n")
    finally:
        marker.unlink()
    lines = tr.stdout_tail.splitlines()
    assert set(lines[0].split()) <= {"null", "zero", "full", "random", "urandom", "tty",
                                     "fd", "stdin", "stdout", "stderr", "shm"}, lines[0]
    assert lines[1] == "0", lines
    assert "HOST-TMP-SEEN" not in tr.stdout_tail and "WROTE" not in tr.stdout_tail
    assert "HOME-WRITABLE" in tr.stdout_tail


@NS
def test_unmounting_proc_shows_no_host_process(tmp_path: Path) -> None:
    tr = _trace(tmp_path, "umount /proc 2>/dev/null; umount -l /proc 2>/dev/null\n"
                f"test -e /proc/{os.getpid()} && echo HOST-PID-SEEN\n"
                "ls /proc | grep -c '^[0-9]'\n")
    assert "HOST-PID-SEEN" not in tr.stdout_tail
    assert int(tr.stdout_tail.split()[-1]) < 20, tr.stdout_tail


ESCAPE = """
import os
caps = [ln.split()[1] for ln in open("/proc/self/status") if ln.startswith("CapEff")]
print("CAPS", caps[0])
try:
    os.mkdir("/tmp/esc")
    os.chroot("/tmp/esc")
    for _ in range(40):
        os.chdir("..")
    os.chroot(".")
    print("ESCAPED", sorted(os.listdir("/")))
except OSError as exc:
    print("STAYED", exc)
"""


@NS
def test_trace_has_no_capabilities_and_cannot_leave_its_root(tmp_path: Path) -> None:
    """PoC: the traced shell was the namespace's root with every capability: a chroot
    escape reached the server's mount namespace (the host's `/`, `/proc`), and its
    read-only mounts (the stubs at /venv) could be remounted read-write."""
    py = shutil.which("python3", path="/usr/bin:/bin")
    if py is None:
        pytest.skip("no system python3 to run the escape probe")
    tr = _trace(tmp_path, f"{py} - <<'EOF'\n{ESCAPE}EOF\n"
                "mount -o remount,rw,bind /venv 2>/dev/null && echo REMOUNTED\n"
                "umount -l /venv 2>/dev/null && echo UNMOUNTED\n"
                "unshare -Urm sh -c 'mount -o remount,rw,bind /venv && echo NESTED' "
                "2>/dev/null\n")
    out = tr.stdout_tail
    assert "CAPS 0000000000000000" in out, out
    assert "STAYED" in out and "ESCAPED" not in out, out
    assert "REMOUNTED" not in out and "UNMOUNTED" not in out and "NESTED" not in out, out


FORK_BOMB = """
import os, time
n = 0
try:
    while n < 5000:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
except OSError:
    pass
print("FORKED", n)
"""
ALLOCATE = """
try:
    b = bytearray(3 << 30)
    print("ALLOCATED")
except MemoryError:
    print("NOMEM")
"""


@NS
def test_process_and_memory_limits(tmp_path: Path) -> None:
    """PoC: 1,738 processes in 10 s; 3 GiB allocated."""
    py = shutil.which("python3", path="/usr/bin:/bin")
    if py is None:
        pytest.skip("no system python3 to run the fork/allocation probe")
    tr = _trace(tmp_path, f"{py} - <<'EOF'\n{FORK_BOMB}EOF\n", timeout=30)
    out = tr.stdout_tail
    # the kernel's limit (512 per host uid) holds the forks; alive for 3 s they pass the
    # trace's bound (128 at once): it is stopped, no verdict.  The uid's limit counts every
    # process of that uid on the machine (other traces, other test workers): when they
    # hold most of it, fork fails before the bound is reached — contained all the same
    forked = int(out.split("FORKED")[1].split()[0]) if "FORKED" in out else None
    assert forked is None or forked < 600, out
    if forked is None or forked > 128:
        assert (tr.stopped_by or "").startswith("processes: ") and not tr.ok, tr.stopped_by
    (tmp_path / "repo").rename(tmp_path / "repo-1")
    tr = _trace(tmp_path, f"{py} - <<'EOF'\n{ALLOCATE}EOF\n", timeout=30)
    assert "NOMEM" in tr.stdout_tail and "ALLOCATED" not in tr.stdout_tail, tr.stdout_tail


@NS
@pytest.mark.parametrize("where", ["$HOME", "/dev/shm", "/mnt", "/tmp"])
def test_disk_written_by_a_trace_is_capped(tmp_path: Path, where: str) -> None:
    """PoC: 287 MB written past the 64 MiB per-file cap."""
    tr = _trace(tmp_path, f"mkdir -p {where}; for i in $(seq 1 40); do "
                f"head -c 10000000 /dev/zero > {where}/f$i || break; done; sleep 5\n",
                timeout=30)
    stopped = any("MiB written" in e for e in tr.events)
    full = "No space left on device" in tr.stderr_tail  # the size of the trace's own tmpfs
    assert stopped or full, (tr.events, tr.stderr_tail[-300:])
    assert not tr.timed_out, tr.events  # ended by the cap or the full disk, not the 30 s
    if stopped:  # killed for it: no verdict
        assert not tr.ok and (tr.stopped_by or "").startswith("disk: "), tr.stopped_by


@NS
def test_every_process_ends_with_the_trace(tmp_path: Path) -> None:
    # the real sleep (PATH's is the trace's 0.05 s stub: the orphans would end anyway)
    sleep = shutil.which("sleep", path="/usr/bin:/bin")
    assert sleep is not None
    tag = f"ixtool-orphan-{os.getpid()}"
    tr = _trace(tmp_path, f"setsid bash -c 'exec -a {tag} {sleep} 300' & disown\n"
                f"(setsid nohup bash -c 'exec -a {tag} {sleep} 300' >/dev/null 2>&1 &)\n"
                f"{sleep} 0.5\nps -eo args | grep -c '^{tag}'\nexit 0\n")
    assert tr.stdout_tail.split()[-1] == "2", tr.stdout_tail  # they ran
    left = subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True, check=False)
    for pid in left.stdout.split():
        subprocess.run(["kill", "-9", pid], check=False)
    assert left.stdout.strip() == "", left.stdout


@pytest.mark.parametrize("ending", ["exit", "stop", "timeout"])
def test_unsandboxed_traces_leave_no_process(tmp_path: Path, ending: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """PoC (--allow-unsandboxed): a `setsid` child left the trace's process group and
    session and outlived the trace."""
    from inferencex_tools.sandbox import trace

    monkeypatch.setattr(trace, "find_bwrap", lambda path, **kw: None)
    sleep = shutil.which("sleep", path="/usr/bin:/bin")
    assert sleep is not None
    tag = f"ixtool-unsandboxed-orphan-{os.getpid()}-{ending}"
    end = {"exit": "exit 0", "stop": "sbatch job.sh", "timeout": f"exec {sleep} 60"}[ending]
    repo = _repo(tmp_path, f"setsid bash -c 'exec -a {tag} {sleep} 300' & disown\n"
                 f"(setsid nohup bash -c 'exec -a {tag} {sleep} 300' >/dev/null 2>&1 &)\n"
                 f"{sleep} 0.5\n{end}\n")
    with Session(repo, isolate=False, allow_unsandboxed=True) as s:
        assert s.isolation == "basic"
        tr = s.trace("benchmarks/t.sh", {}, timeout=3, stop=("sbatch",))
    assert tr.timed_out is (ending == "timeout") and tr.stopped is (ending == "stop")
    left = subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True, check=False)
    for pid in left.stdout.split():  # do not leave them behind when the test fails
        subprocess.run(["kill", "-9", pid], check=False)
    assert left.stdout.strip() == "", left.stdout


@pytest.fixture
def listener() -> Iterator[int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    try:
        yield int(srv.getsockname()[1])
    finally:
        srv.close()


@NS
def test_no_network_not_even_loopback(tmp_path: Path, listener: int) -> None:
    tr = _trace(tmp_path, f"(exec 3<>/dev/tcp/127.0.0.1/{listener}) 2>/dev/null "
                "&& echo CONNECTED || echo BLOCKED\n")
    assert "BLOCKED" in tr.stdout_tail, tr.stdout_tail


# ------------------------------------------------------------------ items 2, 5: outputs, tells

@NS
def test_host_secrets_are_not_printed_through_replaced_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PoC: the recipe replaced the trace's capture/bookkeeping files by links to
    ixtool's /proc/<pid>/environ; ixtool reopened them by name and printed them."""
    monkeypatch.setenv("IXTOOL_SECRET_TEST", SECRET)
    tr = _trace(tmp_path, "cd $HOME/..\nfor f in $(find . -maxdepth 3 -not -path './repo*' "
                "-type f 2>/dev/null); do ln -sf /proc/1/environ $f; done\n"
                f"ln -sf /proc/{os.getpid()}/environ .ix/events 2>/dev/null\n"
                "mkdir -p .ix/records; ln -sf /proc/self/environ .ix/records/1-2-3.rec\n"
                "echo to-stderr >&2\n")
    blob = tr.stdout_tail + tr.stderr_tail + repr(tr.records) + repr(tr.events) + \
        repr(tr.notes)
    assert SECRET not in blob
    assert "to-stderr" in tr.stderr_tail


@NS
def test_no_ixtool_specific_path_is_visible(tmp_path: Path) -> None:
    tr = _trace(tmp_path, "echo $HOME $PWD $PATH $TMPDIR; ls -a / $HOME $HOME/.. | tr '\\n' ' '\n"
                "test -e $HOME/.ixtrace && echo TELL\n")
    text = tr.stdout_tail.lower()
    assert "ixtrace" not in text and "ixtool" not in text and "TELL" not in tr.stdout_tail, text


def _line(rid: str, kind: str, *items: str) -> bytes:
    return f"{rid} {kind} {''.join(i + chr(9) for i in items)}\n".encode()


def _record(rid: str, tool: str, *argv: str) -> bytes:
    lines = [_line(rid, "T", tool), _line(rid, "A", *argv), _line(rid, "W", "/w")]
    return b"".join(lines) + _line(rid, "Z", str(len(lines)))


def test_ledger_is_read_by_shape_and_cap() -> None:
    """PoC (formerly record files): a record named evil.json, list-shaped, not a stub,
    oversized: ignored, never an error; what is not a stub's line counts as tampering."""
    led = Ledger()
    led.feed(_record("1-1-1", "vllm", "serve", "m"))
    led.feed(_record("2-2-2", "not-a-stub", "x"))
    led.feed(b"".join(_line("3-3-3", "a" if n else "A", *["x"] * 200) for n in range(100))
             + _line("3-3-3", "T", "vllm") + _line("3-3-3", "Z", "101"))
    led.feed(b"[1, 2, 3]\n")  # not a ledger line
    led.feed(b"4-4-4 A " + b"y" * 20_000 + b"\n")  # longer than any stub line
    led.feed(_line("1-1-1", "A", "--late"))  # a line for a complete record
    led.feed(_record("5-5-5", "vllm", "a")[:-3] + b"9\t\n")  # count does not match
    led.close()
    recs = led.records()
    assert [r.tool for r in recs] == ["vllm", "vllm"]
    assert recs[0].argv == ("serve", "m")
    assert len(recs[1].argv) == 20_000
    assert led.tampered == 4, led.tampered
    assert led.overflow is None and led.cut == 0
    split = Ledger()  # a line cut anywhere between two reads, escapes kept
    data = _record("7-7-7", "vllm", "a\\\\b\\nc\\td", "", "e")
    for k in range(len(data)):
        split.feed(data[k:k + 1])
    assert split.records()[0].argv == ("a\\b\nc\td", "", "e")


# ------------------------------------------------------------------ items 1, 2: bookkeeping

TAMPER = {
    # the stop marker forged: a failing recipe claimed to have reached its step
    "forged stop": (": > $HOME/../.ix/done 2>/dev/null; mkdir -p $HOME/../.ix\n"
                    ": > $HOME/../.ix/done; exit 1\n"),
    # records written as files: a launch the recipe never made
    "forged record files": ("mkdir -p $HOME/../.ix/records; cd $HOME/../.ix/records\n"
                            "printf 'vllm\\0/w\\0' > 1-1-1.rec; printf 'serve\\0good\\0' "
                            "> 1-1-1.argv\nexit 1\n"),
    # a real launch, then its record removed
    "removed record": "vllm serve bad-model\nrm -rf $HOME/../.ix/records\nexit 1\n",
    # the notes file swapped for /dev/null before a note
    "swapped notes": ("mkdir -p $HOME/../.ix; ln -sf /dev/null $HOME/../.ix/events\n"
                      "source /nonexistent/runner-env\nexit 1\n"),
}


@NS
@pytest.mark.parametrize("case", sorted(TAMPER))
def test_bookkeeping_is_out_of_the_recipes_reach(tmp_path: Path, case: str) -> None:
    """PoC: the stop marker, records and notes were files in the trace's own directory:
    a recipe forged, removed or swapped them and changed what ixtool concluded."""
    tr = _trace(tmp_path, TAMPER[case])
    assert not tr.ok and not tr.stopped, case
    launched = [r.argv for r in tr.records if r.tool == "vllm"]
    if case == "removed record":
        assert launched == [("vllm", "serve", "bad-model")], tr.records
    else:
        assert launched == [], tr.records
    if case == "swapped notes":
        assert tr.notes == ["missing runner file not sourced: /nonexistent/runner-env"]


@NS
def test_the_ledger_cannot_be_read_removed_or_fed_garbage(tmp_path: Path) -> None:
    """The ledger is a FIFO the trace may only write: reading, removing, replacing or
    re-permitting it fails, and a line that is not a stub's fails the trace."""
    tr = _trace(tmp_path, "vllm serve m\nL=/venv/trace/ledger\n"
                "timeout 1 cat $L >/dev/null 2>&1 && echo READ\n"
                "rm -f $L 2>/dev/null && echo REMOVED\n"
                "chmod 666 $L 2>/dev/null && echo CHMOD\n"
                "mv $L /tmp/x 2>/dev/null && echo MOVED\n"
                "echo > /venv/trace/conf 2>/dev/null && echo CONF\n"
                "echo 'garbage' > $L\n")
    for word in ("READ", "REMOVED", "CHMOD", "MOVED", "CONF"):
        assert word not in tr.stdout_tail, tr.stdout_tail
    assert [r.argv for r in tr.records] == [("vllm", "serve", "m")]
    assert not tr.ok and any("bookkeeping was tampered" in e for e in tr.events), tr.events


@NS
def test_concurrent_stubs_deliver_whole_records(tmp_path: Path) -> None:
    """Lines of stubs that record at the same time never mix (each is one atomic write),
    also for items longer than one line."""
    big = "x" * 5000
    # (a client, not a server: a server started in the background runs until it is
    # killed, and `wait` would wait for it as in a job)
    tr = _trace(tmp_path, f"for i in $(seq 1 12); do aiperf profile m$i --big {big} & done\n"
                "wait\n")
    assert not tr.events, tr.events
    got = sorted(r.argv[2] for r in tr.records)
    assert got == sorted(f"m{i}" for i in range(1, 13))
    assert all(r.argv[-1] == big for r in tr.records)


def _big(rid: str) -> bytes:
    """A complete record of 4,000 lines (just under 4 MiB of one argv word)."""
    lines = [_line(rid, "T", "srun"), _line(rid, "A", "y" * 998)]
    lines += [_line(rid, "a", "y" * 999)] * 3998
    return b"".join(lines) + _line(rid, "Z", str(len(lines)))


def _over_items(kind: str) -> bytes:
    lines = [_line("3-3-3", "T", "vllm")]
    lines += [_line("3-3-3", kind if n == 0 else kind.lower(), *["x"] * 201)
              for n in range(100)]
    return b"".join(lines) + _line("3-3-3", "Z", str(len(lines)))


LEDGER_CAPS = {
    "finished records": b"".join(_record(f"9-{i}-1", "srun") for i in range(4001)),
    "open records": b"".join(_line(f"9-{i}-1", "T", "srun") for i in range(8001)),
    "bytes": b"".join(_big(f"9-{i}-1") for i in range(17)),
    "notes": b"".join(_line(f"9-{i}-1", "N", "n" * 900) for i in range(80)),
    "captured files": b"".join(_line("4-4-4", "P", f"/f{i}.yaml") for i in range(65)),
    "item size": _line("5-5-5", "F", "z") + b"".join(
        _line("5-5-5", "f", "z" * 999) for _ in range(4300)),
    "argv words": _over_items("A"),
    "environment entries": _over_items("E"),
}


@pytest.mark.parametrize("cap", sorted(LEDGER_CAPS))
def test_every_ledger_cap_fails_the_trace(cap: str) -> None:
    """PoC (issue 27, item 3): past a ledger cap the next genuine record was silently
    dropped (a recipe filled the 4,000 finished or 8,000 open records, then launched
    vllm with a wrong AL: the gate passed).  Every cap is now an overflow: nothing after
    it is read, and the ledger gives no verdict (its problem names the cap)."""
    led = Ledger()
    led.feed(_record("1-1-1", "vllm", "serve", "good"))
    led.feed(LEDGER_CAPS[cap])
    led.feed(_record("2-2-2", "vllm", "serve", "bad"))
    led.close()
    led.records()
    assert led.overflow is not None and "overflowed" in (led.problem() or ""), cap


def test_a_record_cut_off_by_the_end_of_the_trace_fails_it() -> None:
    """A record begun and not complete when the trace ended (its stub killed, the shell
    gone while it wrote) was dropped without a word: now it is the ledger's problem."""
    led = Ledger()
    led.feed(_record("1-1-1", "vllm", "serve", "good"))
    led.feed(_line("2-2-2", "T", "vllm") + _line("2-2-2", "A", "serve", "bad"))
    led.close()
    assert [r.argv for r in led.records()] == [("serve", "good")]
    assert led.cut == 1 and "cut off" in (led.problem() or "")


def test_a_record_begun_after_the_script_ended_is_not_cut_off() -> None:
    """The entry script says when the traced script has ended (X), after every stub
    still recording had its second: a stub that begins only then is cut by the end of
    the job, as a real job's end kills it; a record begun before is cut off."""
    led = Ledger()
    led.feed(_line("2-2-2", "T", "vllm") + b"1-1-1 X \n" + _line("3-3-3", "T", "vllm"))
    led.close()
    assert led.cut == 1 and "1 record(s) cut off" in (led.problem() or "")
    assert led.problem(stopped=True) is None  # a stop cuts what ran beside it


@pytest.mark.parametrize("mode", ["namespaces", "bwrap"])
def test_a_launch_in_the_background_at_the_end_is_never_a_false_failure(
        tmp_path: Path, mode: str) -> None:
    """A stub started in the background just before the script exits either records in
    full (it gets a second to finish) or never began: never a cut-off record (PO310)
    for a recipe that does nothing wrong."""
    from inferencex_tools.sandbox import trace

    if mode == "namespaces" and not namespaces_available():
        pytest.skip("user namespaces unavailable here")
    if mode == "bwrap" and trace.find_bwrap(trace.BASE_PATH, prefix=trace._as_nobody()) is None:
        pytest.skip("bubblewrap cannot build a sandbox here")
    big = "x" * 3000
    with Session(_repo(tmp_path, "for i in $(seq 300); do export V$i=" + big[:200] + "; done\n"
                       f"vllm serve m --big {big} &\nexit 0\n"),
                 isolate=None if mode == "namespaces" else False) as s:
        assert s.isolation == mode
        got = [s.trace("benchmarks/t.sh", {}, timeout=20) for _ in range(8)]
    assert [t.stopped_by for t in got] == [None] * 8, [t.stopped_by for t in got]
    assert all(t.ok for t in got)
