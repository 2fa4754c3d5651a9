"""Issue 33 D2/D5: stubs that behave like the programs they replace.

A server started in the background (``lmcache server … &``, ``vllm serve … &``, a
daemon) stays alive until it is killed and answers its health check, so a recipe's own
liveness checks (``kill -0 $PID``, ``curl --fail …/health``) pass or fail as in a job —
never by scheduling: each formerly flaky case runs 20 times.  A step that changes the
container image's own files (``patch -d $VLLM_SITE_PACKAGES``) runs against the image's
stand-in and is noted, instead of failing the trace.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from inferencex_tools.sandbox import Session, TraceResult
from inferencex_tools.sandbox.trace import namespaces_available

NS = pytest.mark.skipif(not namespaces_available(), reason="user namespaces unavailable")
RUNS = 20


def _repo(tmp: Path, body: str, extra: dict[str, str] | None = None) -> Path:
    repo = tmp / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "t.sh").write_text("#!/bin/bash\nset -euo pipefail\n" + body)
    for rel, text in (extra or {}).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return repo


def _runs(repo: Path, n: int = RUNS, **kw: object) -> list[TraceResult]:
    with Session(repo, **kw) as s:  # type: ignore[arg-type]
        return [s.trace("benchmarks/t.sh", {}, workspace_at=["/workspace"], timeout=30)
                for _ in range(n)]


LIVENESS = """{start} > "$PWD/server.log" 2>&1 &
PID=$!
sleep 1
if ! kill -0 "$PID" 2>/dev/null; then echo "server died during startup" >&2; exit 1; fi
curl --output /dev/null --silent --fail "http://127.0.0.1:8080/healthcheck" || exit 2
kill "$PID"
wait "$PID" 2>/dev/null || true
if kill -0 "$PID" 2>/dev/null; then echo "still alive after kill" >&2; exit 3; fi
if curl --silent --fail "http://127.0.0.1:8080/healthcheck"; then exit 4; fi
echo done
"""

SERVERS = {
    "container tool": "lmcache server --host 127.0.0.1 --port 5555 --http-port 8080",
    "vllm": "vllm serve /models/m --port 8080",
    "sglang module": "python3 -m sglang.launch_server --model-path /m --port 8080",
    "daemon": "mooncake_master --port 8080",
    "router": "vllm-router --port 8080",
}


@NS
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_background_server_lives_until_killed_and_answers_its_health_check(
        tmp_path: Path, server: str) -> None:
    repo = _repo(tmp_path, LIVENESS.format(start=SERVERS[server]))
    for tr in _runs(repo):
        assert tr.ok and tr.stdout_tail.strip() == "done", \
            (tr.returncode, tr.last_line, tr.stderr_tail[-500:])


def test_a_background_server_lives_in_basic_mode_too(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from inferencex_tools.sandbox import trace

    monkeypatch.setattr(trace, "find_bwrap", lambda path, **kw: None)
    repo = _repo(tmp_path, LIVENESS.format(start=SERVERS["container tool"]))
    for tr in _runs(repo, n=5, isolate=False, allow_unsandboxed=True):
        assert tr.ok and tr.stdout_tail.strip() == "done", (tr.last_line, tr.stderr_tail)


@NS
def test_a_server_called_in_the_foreground_returns(tmp_path: Path) -> None:
    """Only a server started in the background waits to be killed: one called in the
    foreground (or a daemon) returns at once, as the recorders did."""
    repo = _repo(tmp_path, "vllm serve /models/m --port 8080 > /dev/null 2>&1\n"
                           "mooncake_master --port 1\n"
                           "( lmcache server --port 2 )\necho after\n")
    tr = _runs(repo, n=1)[0]
    assert tr.ok and tr.stdout_tail.strip() == "after" and tr.seconds < 20, tr.last_line


# the server $PID answers, is killed, and every later health check must fail
KILLED_THEN_CHECKED = """until curl --fail -s http://0.0.0.0:8080/health; do sleep 1; done
kill -9 "$PID"; wait "$PID" 2>/dev/null || true
for i in 1 2 3; do
    if curl --fail -s http://localhost:8080/health; then echo "answered"; exit 1; fi
done
echo down
"""


@NS
def test_a_health_check_of_a_server_that_died_fails(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "vllm serve /m --port 8080 &\nPID=$!\n" + KILLED_THEN_CHECKED)
    for tr in _runs(repo):
        assert tr.ok and tr.stdout_tail.strip() == "down", (tr.last_line, tr.stderr_tail)


@NS
@pytest.mark.skipif(shutil.which("perl") is None, reason="needs perl")
def test_a_server_between_its_fork_and_its_program_is_waited_for(tmp_path: Path) -> None:
    """The race behind the flaky test above, its ordering forced: while a server started
    in the background is between its fork and its program (an exec in progress: its
    command line reads empty; a starved CPU holds a child there for milliseconds), a
    health check once saw neither a fork of the shell nor a stub, answered as if no
    server had started, the recipe killed the server before it registered, and every
    later check answered too.  Here the server's process blanks its command line (as
    mid-exec) and becomes the vllm stub only once a health check waits for it."""
    repo = _repo(tmp_path, r"""mkfifo go
