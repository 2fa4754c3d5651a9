"""Every command, walked the way a new user stumbles through it: no arguments, --help,
a wrong flag, a wrong key/label/choice and a missing file.

The commands are discovered from the Typer app, so a new command is walked without
being listed here; only its "wrong name" and "missing file" inputs may need an entry
(the test says so).  Each run asserts: no traceback and no internal error, an exit code
the command's help documents ("Exit codes: …"), and for exit 2 exactly one
``ixtool: error:`` and one ``ixtool: hint:`` line whose options, commands and files
exist.  Runs happen in-process (``cli.main.run``) against the real InferenceX tree.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

from inferencex_tools.cli.main import app, run

ROOT = Path(__file__).resolve().parents[1]
MISSING = "missing-file-xyz.yaml"

# What a command needs besides the input under test (so that the input is what fails).
REQUIRED: dict[str, list[str]] = {
    "changelog canonicalize": ["--pr", "1"],
    "changelog resolve-conflict": ["--pr", "1"],
    "policy golden": ["minimaxm3", "--k", "3", "--thinking", "on"],
    "sweep test-config": ["--config-keys", "dsr1-fp8-h200-sglang"],
    "sweep explain": ["dsr1-fp8-h200-sglang"],
    "sweep from-changelog": ["--base", "HEAD"],
    "ci row": ["--id", "rows/0"],
    "launch render": ["--config-key", "dsr1-fp8-h200-sglang"],
    "launch submit": ["--config-key", "dsr1-fp8-h200-sglang"],
    "merge-with-reuse": ["1234"],
    "ci plan": ["--event-name", "pull_request"],
    "policy curves import": ["28061204145", "--repo", "SemiAnalysisAI/InferenceX"],
    "hook": ["config"],
}
# A wrong name where the command looks one up (keys, labels, rules, arms, buckets).
# Commands not listed get a wrong value for their first choice option (--format …).
WRONG_NAME: dict[str, list[str]] = {
    "rules": ["--area", "sweeep"],
    "labels explain": ["full-sweep"],
    "changelog add": ["-k", "dsr1-fp8-h200-sglng", "-d", "a change"],
    "policy golden": ["minimaxm", "--k", "3", "--thinking", "on"],
    "policy check": ["--config-keys", "dsr1-fp8-h200-sglng"],
    "policy trace": ["benchmarks/single_node/no-such-script.sh"],
    "sweep full": ["--scenario-type", "fixed"],
    "sweep test-config": ["--config-keys", "dsr1-fp8-h200-sglng"],
    "sweep explain": ["dsr1-fp8-h200-sglng"],
    "sweep from-changelog": ["--base", "no-such-ref"],
    "launch render": ["--config-key", "dsr1-fp8-h200-sglng"],
    "launch submit": ["--config-key", "dsr1-fp8-h200-sglang", "--arm", "9"],
    "ci row": ["--matrix", "matrix.json", "--id", "single_node/0"],
    "ci priority": ["--labels-json", "[1]", "--input", "matrix.json"],
    "changelog merge-driver": ["a.yaml", "b.yaml", "c.yaml", "--pr-side", "middle"],
}
# Where the missing file goes when the command has no Path parameter of its own.
MISSING_FILE: dict[str, list[str]] = {
    "changelog merge-driver": [MISSING, MISSING, MISSING, "--pr", "1"],
    "hook": ["config", MISSING],
    "changelog resolve-conflict": ["--pr", "1", "--base", MISSING, "--ours", MISSING,
                                   "--theirs", MISSING],
    "ci gate": ["--event", MISSING, "--event-name", "pull_request"],
    "changelog add": ["-k", "dsr1-fp8-h200-sglang", "-d", "a change", "--configs", MISSING],
    "policy trace": [MISSING],
    "policy curves import": ["28061204145", "--repo", "o/r", "--artifacts", MISSING],
    "policy init": ["--curves-dir", MISSING, "--output", "/tmp/ixtool-walk-registry.yaml"],
    "sweep full": ["--configs", MISSING],
    "sweep test-config": ["--config-keys", "dsr1-fp8-h200-sglang", "--configs", MISSING],
    "sweep explain": ["dsr1-fp8-h200-sglang", "--configs", MISSING],
    "sweep from-changelog": ["--base", "HEAD", "--changelog", MISSING],
    "ci priority": ["--policy", MISSING],
    "launch render": ["--matrix", MISSING],
    "launch submit": ["--matrix", MISSING],
}
# Commands that read no file at all (the missing-file case does not apply).
NO_FILE = {"rules": "prints the catalog of the code", "labels explain": "labels only",
           "merge-with-reuse": "reads git and GitHub, no file argument"}
# Commands that look up no name and have no choice option.
NO_NAME = {"policy init": "derives the registry; it takes directories and a flag only"}


@dataclass
class Outcome:
    code: int
    out: str
    err: str


def _leaves(cmd: Any, path: list[str]) -> list[tuple[str, Any]]:
    if isinstance(cmd, typer.core.TyperGroup):
        out: list[tuple[str, Any]] = [(" ".join(path), cmd)] if path else []
        for name, sub in cmd.commands.items():
            if not sub.hidden:
                out += _leaves(sub, [*path, name])
        return out
    return [(" ".join(path), cmd)]


ROOT_CMD = typer.main.get_command(app)
COMMANDS = _leaves(ROOT_CMD, [])
# a group that also runs on its own (``policy curves``: validate; ``policy curves import``)
# is walked as a command too
LEAVES = [(p, c) for p, c in COMMANDS
          if not isinstance(c, typer.core.TyperGroup) or c.invoke_without_command]
ALL_OPTIONS = {o for _, c in COMMANDS for p in c.params for o in getattr(p, "opts", [])} | {
    "--traceback", "--quiet", "--version", "--help", "--install-completion",
    "--show-completion"}


def _options(cmd: Any) -> set[str]:
    return {o for p in cmd.params for o in getattr(p, "opts", [])} | {"--help"}


def _documented_codes(cmd: Any) -> set[int]:
    m = re.search(r"Exit codes: (.*?)\.(?:\s*\n\s*\n|\s*$)", cmd.help or "", re.S)
    assert m, f"no 'Exit codes: …' sentence in the help of {cmd.name}"
    return {int(c) for c in re.findall(r"(?:^|[,;]\s*)(\d)\s", m.group(1))}


@pytest.fixture(scope="module")
def tree(real_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A writable copy of the session's real tree with a ``matrix.json`` committed."""
    from tests.conftest import clone_real_tree, git

    root = clone_real_tree(real_tree, tmp_path_factory.mktemp("walk") / "inferencex")
    (root / "matrix.json").write_text(json.dumps([{"runner": "h200", "framework": "x"}]))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "matrix.json")
    return root


