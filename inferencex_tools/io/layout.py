"""Where an InferenceX-style repository keeps its benchmark inputs — the one definition
of the master-config search and of the repository root, on disk and at a git ref.

Master configs are ``<dir>/*-master.yaml`` (read in sorted path order, later files
extending earlier ones); the runner inventory is ``<dir>/runners.yaml``.  ``<dir>`` is
(:func:`choose`), first match wins:

1. the repository's settings (``[tool.ixtool]`` ``master-configs`` / ``runners-config``);
2. where the repository's own workflows point (``--config-files …``, ``--runner-config
   …``, a path to a ``*-master.yaml`` in ``.github/workflows/*``), when it holds master
   configs;
3. ``configs/``; 4. ``.github/configs/`` (where InferenceX kept them before 2026-07-02).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferencex_tools.errors import InputError
    from inferencex_tools.io.git import GitRepo

MASTER_GLOB = "configs/*-master.yaml"  # the default layout (see :func:`choose`)
MASTER_RX = r"configs/[^/]*-master\.yaml"
RUNNERS = "configs/runners.yaml"
# folders of a checkout that are not the repository's content (tools' caches, venvs)
SKIP_DIRS = (".git", "__pycache__", ".venv", "venv", ".tox", "node_modules", ".mypy_cache",
             ".ruff_cache", ".pytest_cache", ".hypothesis")


def master_files(root: Path) -> list[Path]:
    """The master configs of the checkout at ``root``, sorted (its :func:`layout_of`)."""
    return [root / p for p in layout_of(root).masters]


def runners_file(root: Path) -> Path:
    """runners.yaml of the checkout at ``root`` (its :func:`layout_of`; may not exist)."""
    return root / layout_of(root).runners


def master_paths_at(repo: GitRepo, ref: str) -> list[str]:
    """The master configs at ``ref`` (repository-relative paths), sorted."""
    return list(repo_layout_at(repo, ref).masters)


def repo_layout_at(repo: GitRepo, ref: str) -> Layout:
    """:func:`layout_at` through a :class:`~.git.GitRepo`."""

    def listing(folder: str) -> list[str]:
        return repo.list_files(ref, re.escape(folder + "/") + r"[^/]+") if folder else []

    wf = {p: (repo.show(ref, p) or b"") for p in listing(WORKFLOW_DIR)}
    raw = next(((n, b) for n in (".ixtool.toml", "pyproject.toml")
                if (b := repo.show(ref, n)) is not None), None)
    return choose(listing, lambda p: repo.show(ref, p) is not None, _texts(wf),
                  _settings_from(raw[1], raw[0]) if raw else None)


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


# ------------------------------------------------------------------------- the layout

CONFIG_DIRS = ("configs", ".github/configs")  # in this order, when nothing says otherwise
WORKFLOW_DIR = ".github/workflows"
# a path to a master config or the runner inventory, as a workflow or its docs spell it
_RUNNER_OPT = re.compile(r"--runner-config[=\s]+['\"]?((?:[\w.-]+/)*[\w.-]+\.ya?ml)")


@dataclass(frozen=True)
class Layout:
    """Where the master configs and runners.yaml are, repository-relative."""

    masters: tuple[str, ...]  # master config paths, sorted
    runners: str  # runners.yaml path (it may not exist)
    config_dir: str  # the folder of the master configs
    source: str  # settings | workflows | default

    @property
    def master_rx(self) -> str:
        """The master configs as a full-match regular expression (paths at a git ref)."""
        return re.escape(self.config_dir + "/") + r"[^/]*-master\.yaml"

    def is_input(self, path: str) -> bool:
        """Is ``path`` one of the layout's files (a master config or runners.yaml)?"""
        return path == self.runners or path in self.masters or \
            re.fullmatch(self.master_rx, path) is not None

    def describe(self) -> str:
        where = {"settings": "named by [tool.ixtool]",
                 "workflows": "where the repository's workflows point"}.get(self.source,
                                                                           "the default")
        return f"{self.config_dir}/*-master.yaml and {self.runners} ({where})"