perl -e '$0 = ""; open(my $f, "<", "go") or die; <$f>;
    exec "vllm", "serve", "/m", "--port", "8080"' < /dev/null &
PID=$!
perl -e 'until (grep { open(F, "<", "$_/cmdline") && <F> =~ /sleep\x000\.02\x00/ }
    glob "/proc/[0-9]*") { select(undef, undef, undef, 0.01) }
    open(my $g, ">", "go") or die; print $g "x\n"' < /dev/null &
REL=$!
until { read -r c < "/proc/$PID/comm"; [[ -z $c ]]; } \
    && { read -r r < "/proc/$REL/comm"; [[ $r == perl ]]; }; do :; done
""" + KILLED_THEN_CHECKED)
    for tr in _runs(repo, n=3):
        assert tr.ok and tr.stdout_tail.strip() == "down", (tr.last_line, tr.stderr_tail)
        assert [r.tool for r in tr.records].count("vllm") == 1, tr.records

PATCH = """--- a/vllm/model_executor/gate.py
+++ b/vllm/model_executor/gate.py
@@ -1,1 +1,1 @@
-x = 1
+x = 2
"""


@NS
def test_a_patch_of_the_image_runs_against_its_stand_in(tmp_path: Path) -> None:
    """D5: the recipe patches the container's vLLM (its files are not in the sandbox):
    the step is noted, never a failed trace — whatever the scheduling."""
    repo = _repo(tmp_path, """VLLM_PACKAGE_DIR=$(python3 -c "import importlib.util; \
print(importlib.util.find_spec('vllm').submodule_search_locations[0])")
VLLM_SITE_PACKAGES=$(dirname "$VLLM_PACKAGE_DIR")
patch --dry-run -p1 -d "$VLLM_SITE_PACKAGES" < benchmarks/patches/gate.patch >/dev/null \\
    || { echo "does not apply" >&2; exit 1; }
patch -p1 -d "$VLLM_SITE_PACKAGES" < benchmarks/patches/gate.patch \\
    || { echo "patch failed" >&2; exit 1; }
vllm serve /m --port 8000 > /dev/null 2>&1 &
until curl --fail -s http://0.0.0.0:8000/health; do sleep 1; done
echo launched
""", {"benchmarks/patches/gate.patch": PATCH})
    for tr in _runs(repo, n=5):
        assert tr.ok and "launched" in tr.stdout_tail, (tr.last_line, tr.stderr_tail[-400:])
        assert any("container content" in n and "patch" in n for n in tr.notes), tr.notes
        assert any(r.tool == "vllm" for r in tr.records)


@NS
def test_a_patch_of_the_checkout_that_fails_still_fails(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "patch -p1 -d . < benchmarks/patches/gate.patch\necho after\n",
                 {"benchmarks/patches/gate.patch": PATCH})
    tr = _runs(repo, n=1)[0]
    assert not tr.ok and "after" not in tr.stdout_tail


@NS
def test_the_real_lmcache_recipe_is_traced_the_same_every_time(real_tree: Path) -> None:
    """The real tree (843c6254f) starts `lmcache server … &` and checks it with
    `kill -0` and curl in dsv4_fp4_mi355x_vllm_mtp.sh."""
    env = {"MODEL": "deepseek-ai/DeepSeek-V4-Pro", "TP": "8", "CONC": "4",
           "KV_OFFLOADING": "dram", "KV_OFFLOAD_BACKEND": "lmcache",
           "TOTAL_CPU_DRAM_GB": "2500", "RESULT_DIR": "/workspace/results",
           "DURATION": "1800", "EP_SIZE": "1", "DP_ATTENTION": "false", "PORT": "8888",
           "EVAL_ONLY": "false", "IS_AGENTIC": "1", "MODEL_PREFIX": "dsv4",
           "RUNNER_NAME": "mi355x-amds_0", "RESULT_FILENAME": "dsv4_lmcache_conc4"}
    script = "benchmarks/single_node/agentic/dsv4_fp4_mi355x_vllm_mtp.sh"
    with Session(real_tree) as s:
        for _ in range(RUNS):
            tr = s.trace(script, env, workspace_at=["/workspace"], timeout=60)
            assert tr.ok, (tr.returncode, tr.last_line, tr.stderr_tail[-600:])
            tools = [r.tool for r in tr.records]
            assert "container:lmcache" in tools and "vllm" in tools, tools


@pytest.fixture(scope="module")
def real_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import tarfile

    from tests.conftest import SHARED

    tar = SHARED / "corpus" / "inferencex-tree-843c6254f.tar.xz"
    if not tar.exists():
        pytest.skip(f"{tar} not here")
    dest = tmp_path_factory.mktemp("real")
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    return dest / "inferencex"


# A child that holds a trap for the signal and then starts its program: a signal that
# arrives before the exec runs the trap later in the child, and the exec drops it (what
# a just-forked child does with the trap it inherited; the trap here is its own so the
# window is wide on any machine).  The traced `kill` waits for the program.
FORKED_THEN_EXECS = """trap 'exit 143' TERM
( trap 'echo deferred' TERM; : > "$PWD/ready"
  for ((j = 0; j < 100000; j++)); do :; done
  exec tail -f /dev/null ) &
