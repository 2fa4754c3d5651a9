"""The CLI's shared surface: usage errors in ixtool's two-line format, global flags
accepted anywhere, version, completion, the summary line and the progress helper."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from inferencex_tools.errors import close_names, did_you_mean
from tests.changelog.clihelp import ixtool

USAGE_CASES = [
    # argv, words the error must contain, words the hint must contain
    (["sweep", "full", "--bogus"], ["sweep full", "--bogus"], ["ixtool sweep full --help"]),
    (["sweep", "full", "--config-file", "x"], ["--config-file"], ["--config-files"]),
    (["sweep", "ful"], ["'ful'"], ["'full'"]),
    (["ci", "priority", "--pr-number", "abc"], ["--pr-number", "'abc'"], ["whole number"]),
    (["merge-with-reuse", "-7"], ["-7"], ["positive", "1234"]),
    (["rules", "--format", "yaml"], ["yaml"], ["text, markdown, json"]),
    (["ci", "shards"], ["--matrix"], ["ixtool ci shards"]),
    (["changelog", "validate", "a", "b"], ["extra argument"], ["--help"]),
    ([], ["missing command"], ["changelog", "sweep"]),
    (["sweep"], ["sweep: missing command"], ["full", "explain"]),
]


@pytest.mark.parametrize("argv,error,hint", USAGE_CASES, ids=lambda v: " ".join(v)
                         if isinstance(v, list) and all(isinstance(x, str) for x in v) else None)
def test_usage_errors_have_error_and_hint(tmp_path: Path, argv: list[str], error: list[str],
                                          hint: list[str]) -> None:
    p = ixtool(tmp_path, *argv)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.splitlines()
    assert "Traceback" not in p.stderr and "Usage:" not in p.stderr, p.stderr
    err = [ln for ln in lines if ln.startswith("ixtool: error: ")]
    hnt = [ln for ln in lines if ln.startswith("ixtool: hint: ")]
    assert len(err) == 1 and len(hnt) == 1, p.stderr
    assert all(w in err[0] for w in error), err
    assert all(w in hnt[0] for w in hint), hnt


def test_version_short_and_long(tmp_path: Path) -> None:
    for flag in ("-V", "--version"):
        p = ixtool(tmp_path, flag)
        assert p.returncode == 0 and p.stdout.startswith("ixtool "), p.stderr


def test_traceback_accepted_after_the_subcommand(tmp_path: Path) -> None:
    p = ixtool(tmp_path, "sweep", "explain", "k", "--config-files", "nope.yaml", "--traceback")
    assert p.returncode == 2
    assert "Traceback (most recent call last)" in p.stderr
    assert "ixtool: error:" in p.stderr and "ixtool: hint:" in p.stderr
    p = ixtool(tmp_path, "sweep", "explain", "k", "--config-files", "nope.yaml")
    assert "Traceback" not in p.stderr


def test_completion_options_exist(tmp_path: Path) -> None:
    p = ixtool(tmp_path, "--help")
    assert "--install-completion" in p.stdout and "--show-completion" in p.stdout
    assert "-V, --version" in p.stdout and "--quiet" in p.stdout


def test_configs_takes_several_files(tmp_path: Path) -> None:
    """--configs a.yaml b.yaml (argparse nargs) in sweep full, test-config and explain:
    both files are read (the second one's absence is reported)."""
    (tmp_path / "a.yaml").write_text("{}\n")
    for argv in (["sweep", "full"], ["sweep", "test-config", "--config-keys", "k"],
                 ["sweep", "explain", "k"]):
        p = ixtool(tmp_path, *argv, "--configs", "a.yaml", "b.yaml")
        assert p.returncode == 2, p.stderr
        assert "unexpected extra argument" not in p.stderr
        assert "b.yaml" in p.stderr, p.stderr


def test_did_you_mean_is_short() -> None:
    keys = [f"model{i}-fp8-h200-sglang" for i in range(300)]
    hint = did_you_mean("model7-fp8-h200-sglng", keys, what="config key")
    assert hint.startswith("did you mean 'model7-fp8-h200-sglang'") and hint.count("'") <= 6
    assert "300" in did_you_mean("zzzz", keys, what="config key")
    assert did_you_mean("x", ["a", "b"], what="area") == "areas: a, b"
    assert close_names("--bogus", ["--configs", "--base"]) == []
    assert close_names("--config-file", ["--config-files", "--configs"])[0] == "--config-files"


def test_summary_line_counts_rules() -> None:
    from inferencex_tools.report.findings import Finding, Result, Severity
    from inferencex_tools.report.reporters import summary_line

    r = Result(command="x")
    for rule, sev in (("CL502", Severity.ERROR), ("CL502", Severity.ERROR),
                      ("CL601", Severity.ERROR), ("SW401", Severity.WARNING)):
        r.add(Finding(rule=rule, severity=sev, file="f", line=None, column=None,
                      message="m"))
    assert summary_line(r) == "3 errors, 1 warning (CL502×2, CL601, SW401)"
    assert summary_line(Result(command="x")) == "0 errors, 0 warnings"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_redrawn_on_a_terminal_logged_elsewhere(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    from inferencex_tools.cli.common import SETTINGS
    from inferencex_tools.cli.progress import ProgressLine

    for var in ("CI", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    tty = _Tty()
    with ProgressLine("work", stream=tty) as progress:
        progress(3, 3, "rows")
    assert "work: 3/3 rows" in tty.getvalue() and tty.getvalue().endswith("\r\x1b[2K")
    plain = io.StringIO()
    with ProgressLine("work", stream=plain) as progress:
        progress(3, 3, "rows")
    assert plain.getvalue() == ""  # a log: nothing for work shorter than log_first
    assert ProgressLine("work", stream=plain).mode == "log"
    for var in ("CI", "NO_COLOR"):
        with monkeypatch.context() as m:
            m.setenv(var, "1")
            assert ProgressLine("work", stream=_Tty()).mode == "log"
    SETTINGS.quiet = True
    try:
        assert not ProgressLine("work", stream=_Tty()).enabled
    finally:
        SETTINGS.quiet = False


# ------------------------------------------------------------- every raise site has a hint

PKG = Path(__file__).resolve().parents[1] / "inferencex_tools"
HINTED = ("InputError", "UsageError", "YamlError", "LimitExceeded")


def _error_sites(source: str) -> list[tuple[int, str, bool]]:
    """(line, class, has hint=) of every InputError/UsageError (and subclass) built."""
    import ast

    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
            if name in HINTED:
                # hint=… or **kwargs (a re-raise passing the original's hint on)
                hinted = any(k.arg in ("hint", None) for k in node.keywords)
                out.append((node.lineno, name, hinted))
    return out


def test_every_input_and_usage_error_carries_a_hint() -> None:
    sites = {p.relative_to(PKG).as_posix(): _error_sites(p.read_text(encoding="utf-8"))
             for p in sorted(PKG.rglob("*.py"))}
    total = sum(len(s) for s in sites.values())
    assert total > 150, "too few raise sites found: is the walk looking at the package?"
    missing = [f"{rel}:{line} {name}" for rel, s in sites.items() for line, name, ok in s
               if not ok]
    assert not missing, f"errors without hint= ({len(missing)} of {total}): {missing}"


def test_the_hint_walk_sees_a_missing_hint() -> None:
    src = ("raise InputError('x')\nraise UsageError('y', hint='z')\n"
           "raise errors.InputError('w', **kw)\n")
    assert _error_sites(src) == [(1, "InputError", False), (2, "UsageError", True),
                                 (3, "InputError", True)]


def test_repo_is_owner_name_and_a_directory_is_root(tmp_path: Path) -> None:
    """--root DIR everywhere a directory is meant; --repo DIR still works where it used
    to (ci plan, ci gate, launch), with a deprecation warning."""
    for argv in (["ci", "plan"], ["ci", "gate"], ["launch", "render"]):
        help_text = ixtool(tmp_path, *argv, "--help").stdout
        assert "--root DIR" in help_text, argv
    assert "--repo OWNER/NAME" in ixtool(tmp_path, "ci", "gate", "--help").stdout
    p = ixtool(tmp_path, "launch", "render", "--repo", str(tmp_path), "--config-key", "k")
    assert "ixtool: warning: --repo" in p.stderr and "--root" in p.stderr


def test_a_command_line_builds_only_the_commands_it_names() -> None:
    """The root and each group build a command on first use: `ixtool sweep full` builds
    the sweep group and its `full` command only; help builds every command, in the
    order they are registered."""
    import typer

    from inferencex_tools.cli import main
    from inferencex_tools.cli import sweep as sweep_cli

    root = typer.main.get_command(main.app)
    assert isinstance(root, main._Root)
    ctx = root.make_context("ixtool", ["sweep", "full"], resilient_parsing=True)
    group = root.get_command(ctx, "sweep")
    assert isinstance(group, main._Group)
    assert list(root._commands) == ["sweep"] and list(group._commands) == []
    assert group.get_command(ctx, "full").name == "full"
    assert list(group._commands) == ["full"]
    registered = [c.name or typer.main.get_command_name(c.callback.__name__)
                  for c in sweep_cli.app.registered_commands if c.callback]
    assert len(registered) > 2 and list(group.commands) == registered
    assert list(root.commands) == list(main._LAZY)


def _entry(tmp_path: Path, prelude: str, *argv: str) -> subprocess.CompletedProcess[bytes]:
    """``cli.main.main()`` as the process entry, after ``prelude`` (Python) ran."""
    code = (f"import sys\n{prelude}\nsys.argv = ['ixtool', *{list(argv)!r}]\n"
            "from inferencex_tools.cli.main import main\nmain()\n")
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          check=False, timeout=120)


def test_process_entry_flushes_output_runs_exit_handlers_and_keeps_the_code(
        tmp_path: Path, corpus: Path) -> None:
    """main() ends the process without interpreter teardown: a megabyte of stdout, the
    exit status (0, 1, 2) and the atexit handlers are all kept."""
    marker = tmp_path / "atexit-ran"
    prelude = (f"import atexit\natexit.register(lambda: open({str(marker)!r}, 'w').close())")
    p = _entry(tmp_path, prelude, "--version")
    assert p.returncode == 0 and p.stdout.startswith(b"ixtool ") and marker.exists()
    marker.unlink()
    p = _entry(tmp_path, prelude, "sweep", "full", "--bogus")
    assert p.returncode == 2 and b"no such option" in p.stderr and marker.exists()
    marker.unlink()
    (tmp_path / "perf-changelog.yaml").write_text("- not: an entry\n", encoding="utf-8")
    p = _entry(tmp_path, prelude, "changelog", "validate", "perf-changelog.yaml",
               "--format", "json")
    assert p.returncode == 1 and json.loads(p.stdout)["findings"] and marker.exists()
    marker.unlink()
    configs = corpus / "configs"
    p = _entry(tmp_path, prelude, "sweep", "full", "--config-files",
               str(configs / "nvidia-master.yaml"), str(configs / "amd-master.yaml"),
               "--runner-config", str(configs / "runners.yaml"))
    assert p.returncode == 0 and len(p.stdout) > 1_000_000 and marker.exists()
    assert p.stdout.endswith(b"]\n") and json.loads(p.stdout)


def test_process_entry_waits_for_other_threads(tmp_path: Path) -> None:
    """With another thread alive the interpreter exits as usual (it waits for it)."""
    done = tmp_path / "thread-done"
    prelude = ("import threading, time\n"
               f"threading.Thread(target=lambda: (time.sleep(0.5), "
               f"open({str(done)!r}, 'w').close())).start()")
    p = _entry(tmp_path, prelude, "--version")
    assert p.returncode == 0 and done.exists()
