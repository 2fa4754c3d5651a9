"""``ixtool hook``: the entries of ``.pre-commit-hooks.yaml``, scoped as pre-commit
users expect (what a commit changes; everything with ``--all-files``)."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path

import typer

from inferencex_tools.cli.common import FORMAT_OPTION, Format, info

HELP = """Run one of ixtool's pre-commit hooks on the files pre-commit passes.

A commit (`git commit`, or `pre-commit run` while files are staged) is judged on what it
changes: `config validate --base HEAD` and `policy check --base HEAD` report only the
findings the staged change adds, never ones already committed (no baseline needed to
start).  `pre-commit run --all-files` (or `--files` naming a file the commit does not
change), `--all`, and a repository's first commit check every file: the full `config
validate` / `policy check`; to adopt ixtool on a repository with findings, record them
once (`ixtool config validate --write-baseline`, `ixtool policy check
--write-baseline`) and commit the baseline.  A `--from-ref/--to-ref` run and the
pre-push stage (PRE_COMMIT_FROM_REF, PRE_COMMIT_TO_REF) judge what the range changes.
The changelog hook is `changelog validate` in local mode (entries not yet upstream are
new) in every case, `--base/--head` for a range.

Exit codes: 0 clean, 1 findings, 2 usage or input error.

\b
Examples:
  ixtool hook config configs/nvidia-master.yaml   (pre-commit passes the staged files)
  ixtool hook config --all                        (every file, the full check)
"""


class HookName(StrEnum):
    changelog = "changelog"
    config = "config"
    policy = "policy"


_BASELINE = {HookName.config: "ixtool config validate --write-baseline",
             HookName.policy: "ixtool policy check --write-baseline"}


def hook(
    name: HookName = typer.Argument(..., metavar="HOOK", help="changelog, config or policy."),
    files: list[str] | None = typer.Argument(
        None, metavar="[FILE...]", help="The files pre-commit passes (pass_filenames)."),
    everything: bool = typer.Option(
        False, "--all", help="Check every file whatever the files given (the full check)."),
    fmt: Format = FORMAT_OPTION,
) -> None:
    from inferencex_tools.ci.precommit import hook_scope
    from inferencex_tools.errors import InputError
    from inferencex_tools.io.gitcat import GitReader

    for f in files or []:
        if not Path(f).is_file():
            raise InputError(f"{f}: no such file",
                             hint="give the files pre-commit passes (existing files of the "
                             "repository), or none")
    reader = GitReader(".")
    try:
        here = Path.cwd()
        names = [_relative(here, reader.root, f) for f in files or []]
        from_ref = os.environ.get("PRE_COMMIT_FROM_REF") or None
        to_ref = os.environ.get("PRE_COMMIT_TO_REF") or None
        unborn = reader.head_unborn()
        to_is_head = bool(from_ref and to_ref and not unborn
                          and reader.resolve(to_ref) == reader.resolve("HEAD"))
        scope = hook_scope(names, staged=set() if unborn else reader.staged(),
                           head_unborn=unborn, from_ref=from_ref, to_ref=to_ref,
                           to_is_head=to_is_head, everything=everything)
    finally:
        reader.close()
    argv = [*_argv(name, scope.kind, scope.base, to_ref), "--format", fmt.value]
    info(f"ixtool hook {name.value}: {scope.why}: ixtool {' '.join(argv[:-2])}")
    code = _invoke(argv)
    if code == 1 and scope.kind == "all" and name in _BASELINE:
        print(f"ixtool: hint: findings already in the repository can be recorded as known "
              f"once: {_BASELINE[name]} (commit the baseline file); commits are then "
              "judged on what they add", file=sys.stderr)
    raise typer.Exit(code)


def _relative(here: Path, root: Path, name: str) -> str:
    path = Path(name) if Path(name).is_absolute() else here / name
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return name


def _argv(name: HookName, kind: str, base: str | None, to_ref: str | None) -> list[str]:
    if name is HookName.changelog:
        return ["changelog", "validate", *(["--base", base, "--head", to_ref or "HEAD"]
                                           if kind == "range" and base else [])]
    command = ["config", "validate"] if name is HookName.config else ["policy", "check"]
    return [*command, *(["--base", base] if base else [])]


def _invoke(argv: list[str]) -> int:
    """Run ``ixtool ARGV`` in this process; its exit code (errors propagate to the
    entry point, which reports them as for any command)."""
    from inferencex_tools.cli.main import app

    command = typer.main.get_command(app)
    code = command.main(args=argv, prog_name="ixtool", standalone_mode=False)
    return code if isinstance(code, int) else 0