t=$!
until [[ -e $PWD/ready ]]; do :; done
kill "$t"
wait "$t" || echo "ended $?"
echo done
"""


@NS
@pytest.mark.parametrize("shell", ["traced shell", "child bash"])
def test_a_signal_to_a_child_that_has_not_started_its_program_reaches_the_program(
        tmp_path: Path, shell: str) -> None:
    body = FORKED_THEN_EXECS
    extra = {}
    if shell == "child bash":  # `kill` is the trace's in every bash it starts
        extra = {"benchmarks/child.sh": "#!/bin/bash\n" + body}
        body = "bash benchmarks/child.sh\n"
    repo = _repo(tmp_path, body, extra)
    with Session(repo) as s:
        for _ in range(3):
            tr = s.trace("benchmarks/t.sh", {}, workspace_at=["/workspace"], timeout=30)
            assert tr.ok, (tr.stopped_by, tr.last_line, tr.stdout_tail)
            assert tr.stdout_tail.split() == ["ended", "143", "done"], tr.stdout_tail


# every child has started its program before it is signalled (plain bash has the race too);
# USR1, not HUP: a shell started under nohup passes HUP on ignored (the bash run then waits)
KILL_FORMS = """r() { local rc=0; "$@" || rc=$?; echo "$rc"; }
bg() {
    local c=""; tail -f /dev/null & p=$!
    until [[ $c == tail ]]; do read -r c < "/proc/$p/comm"; done
}
bg
r kill -0 "$p"
kill -s TERM "$p"; r wait "$p"
bg
kill -SIGKILL "$p"; r wait "$p"
bg
kill -n 15 -- "$p"; r wait "$p"
bg
kill -USR1 "$p"; r wait "$p"
kill -l 15
r kill 2>/dev/null
r kill -s NOSUCH "$p" 2>/dev/null
r kill 4000000 2>/dev/null
r kill %9 2>/dev/null
echo done
"""


@NS
def test_the_traced_kill_answers_as_bash_does(tmp_path: Path) -> None:
    repo = _repo(tmp_path, KILL_FORMS)
    bash = subprocess.run(["bash", str(repo / "benchmarks" / "t.sh")], cwd=repo,
                          capture_output=True, text=True, timeout=60)
    with Session(repo) as s:
        tr = s.trace("benchmarks/t.sh", {}, workspace_at=["/workspace"], timeout=30)
    assert tr.ok, (tr.last_line, tr.stderr_tail)
    assert tr.stdout_tail.split() == bash.stdout.split(), (tr.stdout_tail, bash.stdout)


STOP_TREE = """vllm serve /models/m --port 8080 --speculative-config '{"method": "eagle3"}' \\
    > "$PWD/server.log" 2>&1 &
PID=$!
until curl --output /dev/null --silent --fail "http://127.0.0.1:8080/health"; do
    sleep 0.1
done
CHILDREN=$(pgrep -P "$PID" || true)  # a stop helper: the server's tree, then KILL
kill -TERM "$PID"
for c in $CHILDREN; do kill -KILL "$c" 2>/dev/null || true; done
pkill -KILL -P "$PID" || true
wait "$PID" 2>/dev/null || true
echo done
"""


@NS
def test_a_server_stopped_with_its_children_after_its_health_check_keeps_its_record(
        tmp_path: Path) -> None:
    """The library's real stop helper (``stop_background_process_tree``) lists the
    server's children, TERMs it and KILLs them; a server stub records in a child (a kill
    of the server cannot cut its record off).  The server is up — its health check
    answers — only once its record is whole, so a stop after the check never cuts it:
    the trace is ok and holds the launch, every time (it was cut off: PO310, by
    scheduling)."""
    repo = _repo(tmp_path, STOP_TREE)
    for tr in _runs(repo):
        assert tr.ok and tr.stdout_tail.strip() == "done", \
            (tr.returncode, tr.last_line, tr.stderr_tail[-500:])
        served = [r for r in tr.records if r.tool == "vllm"]
        assert len(served) == 1 and served[0].argv[-1] == '{"method": "eagle3"}', \
            [(r.tool, r.argv) for r in tr.records]
