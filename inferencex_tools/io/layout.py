"""Where an InferenceX-style repository keeps its benchmark inputs — the one definition
of the master-config search, on disk and at a git ref.

Master configs are ``configs/*-master.yaml`` (read in sorted path order, later files
extending earlier ones); the runner inventory is ``configs/runners.yaml``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inferencex_tools.io.git import GitRepo

MASTER_GLOB = "configs/*-master.yaml"
MASTER_RX = r"configs/[^/]*-master\.yaml"  # the same set, for paths listed at a git ref
RUNNERS = "configs/runners.yaml"
# folders of a checkout that are not the repository's content (tools' caches, venvs)
SKIP_DIRS = (".git", "__pycache__", ".venv", "venv", ".tox", "node_modules", ".mypy_cache",
             ".ruff_cache", ".pytest_cache", ".hypothesis")


def master_files(root: Path) -> list[Path]:
    """The master configs of the checkout at ``root``, sorted."""
    return sorted(root.glob(MASTER_GLOB))


def master_paths_at(repo: GitRepo, ref: str) -> list[str]:
    """The master configs at ``ref`` (repository-relative paths), sorted."""
    return sorted(repo.list_files(ref, MASTER_RX))


def repo_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git``."""
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def find_master_files(cwd: Path) -> list[Path]:
    """The master configs of ``cwd``, else of its repository root (paths relative to
    ``cwd`` when below it); empty when neither has any."""
    for base in (cwd, repo_root(cwd)):
        if base is not None:
            found = master_files(base)
            if found:
                return [relative_to(p, cwd) for p in found]
    return []


def relative_to(path: Path, here: Path) -> Path:
    """``path`` relative to ``here`` (readable findings and annotations)."""
    try:
        return path.relative_to(here)
    except ValueError:
        return Path(os.path.relpath(path, here)) if path.is_absolute() else path


def workflow_files(root: Path) -> dict[str, bytes]:
    """The repository's workflow files (``.github/workflows/*.yml|yaml``, regular files,
    no symlinks) by their repository path, in name order; empty without the folder."""
    from inferencex_tools.io.files import read_bytes

    d = root / ".github" / "workflows"
    if not d.is_dir():
        return {}
    return {f".github/workflows/{p.name}": read_bytes(p) for p in sorted(d.iterdir())
            if p.suffix in (".yml", ".yaml") and p.is_file() and not p.is_symlink()}