@dataclass(frozen=True)
class LayoutSettings:
    """``[tool.ixtool]`` keys that name the layout (repository-relative)."""

    master_configs: tuple[str, ...] = ()  # paths or globs
    runners_config: str | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> LayoutSettings:
        mc = data.get("master-configs") or ()
        return cls(tuple(str(x) for x in ([mc] if isinstance(mc, str) else mc)),
                   str(data["runners-config"]) if data.get("runners-config") else None)


def _masters_in(listing: Callable[[str], Iterable[str]], folder: str) -> list[str]:
    return sorted(p for p in listing(folder)
                  if p.rsplit("/", 1)[-1].endswith("-master.yaml")
                  and p.rpartition("/")[0] == folder)


_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/")


def _master_mentions(text: str) -> Iterable[str]:
    """Every path to a ``*-master.yaml``/``.yml`` spelt in ``text`` (a word of path
    characters ending there; ``${{ … }}`` expressions are not paths)."""
    for suffix in ("-master.yaml", "-master.yml"):
        at = text.find(suffix)
        while at != -1:
            end = at + len(suffix)
            start = at
            while start > 0 and text[start - 1] in _PATH_CHARS:
                start -= 1
            if end == len(text) or text[end] not in _PATH_CHARS:
                yield text[start:end]
            at = text.find(suffix, end)


