"""launch render: what the sandbox cannot reproduce is "not checked" (LA207, a note),
never a launch finding (issue 25): an image a stubbed ``enroot import`` never wrote, a
step that needs a file of a stubbed clone."""

from __future__ import annotations

from inferencex_tools.launch.render import (
    Allocation,
    _allocation_checks,
    _stubbed_image,
    _trace_failures,
)
from inferencex_tools.launch.stages import LaunchTrace
from inferencex_tools.sandbox import Record, TraceResult

ROW = {"tp": 8, "image": "vllm/vllm-openai:v1"}
LAUNCHER = "runners/launch_b200-x.sh"


def _trace(*records: Record, rc: int = 0, last: str | None = None,
           stderr: str = "") -> TraceResult:
    return TraceResult(script=LAUNCHER, env={}, root="/ws", isolation="namespaces",
                       returncode=rc, timed_out=False, seconds=0.1, records=list(records),
                       stderr_tail=stderr, last_line=last)


def _rec(*argv: str) -> Record:
    return Record(tool=argv[0], argv=argv, env={}, cwd="/ws", files={}, seq=0)


def test_an_image_a_stubbed_import_never_wrote_is_a_note() -> None:
    imp = _rec("enroot", "import", "-o", "/sq/vllm.sqsh", "docker://vllm/vllm-openai:v1")
    lt = LaunchTrace(launcher=_trace(imp))
    alloc = Allocation(tool="salloc", argv=[], partition="p", time="1:00:00", gpus=8)
    got = _allocation_checks(alloc, ROW, LAUNCHER, _stubbed_image(lt))
    assert [f.rule for f in got] == ["LA207"] and "/sq/vllm.sqsh" in got[0].message
    # without the stubbed import, an image the allocation does not state is LA204
    got = _allocation_checks(alloc, ROW, LAUNCHER, _stubbed_image(LaunchTrace(_trace())))
    assert [f.rule for f in got] == ["LA204"]


def test_a_step_that_needs_a_stubbed_clone_is_a_note() -> None:
    clone = _rec("git", "clone", "https://gist.github.com/u/a37ff4d9")
    lt = LaunchTrace(launcher=_trace(clone, rc=1, last="launch.sh:9: cp a37ff4d9/f.txt /x",
                                     stderr="cp: cannot stat 'a37ff4d9/f.txt': No such file "
                                     "or directory"))
    got = _trace_failures(lt, LAUNCHER, None)
    assert [f.rule for f in got] == ["LA207"] and "git clone" in got[0].message
    lt.launcher.stderr_tail = "cp: cannot stat 'other/f.txt': No such file or directory"
    lt.launcher.last_line = "launch.sh:9: cp other/f.txt /x"
    assert [f.rule for f in _trace_failures(lt, LAUNCHER, None)] == ["LA201"]
