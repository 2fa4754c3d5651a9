"""I/O orchestration for ``ixtool sweep``: find and load the inputs, validate them
the way the reference does, generate.  The CLI calls these; they never print."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferencex_tools.errors import InputError, UsageError
from inferencex_tools.sweep.checks import first_failing
from inferencex_tools.sweep.generate import Matrix, SweepRequest, generate_matrix
from inferencex_tools.sweep.load import Configs, Runners, load_masters, load_runners

DEFAULT_MASTER_GLOB = "configs/*-master.yaml"
DEFAULT_RUNNERS = "configs/runners.yaml"


def _repo_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def default_master_files(cwd: Path | None = None) -> list[Path]:
    """``configs/*-master.yaml`` of the current directory, else of the repository root."""
    here = Path.cwd() if cwd is None else cwd
    for base in (here, _repo_root(here)):
        if base is None:
            continue
        found = sorted(base.glob(DEFAULT_MASTER_GLOB))
        if found:
            return found
    raise UsageError("no master configs found (configs/*-master.yaml)",
                     hint="pass --config-files or run from the repository root")


def default_runners_file(cwd: Path | None = None) -> Path:
    here = Path.cwd() if cwd is None else cwd
    if (here / DEFAULT_RUNNERS).exists():
        return here / DEFAULT_RUNNERS
    root = _repo_root(here)
    if root is not None and (root / DEFAULT_RUNNERS).exists():
        return root / DEFAULT_RUNNERS
    return Path(DEFAULT_RUNNERS)


@dataclass
class Inputs:
    configs: Configs
    runners: Runners


def validate_for_generation(configs: Configs) -> None:
    """The reference's master-config validation: the first failing key aborts."""
    bad = first_failing(configs.data)
    if bad is None:
        return
    key, issues = bad
    lines = "; ".join(i.message for i in issues[:8])
    more = f" (+{len(issues) - 8} more)" if len(issues) > 8 else ""
    raise InputError(
        f"master config entry '{key}' ({configs.origin.get(key, '?')}) failed validation: "
        f"{lines}{more}",
        hint="`ixtool config validate` shows every problem with its line")


def load_inputs(config_files: list[str] | None, runner_config: str | None) -> Inputs:
    files: list[str | os.PathLike[str]] = (
        list(config_files) if config_files else list(default_master_files()))
    configs = load_masters(files)
    runners = load_runners(runner_config or default_runners_file())
    validate_for_generation(configs)
    return Inputs(configs, runners)


def run_sweep(req: SweepRequest, config_files: list[str] | None,
              runner_config: str | None) -> Matrix:
    req.check()  # usage errors before any file is read (as the reference)
    inputs = load_inputs(config_files, runner_config)
    return generate_matrix(inputs.configs, inputs.runners, req)


def write_output(path: str, text: str) -> None:
    from inferencex_tools.io.files import atomic_write

    try:
        atomic_write(path, text.encode())
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror}") from None


# ------------------------------------------------------------------ config validate

def _scripts_root(masters: list[Path], scripts_dir: Path | None) -> Path | None:
    if scripts_dir is not None:
        return scripts_dir if scripts_dir.is_dir() else None
    if not masters:
        return None
    root = masters[0].resolve().parent.parent  # configs/../
    return root if (root / "benchmarks").is_dir() else None


def _base_keys(base: str, masters: list[Path]) -> set[str]:
    from inferencex_tools.changelog.configkeys import top_level_keys
    from inferencex_tools.io.git import GitRepo

    repo = GitRepo.open(masters[0].parent if masters else Path.cwd())
    keys: set[str] = set()
    for m in masters:
        raw = repo.show(base, repo.relpath(m))
        if raw is not None:
            keys.update(top_level_keys(raw.decode("utf-8", "replace"), source=f"{m}@{base}"))
    return keys


def run_config_validate(files: list[Path] | None, runner_config: Path | None,
                        scripts_dir: Path | None, base: str | None) -> Any:
    from inferencex_tools.io.files import read_bytes
    from inferencex_tools.sweep.validate import MasterFile, ValidateInput, validate

    masters: list[Path] = []
    runners: Path | None = runner_config
    for f in files or []:
        if "runners" in f.name and runners is None:
            runners = f
        else:
            masters.append(f)
    if not files:
        masters = default_master_files()
    if runners is None:
        cand = default_runners_file()
        runners = cand if cand.exists() else None
    root = _scripts_root(masters, scripts_dir)
    exists = None
    if root is not None:
        def exists(rel: str, _root: Path = root) -> bool:
            return (_root / rel).is_file()
    inp = ValidateInput(
        masters=[MasterFile(str(m), read_bytes(m)) for m in masters],
        runners=MasterFile(str(runners), read_bytes(runners)) if runners else None,
        exists=exists,
        base_keys=_base_keys(base, masters) if base else None,
    )
    return validate(inp)