def _pointed(workflows: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(folders of the master configs, runner config paths) the workflow texts name, most
    named first."""
    dirs: dict[str, int] = {}
    runners: dict[str, int] = {}
    for text in workflows.values():
        for path in _master_mentions(text):
            d = os.path.normpath(path).rpartition("/")[0]
            if d and not d.startswith(("..", "/")):
                dirs[d] = dirs.get(d, 0) + 1
        if "--runner-config" in text:
            for m in _RUNNER_OPT.finditer(text):
                r = os.path.normpath(m.group(1))
                if not r.startswith(("..", "/")):
                    runners[r] = runners.get(r, 0) + 1
    order = sorted(dirs, key=lambda d: -dirs[d])
    return order, sorted(runners, key=lambda r: -runners[r])


def _named(listing: Callable[[str], Iterable[str]], exists: Callable[[str], bool],
           settings: LayoutSettings) -> Layout:
    """The layout ``[tool.ixtool]`` names (paths or globs of master configs, runners)."""
    found: list[str] = []
    for pat in settings.master_configs:
        if any(c in pat for c in "*?["):
            found += [p for p in listing(pat.rpartition("/")[0]) if fnmatch.fnmatchcase(p, pat)]
        elif exists(pat):
            found.append(pat)
    masters = tuple(sorted(dict.fromkeys(found)))
    folder = masters[0].rpartition("/")[0] if masters else CONFIG_DIRS[0]
    runners = settings.runners_config or (f"{folder}/runners.yaml" if folder
                                          else "runners.yaml")
    return Layout(masters, runners, folder, "settings")


def choose(listing: Callable[[str], Iterable[str]], exists: Callable[[str], bool],
           workflows: Mapping[str, str], settings: LayoutSettings | None = None) -> Layout:
    """The layout of a repository given ``listing(folder)`` (the repository paths of the
    files directly in ``folder``), ``exists(path)``, its workflow texts (path → text) and
    its layout settings.  Pure."""
    if settings is not None and (settings.master_configs or settings.runners_config):
        return _named(listing, exists, settings)
    dirs, runner_paths = _pointed(workflows)
    for d in dirs:
        pointed = _masters_in(listing, d)
        if pointed:
            runners = next((r for r in runner_paths if exists(r)), f"{d}/runners.yaml")
            return Layout(tuple(pointed), runners, d, "workflows")
    for d in CONFIG_DIRS:
        default = _masters_in(listing, d)
        if default:
            return Layout(tuple(default), f"{d}/runners.yaml", d, "default")
    d = next((d for d in CONFIG_DIRS if exists(f"{d}/runners.yaml")), CONFIG_DIRS[0])
    return Layout((), f"{d}/runners.yaml", d, "default")


def _texts(files: Mapping[str, bytes]) -> dict[str, str]:
    return {p: b.decode("utf-8", "replace") for p, b in files.items()}


@dataclass(frozen=True)
class LayoutRules:
    """What decides where a revision keeps its inputs: its workflows' texts and its
    ``[tool.ixtool]`` layout keys.  In a PR context the base's rules locate the head's
    files: a change cannot point ixtool at other files than the ones the base's workflows
    and settings name (docs/security.md, "the base decides"); a folder the base does not
    name is still found where the defaults look."""

    workflows: Mapping[str, str]
    settings: LayoutSettings | None


def rules_of(root: Path) -> LayoutRules:
    """The layout rules of the checkout at ``root``."""
    from inferencex_tools.io.files import read_bytes

    wf: dict[str, bytes] = {}
    d = root / WORKFLOW_DIR
    if d.is_dir():
        for p in sorted(d.iterdir()):
            if p.is_file() and not p.is_symlink() and p.stat().st_size <= 1 << 20:
                wf[f"{WORKFLOW_DIR}/{p.name}"] = read_bytes(p)
    return LayoutRules(_texts(wf), _layout_settings(root))


def rules_at(reader: Any, ref: str) -> LayoutRules:
    """The layout rules of the commit ``ref`` (an open :class:`~.gitcat.GitReader`)."""
    wf = {p: reader.blob(ref, p)[0] or b"" for p in reader.names(ref, WORKFLOW_DIR)}
    settings = None
    for name in (".ixtool.toml", "pyproject.toml"):
        raw = reader.blob(ref, name)[0]
        if raw is not None:
            settings = _settings_from(raw, name)
            break
    return LayoutRules(_texts(wf), settings)


def layout_of(root: Path, *, rules: LayoutRules | None = None) -> Layout:
    """The layout of the checkout at ``root`` (its folders, located by ``rules``: by
    default its own settings and workflows)."""

    def listing(folder: str) -> list[str]:
        d = root / folder if folder else root
        try:
            return [f"{folder}/{p.name}" if folder else p.name for p in d.iterdir()
                    if p.is_file()]
        except OSError:
            return []

    rules = rules or rules_of(root)
    return choose(listing, lambda p: (root / p).is_file(), rules.workflows, rules.settings)


def layout_at(reader: Any, ref: str, *, rules: LayoutRules | None = None) -> Layout:
    """The layout of the commit ``ref`` (an open :class:`~.gitcat.GitReader`), located by
    ``rules`` (by default the commit's own)."""

    def exists(p: str) -> bool:
        return reader.blob(ref, p)[0] is not None

    rules = rules or rules_at(reader, ref)
    return choose(lambda f: reader.names(ref, f) if f else [], exists, rules.workflows,
                  rules.settings)


def _settings_from(raw: bytes, name: str) -> LayoutSettings | None:
    """The layout keys of a ``.ixtool.toml`` / ``pyproject.toml`` (None: none, or not
    readable — the adoption settings report that)."""
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    table = data.get("tool", {}).get("ixtool") if "tool" in data else \
        (data if name == ".ixtool.toml" else None)
    return LayoutSettings.from_mapping(table) if isinstance(table, dict) else None


def _layout_settings(root: Path) -> LayoutSettings | None:
    for name in (".ixtool.toml", "pyproject.toml"):
        p = root / name
        if p.is_file():
            try:
                return _settings_from(p.read_bytes(), name)
            except OSError:
                return None
    return None


def find_root(start: Path) -> Path:
    """The repository root of ``start`` (the nearest directory at or above it holding
    ``.git``), else ``start`` itself."""
    return repo_root(start.resolve()) or start


def no_master_configs(root: Path, option: str | None = "--configs FILE…", *,
                      root_option: bool = True) -> InputError:
    """The input error of a repository without master configs, with the options that
    name them (``option``: the command's own, if it has one; ``root_option``: the command
    takes ``--root``)."""
    from inferencex_tools.errors import InputError

    where = " or ".join(f"{d}/*-master.yaml" for d in CONFIG_DIRS)
    own = f"with {option}, or for every command " if option else ""
    inside = "run inside the repository or pass --root DIR" if root_option else \
        "run inside the repository"
    return InputError(
        f"no master configs in {root}: none at {where}, and its workflows name none "
        "(--config-files …)",
        hint=f"{inside}; name the files {own}with master-configs = [\"…\"] under "
        "[tool.ixtool]")
