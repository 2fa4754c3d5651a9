"""Issue 32 item 2 (the recording part): what a trace reads of the repository.

Every trace records the repository paths its processes looked up, listed or found
missing (:class:`inferencex_tools.sandbox.ReadSet`), whatever program did it; the
selection decides with it what a change reaches.  Where a mode cannot know (bubblewrap,
unsandboxed) or the trace was cut short, the read set is None — never a partial set.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from inferencex_tools.sandbox import Limits, ReadSet, Session, TraceResult
from inferencex_tools.sandbox.trace import namespaces_available

NS = pytest.mark.skipif(not namespaces_available(),
                        reason="user namespaces unavailable here: the read view is the "
                        "namespace mode's")


def _repo(tmp: Path, files: dict[str, str], links: dict[str, str] | None = None) -> Path:
    repo = tmp / "repo"
    for rel, text in files.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        if rel.endswith(".sh"):
            p.chmod(0o755)
    for rel, target in (links or {}).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, repo / rel)
    return repo


def _reads(tr: TraceResult) -> ReadSet:
    assert tr.ok, (tr.returncode, tr.stderr_tail[-800:], tr.stopped_by)
    assert tr.reads is not None, tr.isolation
    return tr.reads


TWO_STEP = {
    # a computed data-file name, a symlinked data file, a sourced glob, a Python helper
    # importing a repository module, a file read by cat, a listing by ls
    "benchmarks/recipe.sh": """set -euo pipefail