@pytest.fixture(scope="module")
def names(tree: Path) -> set[str]:
    """Every name a did-you-mean may legitimately suggest."""
    import os

    from inferencex_tools.ci.labels import RELEVANT
    from inferencex_tools.sweep.service import load_inputs
    old = Path.cwd()
    os.chdir(tree)
    try:
        keys = set(load_inputs(None, None).configs.keys)
    finally:
        os.chdir(old)
    cmds = {p.split()[-1] for p, _ in COMMANDS}
    return keys | set(RELEVANT) | cmds | ALL_OPTIONS | {"rows"}


def ix(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: Path,
       argv: list[str]) -> Outcome:
    import os

    for var in list(os.environ):
        if var.startswith("GITHUB_") or var in ("IXTOOL_TRACEBACK", "IXTOOL_PR", "CI"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.chdir(cwd)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        run(argv)
    cap = capsys.readouterr()
    code = exc.value.code
    return Outcome(code if isinstance(code, int) else 0, cap.out, cap.err)


def check_hint(hint: str, cmd: Any, names: set[str] | None, tree: Path) -> None:
    """The hint names only things that exist: options, commands, files, suggestions."""
    for opt in re.findall(r"(?<![\w$-])--[a-z][a-z0-9-]*", hint):
        assert opt in ALL_OPTIONS, f"hint names an option no command has: {opt}: {hint}"
        if "ixtool " not in hint:
            assert opt in _options(cmd) or opt in ALL_OPTIONS - {
                o for _, c in COMMANDS for o in _options(c)}, (
                f"hint names {opt}, not an option of '{cmd.name}': {hint}")
    for ref in re.findall(r"ixtool ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)", hint):
        words = ref.split()
        group = ROOT_CMD.commands.get(words[0])
        assert group is not None, f"hint names a command that does not exist: {ref}: {hint}"
        if isinstance(group, typer.core.TyperGroup) and len(words) > 1:
            assert words[1] in group.commands, f"no command 'ixtool {ref}': {hint}"
    for path in re.findall(r"(?<![\w/.-])((?:docs|configs|schemas)/[\w./-]+\.(?:md|yaml|json))",
                           hint):
        assert (ROOT / path).exists() or (tree / path).exists(), f"{path} does not exist"
    if names is not None and "did you mean" in hint:
        for name in re.findall(r"'([^']+)'", hint.split("did you mean", 1)[1].split("?")[0]):
            assert name in names, f"suggestion {name!r} names nothing: {hint}"


def check(o: Outcome, cmd: Any, tree: Path, *, names: set[str] | None = None,
          codes: set[int] | None = None, needle: str | None = None) -> None:
    text = o.out + o.err
    assert "Traceback" not in text and "internal error" not in text, text
    assert "Usage:" not in o.err and "Error:" not in o.err, o.err
    allowed = codes if codes is not None else _documented_codes(cmd)
    assert o.code in allowed, f"exit {o.code}, documented {sorted(allowed)}: {o.err}"
    if o.code == 2:
        errors = [ln for ln in o.err.splitlines() if ln.startswith("ixtool: error: ")]
        hints = [ln for ln in o.err.splitlines() if ln.startswith("ixtool: hint: ")]
        assert len(errors) == 1 and len(hints) == 1, o.err
        if needle:
            assert needle in errors[0], errors[0]
        check_hint(hints[0].removeprefix("ixtool: hint: "), cmd, names, tree)
    elif o.code == 1:  # findings: each carries its hint (text format)
        assert "hint: " in o.out, o.out
        for line in o.out.splitlines():
            if line.strip().startswith("hint: "):
                check_hint(line.strip().removeprefix("hint: "), cmd, names, tree)


IDS = [p for p, _ in LEAVES]


def test_the_walk_finds_every_command() -> None:
    assert len(LEAVES) >= 25 and "sweep explain" in IDS and "labels explain" in IDS
    for table in (REQUIRED, WRONG_NAME, MISSING_FILE, NO_FILE, NO_NAME):
        stale = set(table) - set(IDS)
        assert not stale, f"entries for commands that no longer exist: {stale}"


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[p for p, _ in COMMANDS])
def test_no_arguments(path: str, cmd: Any, tree: Path, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    o = ix(monkeypatch, capsys, tmp_path, path.split())
    if isinstance(cmd, typer.core.TyperGroup) and not cmd.invoke_without_command:
        check(o, cmd, tree, codes={2}, needle="missing command")
    else:
        check(o, cmd, tree)


@pytest.mark.parametrize("path,cmd", LEAVES, ids=IDS)
def test_help_has_an_example_and_the_exit_codes(path: str, cmd: Any, tree: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    o = ix(monkeypatch, capsys, tree, [*path.split(), "--help"])
    assert o.code == 0 and o.err == "", o.err
    assert re.search(r"Examples?(?: \(.*\))?:\n(\s+(?:\S+=\S+ )*ixtool " + re.escape(path)
                     + r"\b.*\n)+",
                     o.out), f"no example of 'ixtool {path}' in its help"
    assert _documented_codes(cmd) >= {0, 2}, "the help documents exit codes 0 and 2"
    assert "§" not in o.out and "SWEEP.md" not in o.out and "CHANGELOG.md" not in o.out, (
        "the help cites a spec section the project does not ship")
    typed = re.findall(r"^\s+(?:-\w, )?--[\w-]+(?:, --[\w-]+)* (<[^>|]*>)", o.out,
                       re.M)
    assert not typed, f"metavars in <type> form instead of FILE, N, KEY, …: {typed}"


@pytest.mark.parametrize("path,cmd", LEAVES, ids=IDS)
def test_wrong_flag(path: str, cmd: Any, tree: Path, monkeypatch: pytest.MonkeyPatch,
                    capsys: pytest.CaptureFixture[str]) -> None:
    o = ix(monkeypatch, capsys, tree, [*path.split(), *REQUIRED.get(path, []),
                                       "--no-such-flag"])
    assert o.code == 2
    check(o, cmd, tree, needle="--no-such-flag")


def _wrong_name_argv(path: str, cmd: Any) -> list[str]:
    if path in WRONG_NAME:
        return WRONG_NAME[path]
    from typer._types import TyperChoice

    for p in cmd.params:
        if isinstance(p.type, TyperChoice) and getattr(p, "opts", None):
            return [*REQUIRED.get(path, []), p.opts[0], "no-such-choice"]
    raise AssertionError(f"'ixtool {path}' looks up no name and has no choice option: "
                         "add its wrong-name input to WRONG_NAME in this test")


@pytest.mark.parametrize("path,cmd", [(p, c) for p, c in LEAVES if p not in NO_NAME],
                         ids=[p for p in IDS if p not in NO_NAME])
def test_wrong_key_label_or_choice(path: str, cmd: Any, tree: Path, names: set[str],
                                   monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    o = ix(monkeypatch, capsys, tree, [*path.split(), *_wrong_name_argv(path, cmd)])
    assert o.code in (1, 2), o.out + o.err
    check(o, cmd, tree, names=names)


def _missing_file_argv(path: str, cmd: Any) -> list[str]:
    if path in MISSING_FILE:
        return MISSING_FILE[path]
    for p in cmd.params:
        if type(p.type).__name__ == "TyperPath" and not getattr(p, "is_flag", False):
            if isinstance(p, typer.core.TyperArgument):
                return [MISSING, *REQUIRED.get(path, [])]
            return [*REQUIRED.get(path, []), p.opts[0], MISSING]
    raise AssertionError(f"'ixtool {path}' has no file parameter: add it to MISSING_FILE "
                         "or NO_FILE in this test")


@pytest.mark.parametrize("path,cmd", [(p, c) for p, c in LEAVES if p not in NO_FILE],
                         ids=[p for p in IDS if p not in NO_FILE])
def test_missing_file(path: str, cmd: Any, tree: Path, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    o = ix(monkeypatch, capsys, tree, [*path.split(), *_missing_file_argv(path, cmd)])
    assert o.code == 2, o.out + o.err
    check(o, cmd, tree, needle=MISSING)
