""""Could not check" is never "violates" (issue 25): a command that is no repository
file and not modelled is a tool of the container (stubbed); a step that fails only
because a stubbed tool's output is missing makes the row "not checked" (PO308), while a
repository file that is really missing stays a trace failure (PO301)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools.policy.unreproducible import missing_stub_output, stub_outputs
from inferencex_tools.sandbox import Record, TraceResult
from tests.policy.test_check import KEY, check, seed_repo

ANCHOR = "SERVER_CMD=(\n"


def _rec(*argv: str, cwd: str = "/w") -> Record:
    return Record(tool=argv[0], argv=argv, env={}, cwd=cwd, files={}, seq=0)


@pytest.mark.parametrize("argv,want", [
    (("git", "clone", "https://gist.github.com/u/a37ff4d9"), "a37ff4d9"),
    (("git", "clone", "--depth", "1", "-b", "v1", "https://x.org/r/lmcache.git"), "lmcache"),
    (("git", "clone", "https://x.org/r/lmcache.git", "src/lm"), "src/lm"),
    (("curl", "-sL", "-o", "model.bin", "https://x.org/m.bin"), "model.bin"),
    (("curl", "-O", "https://x.org/a/w.whl?x=1"), "w.whl"),
    (("wget", "-q", "https://x.org/a/t.tgz", "-P", "dl"), "dl/t.tgz"),
    (("enroot", "import", "-o", "/sq/img.sqsh", "docker://nvcr.io#nvidia/vllm:1.0"),
     "/sq/img.sqsh"),
    (("enroot", "import", "docker://nvcr.io#nvidia/vllm:1.0"), "nvidia+vllm+1.0.sqsh"),
])
def test_what_a_stubbed_call_would_have_written(argv: tuple[str, ...], want: str) -> None:
    assert [o.path for o in stub_outputs([_rec(*argv)])] == [want]


def _failed(last: str, stderr: str, *records: Record) -> TraceResult:
    return TraceResult(script="s.sh", env={}, root="/w", isolation="namespaces",
                       returncode=1, timed_out=False, seconds=0.1, records=list(records),
                       stderr_tail=stderr, last_line=last)


def test_a_missing_clone_output_is_not_the_recipes_failure() -> None:
    clone = _rec("git", "clone", "https://gist.github.com/u/a37ff4d9")
    tr = _failed("s.sh:9: cp a37ff4d9/gistfile1.txt /usr/lib/x.py",
                 "cp: cannot stat 'a37ff4d9/gistfile1.txt': No such file or directory", clone)
    why = missing_stub_output(tr)
    assert why is not None and "git clone https://gist.github.com/u/a37ff4d9" in why
    # the same failure on a file no stubbed call would have written: the recipe's own
    tr = _failed("s.sh:9: cp benchmarks/x.txt /tmp/y",
                 "cp: cannot stat 'benchmarks/x.txt': No such file or directory", clone)
    assert missing_stub_output(tr) is None
    # a prefix of a name is not the name
    tr = _failed("s.sh:9: cp a37ff4d9x/f /tmp/y",
                 "cp: cannot stat 'a37ff4d9x/f': No such file or directory", clone)
    assert missing_stub_output(tr) is None


def test_an_image_a_stubbed_import_never_wrote() -> None:
    imp = _rec("enroot", "import", "-o", "/scratch/img.sqsh", "docker://vllm/vllm:1",
               cwd="/github/workspace")
    tr = _failed("launch.sh:40: realpath /scratch/img.sqsh",
                 "realpath: /scratch/img.sqsh: No such file or directory", imp)
    assert missing_stub_output(tr) is not None


def _with(tmp: Path, text: str) -> Path:
    return seed_repo(tmp, edit=(ANCHOR, text + ANCHOR))


def test_a_gist_clone_the_step_copies_from_is_not_checked(tmp_path: Path,
                                                          corpus: Path) -> None:
    """The real shape (#2096, #2186: dsv4_fp4_mi355x_vllm.sh): a gist cloned and one of its
    files copied into the image before the server starts."""
    res = check(_with(tmp_path, "git clone https://gist.github.com/u/a37ff4d9\n"
                      "cp a37ff4d9/gistfile1.txt /usr/local/lib/scheduler.py\n"), corpus)
    rules = sorted({f.rule for f in res.findings})
    assert rules == ["PO303", "PO308"], res.findings  # PO303: the network tool, stubbed
    po308 = next(f for f in res.findings if f.rule == "PO308")
    assert "git clone https://gist.github.com/u/a37ff4d9" in po308.message
    assert po308.data["config_keys"] == [KEY] and res.exit_code() == 0


def test_a_repository_file_that_is_really_missing_stays_a_failure(tmp_path: Path,
                                                                   corpus: Path) -> None:
    res = check(_with(tmp_path, "git clone https://gist.github.com/u/a37ff4d9\n"
                      "cp benchmarks/patches/gistfile1.txt /usr/local/lib/scheduler.py\n"),
                corpus)
    assert "PO301" in {f.rule for f in res.findings} and res.exit_code() == 1


def test_a_container_tool_is_stubbed(tmp_path: Path, corpus: Path) -> None:
    """``lmcache_server`` is a tool of the image (on no PATH here): recorded and stubbed,
    in the script and in the bash processes it starts; the row is judged as usual."""
    res = check(_with(tmp_path, "lmcache_server --port 65432 >/dev/null &\n"
                      "bash -c 'vendor-probe --ok'\n"), corpus)
    assert res.findings == [], res.findings
    assert {r["verdict"] for r in res.info["rows"]} == {"ok"}


def test_a_recorded_helper_keeps_what_it_hands_back(tmp_path: Path, corpus: Path) -> None:
    """A helper the trace replaces by a recorder still defines the globals its real body
    assigns (real PRs #1311/#1570: `build_replay_cmd` then `$REPLAY_CMD` under `set -u`
    failed every agentic MI355X trace with "REPLAY_CMD: unbound variable")."""
    repo = _with(tmp_path, 'build_replay_cmd "$RESULT_DIR"\n'
                 'echo "replay: ${REPLAY_CMD}" "${TRACE_SOURCE_FLAG}" >/dev/null\n')
    lib = repo / "benchmarks" / "benchmark_lib.sh"
    lib.write_text(lib.read_text() + "\nbuild_replay_cmd() {\n    local d=$1\n"
                   '    REPLAY_CMD="python3 replay.py --out $d"\n'
                   '    TRACE_SOURCE_FLAG="--x"\n}\n')
    res = check(repo, corpus)
    assert res.findings == [], res.findings