source "$(dirname "$0")/lib.sh"
AL=$(cat "${0%.sh}.al")
PINNED=$(cat benchmarks/pinned.yaml)
for f in benchmarks/conf.d/*.env; do source "$f"; done
ls benchmarks/conf.d > /dev/null
[ -f benchmarks/override.env ] && source benchmarks/override.env
[ -f toplevel-override.env ] && source toplevel-override.env
python3 benchmarks/helper.py
echo "AL=$AL PINNED=$PINNED"
""",
    "benchmarks/lib.sh": "helper() { :; }\n",
    "benchmarks/recipe.al": "2.83\n",
    "data/pinned.yaml": "al: 2.83\n",
    "benchmarks/conf.d/a.env": "A=1\n",
    "benchmarks/conf.d/b.env": "B=2\n",
    "benchmarks/helper.py": "import alvalue\nprint(alvalue.AL)\n",
    "benchmarks/alvalue.py": "AL = 2.83\n",
    "benchmarks/unrelated.sh": "echo never read\n",
    "README.md": "not read\n",
}


@NS
def test_a_trace_records_what_any_program_reads(tmp_path: Path) -> None:
    repo = _repo(tmp_path, TWO_STEP, {"benchmarks/pinned.yaml": "../data/pinned.yaml"})
    with Session(repo) as s:
        assert s.isolation == "namespaces"
        tr = s.trace("benchmarks/recipe.sh", {}, workspace_at=["/workspace"])
    r = _reads(tr)
    assert "AL=2.83 PINNED=al: 2.83" in tr.stdout_tail
    for path in ("benchmarks/recipe.sh", "benchmarks/lib.sh", "benchmarks/recipe.al",
                 "benchmarks/pinned.yaml", "data/pinned.yaml",  # the link and its target
                 "benchmarks/conf.d/a.env", "benchmarks/conf.d/b.env",
                 "benchmarks/helper.py", "benchmarks/alvalue.py"):  # the Python import
        assert path in r.files, (path, sorted(r.files))
    assert "benchmarks/conf.d" in r.listed  # the glob and ls
    # looked up and not there: a change adding them changes the run
    assert {"benchmarks/override.env", "toplevel-override.env"} <= r.missing
    # Python's import system looked up, in the script's directory, each name it tried:
    # a module or package added under one of them would change the run (nothing else
    # added there would: the directory is not listed)
    assert "benchmarks" not in r.listed, sorted(r.listed)
    assert {"benchmarks/alvalue", "benchmarks/alvalue.so"} <= r.missing, sorted(r.missing)
    assert "benchmarks/unrelated.sh" not in r.files and "README.md" not in r.files
    assert not r.files & r.missing


IMPORTS = {
    "benchmarks/t.sh": """set -e
python3 benchmarks/imp.py
python3 -c 'import json; print("root", json.dumps(1))'
python3 tools/lister.py
mkdir -p benchmarks/made && echo 'V = 7' > benchmarks/made/gen.py
python3 -c 'import sys; sys.path.insert(0, "benchmarks/made"); import gen; print("gen", gen.V)'
""",
    "benchmarks/imp.py": "import mod\nprint('mod', mod.V)\n",
    "benchmarks/mod.py": "V = 1\n",
    "benchmarks/README.md": "x\n",
    "tools/lister.py": "import os\nprint('listed', sorted(os.listdir('tools/data')))\n",
    "tools/data/a.txt": "a\n",
}


@NS
def test_imports_look_up_the_names_they_try(tmp_path: Path) -> None:
    """Python's path finder, in the workspace, looks up each name it tries instead of
    listing the directory: the run depends on those paths (found or missing), not on
    every entry beside them; a listing a program asks for is still a listing, and a
    module the run wrote itself imports as usual."""
    repo = _repo(tmp_path, IMPORTS)
    with Session(repo) as s:
        tr = s.trace("benchmarks/t.sh", {}, workspace_at=["/workspace"])
    r = _reads(tr)
    out = tr.stdout_tail
    assert "mod 1" in out and "root 1" in out and "listed ['a.txt']" in out, out
    assert "gen 7" in out, out
    assert "benchmarks/mod.py" in r.files and "benchmarks/mod" in r.missing, r
    assert {"json", "json.py", "json.pyc"} <= r.missing  # at the root, for `python3 -c`
    assert "tools/data" in r.listed  # os.listdir
    assert not {"", "benchmarks", "tools"} & r.listed, sorted(r.listed)
    assert "benchmarks/README.md" not in r.files | r.missing


@NS
def test_an_executed_repository_program_is_a_read(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"benchmarks/t.sh": "tools/probe && echo ran\n"})
    (repo / "tools").mkdir()
    true = shutil.which("true") or "/bin/true"
    shutil.copyfile(os.path.realpath(true), repo / "tools" / "probe")
    (repo / "tools" / "probe").chmod(0o755)
    with Session(repo) as s:
        tr = s.trace("benchmarks/t.sh", {})
    assert "ran" in tr.stdout_tail
    assert "tools/probe" in _reads(tr).files


@NS
def test_parallel_traces_each_get_their_own_reads(tmp_path: Path) -> None:
    files = {f"benchmarks/t{i}.sh": f"cat data/d{i}.txt; [ -e data/x{i} ] || true\n"
             for i in range(6)}
    files.update({f"data/d{i}.txt": f"{i}\n" for i in range(6)})
    repo = _repo(tmp_path, files)
    out: dict[int, TraceResult] = {}
    with Session(repo) as s:
        def one(i: int) -> None:
            for _ in range(3):
                out[i] = s.trace(f"benchmarks/t{i}.sh", {})
        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for i, tr in out.items():
        r = _reads(tr)
        assert {p for p in r.files if p.startswith("data/")} == {f"data/d{i}.txt"}, r
        assert {p for p in r.missing if p.startswith("data/")} == {f"data/x{i}"}, r


@NS
def test_the_sandboxes_own_bookkeeping_is_not_a_read(tmp_path: Path) -> None:
    """The srun stub looks for copies of the checkout among the step's mounts: that is
    ixtool's work, not the launcher's, and must not list the repository's root."""
    repo = _repo(tmp_path, {
        "runners/launch.sh": 'srun --container-mounts="$GITHUB_WORKSPACE:/workspace" '
                             "bash benchmarks/x.sh\n",
        "benchmarks/x.sh": "echo hi\n"})
    with Session(repo) as s:
        tr = s.trace("runners/launch.sh", {"GITHUB_WORKSPACE": "/github/workspace"},
                     workspace_at=["/github/workspace"], stop=("srun",))
    assert tr.stopped, tr.stderr_tail
    r = _reads(tr)
    assert "" not in r.listed, r
    assert r.files == {"runners", "runners/launch.sh"}, r


@NS
def test_the_workspace_is_the_checkout_writable_and_still_recorded(tmp_path: Path) -> None:
    """The workspace is an overlay on the recorded view: a recipe edits a checked-out file
    in place (as in a job), and what it reads afterwards is its own copy."""
    repo = _repo(tmp_path, {"benchmarks/t.sh": "sed -i s/2.83/3.60/ cfg/al.txt\n"
                                               "cat cfg/al.txt\nrm cfg/other.txt\n"
                                               "[ -e cfg/other.txt ] && exit 3\n"
                                               "echo new > cfg/made.txt\n",
                            "cfg/al.txt": "2.83\n", "cfg/other.txt": "x\n"})
    with Session(repo) as s:
        tr = s.trace("benchmarks/t.sh", {})
        again = s.trace("benchmarks/t.sh", {})  # each trace starts from the checkout
    assert tr.stdout_tail.strip() == "3.60" and again.stdout_tail.strip() == "3.60"
    assert (repo / "cfg" / "al.txt").read_text() == "2.83\n"  # the checkout is untouched
    r = _reads(again)
    assert {"cfg/al.txt", "cfg/other.txt"} <= r.files


@NS
def test_a_trace_cut_short_has_no_read_set(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"benchmarks/t.sh": "cat data/a\nwhile :; do :; done\n",
                            "data/a": "x\n"})
    with Session(repo) as s:
        tr = s.trace("benchmarks/t.sh", {}, timeout=2)
    assert tr.timed_out and tr.reads is None


def test_unsandboxed_traces_have_no_read_set(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from inferencex_tools.sandbox import trace

    monkeypatch.setattr(trace, "find_bwrap", lambda path, **kw: None)
    repo = _repo(tmp_path, {"benchmarks/t.sh": "cat data/a\n", "data/a": "x\n"})
    with Session(repo, isolate=False, allow_unsandboxed=True,
                 limits=Limits()) as s:
        if s.isolation != "basic":
            pytest.skip(f"isolation {s.isolation}: basic mode not chosen here")
        tr = s.trace("benchmarks/t.sh", {})
    assert tr.ok and tr.reads is None


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_bubblewrap_traces_have_no_read_set(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IXTOOL_TRACE_NO_NAMESPACES", "1")
    repo = _repo(tmp_path, {"benchmarks/t.sh": "cat data/a\n", "data/a": "x\n"})
    with Session(repo, isolate=False) as s:
        if s.isolation != "bwrap":
            pytest.skip("bubblewrap cannot build a sandbox here")
        tr = s.trace("benchmarks/t.sh", {})
    assert tr.ok and tr.reads is None


def test_a_failed_connection_is_no_read_set() -> None:
    """The file system's server: once its connection fails, what it recorded is not
    presented as complete (None), for this trace and every later one."""
    from inferencex_tools.sandbox import _readfs

    r, w = os.pipe()
    os.close(w)
    fs = _readfs.ReadFS(r, "/nonexistent")
    fs.begin()
    fs.files.add("benchmarks/x.sh")
    fs.serve()  # end of file: the connection is gone
    assert fs.failed and fs.result() is None
    fs.begin()
    assert fs.result() is None
    os.close(r)


def test_the_read_set_from_the_server_is_checked() -> None:
    from inferencex_tools.sandbox.trace import _read_set

    good = {"files": ["a/b"], "listed": [""], "missing": ["c"]}
    assert _read_set(good) == ReadSet(frozenset({"a/b"}), frozenset({""}), frozenset({"c"}))
    for bad in (None, [], {"files": ["a"]}, {**good, "files": ["/etc/passwd"]},
                {**good, "missing": ["../x"]}, {**good, "listed": [1]}):
        assert _read_set(bad) is None, bad


@NS
def test_copy_ups_in_the_workspace_never_hang_the_server(tmp_path: Path) -> None:
    """A ``mkdir`` in a folder of the checkout copies that folder up into the workspace's
    overlay, which asks the read view (the trace server) while it holds the upper
    folders' locks and the host file system's rename lock.  The server measured the
    trace directory in the thread that answers: a walk at that moment waited for the
    copy-up and the copy-up for the walk, for ever, and every overlay mount on the
    host's /dev/shm after it (found on the shared machine: ~200 processes in D state).
    Now the walk runs beside the answering thread: a trace doing copy-ups all the time
    while the server measures ends as usual."""
    n = 600
    files = {f"data/d{i:03d}/f.txt": "x\n" for i in range(n)}
    files["run.sh"] = ("set -eu\nfor d in data/d*; do mkdir \"$d/out\"; : > \"$d/out/x\"; done\n"
                       "echo done\n")
    repo = _repo(tmp_path, files)
    with Session(repo) as s:
        for _ in range(3):
            tr = s.trace("run.sh", {}, timeout=120)
            assert tr.ok and not tr.timed_out, (tr.returncode, tr.stderr_tail[-600:],
                                                tr.stopped_by)
            assert tr.reads is not None and tr.last_line.endswith("echo done"), tr.last_line
