"""Disk access for curves and the registry (the I/O edge of the curve model)."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferencex_tools.errors import InputError
from inferencex_tools.io.files import read_bytes
from inferencex_tools.io.layout import master_files
from inferencex_tools.policy.curves import (
    Curve,
    Registry,
    RegistryEntry,
    parse_curve,
    parse_registry,
)
from inferencex_tools.policy.rules import REGISTRY_CURVE
from inferencex_tools.report.findings import Finding

DEFAULT_REGISTRY = Path("golden_al_distribution/registry.yaml")


@dataclass
class CurveStore:
    """The registry plus lazily loaded curve files from ``curves_dir``."""

    registry: Registry
    curves_dir: Path
    display_dir: str
    findings: list[Finding] = field(default_factory=list)
    _cache: dict[str, Curve | None] = field(default_factory=dict)
    # curve files held in memory (a git ref's curves), instead of ``curves_dir``
    blobs: dict[str, bytes] | None = None
    source: str = "registry"  # "registry" (a registry file) | "derived"
    derived: Any = None  # the derivation (:class:`.derive.Derived`) when derived

    def has_file(self, name: str) -> bool:
        if self.blobs is not None:
            return name in self.blobs
        return (self.curves_dir / name).is_file()

    def curve(self, name: str) -> Curve | None:
        if name not in self._cache:
            shown = f"{self.display_dir}/{name}" if self.display_dir else name
            if not self.has_file(name):
                self._cache[name] = None
            else:
                data = self.blobs[name] if self.blobs is not None \
                    else read_bytes(self.curves_dir / name)
                curve, found = parse_curve(data, shown)
                self.findings.extend(found)
                self._cache[name] = curve
        return self._cache[name]

    def curve_for(self, entry: RegistryEntry) -> tuple[Curve | None, str | None]:
        """The entry's curve, or None and why not."""
        curve = self.curve(entry.curve)
        if curve is None:
            path = self.curves_dir / entry.curve
            return None, (f"{entry.label()}: curve file {path} "
                          f"{'is invalid' if self.has_file(entry.curve) else 'does not exist'}")
        if curve.model_key != entry.model_key:
            return None, (f"{entry.label()}: {entry.curve} has model key "
                          f"'{curve.model_key}', not '{entry.model_key}'")
        return curve, None

    def check_rows(self, *, require_files: bool) -> list[Finding]:
        """Registry rows against the curve files (missing files only when required)."""
        out: list[Finding] = []
        for e in self.registry.entries:
            curve, why = self.curve_for(e)
            if curve is None and why is not None:
                missing = not self.has_file(e.curve)
                if missing and not require_files:
                    continue
                out.append(REGISTRY_CURVE.at(self.registry.file, e.line, 1, why))
        return out


def open_store(registry: Path | None, curves_dir: Path | None, *, root: Path) -> CurveStore:
    """The curve store of the repository at ``root``.

    An explicit registry wins: ``registry``, else ``<root>/golden_al_distribution/
    registry.yaml``.  Without one the registry is derived from what the repository holds
    (:mod:`.derive`).  Curve files are looked up in ``curves_dir`` (default: the
    registry's directory).  An invalid registry raises :class:`InputError`.
    """
    reg_path = registry if registry is not None else root / DEFAULT_REGISTRY
    if registry is None and not reg_path.is_file():
        return derive_from_tree(root, curves_dir)
    if not reg_path.is_file():
        raise InputError(f"{reg_path}: golden-AL registry not found",
                         hint="pass an existing --registry, or none to derive it")
    shown = _rel(reg_path, root)
    cdir = curves_dir if curves_dir is not None else reg_path.parent
    return registry_store(read_bytes(reg_path), shown, curves_dir=cdir,
                          display_dir=_rel(cdir, root))


def derive_from_tree(root: Path, curves_dir: Path | None) -> CurveStore:
    """The store derived from the curve files, README and recipes of the tree at ``root``."""
    cdir = curves_dir if curves_dir is not None else root / DEFAULT_REGISTRY.parent
    curves = {p.name: read_bytes(p) for p in sorted(cdir.glob("*.yaml"))
              if p.name != DEFAULT_REGISTRY.name and p.is_file() and not p.is_symlink()}
    readme = cdir / "README.md"
    prefixes, texts = derivation_inputs(root)
    return derived_store(curves, display_dir=_rel(cdir, root), curves_dir=cdir,
                         readme=readme.read_text(encoding="utf-8", errors="replace")
                         if readme.is_file() else None, prefixes=prefixes,
                         recipe_texts=texts)


def registry_store(data: bytes, shown: str, *, curves_dir: Path, display_dir: str,
                   blobs: dict[str, bytes] | None = None) -> CurveStore:
    reg, found = parse_registry(data, shown)
    if reg is None:
        first = found[0] if found else None
        raise InputError(f"{shown}: invalid golden-AL registry: "
                         f"{first.message if first else 'unknown error'}",
                         hint="see schemas/golden-al.schema.json $defs/registry")
    store = CurveStore(reg, curves_dir, display_dir, blobs=blobs)
    store.findings.extend(found)
    return store


def derived_store(curves: dict[str, bytes], *, display_dir: str, curves_dir: Path,
                  readme: str | None, prefixes: Container[str],
                  recipe_texts: list[str]) -> CurveStore:
    from inferencex_tools.policy.derive import derive_registry

    d = derive_registry(curves, readme=readme, prefixes=prefixes, recipe_texts=recipe_texts,
                        registry_file=f"{display_dir}/{DEFAULT_REGISTRY.name} (derived)")
    d.registry.derived = True
    d.registry.ambiguous = d.ambiguous
    store = CurveStore(d.registry, curves_dir, display_dir, blobs=dict(curves),
                       source="derived")
    store.findings.extend(_shown(f, display_dir) for f in d.findings)
    store.derived = d
    return store


def _shown(f: Finding, display_dir: str) -> Finding:
    if "/" in f.file or not display_dir:
        return f
    return Finding(f.rule, f.severity, f"{display_dir}/{f.file}", f.line, f.column,
                   f.message, f.hint, f.data)


MAX_DERIVATION_TEXT = 512 * 1024
DERIVATION_SUFFIXES = (".sh", ".yaml", ".yml", ".py")


def derivation_inputs(root: Path) -> tuple[list[str], list[str]]:
    """Model prefixes of the master configs and the recipe texts (draft ids) of a tree."""
    from inferencex_tools.errors import YamlError
    from inferencex_tools.io.yamlio import load_safe
    from inferencex_tools.sweep.blocks import field_values

    prefixes: set[str] = set()
    for p in master_files(root):
        try:
            doc = load_safe(read_bytes(p), source=str(p))
        except (YamlError, InputError):
            continue
        if isinstance(doc, dict):
            prefixes |= field_values(doc.values(), "model-prefix")
    texts: list[str] = []
    bench = root / "benchmarks"
    for p in sorted(bench.rglob("*")) if bench.is_dir() else []:
        if p.suffix in DERIVATION_SUFFIXES and p.is_file() and not p.is_symlink():
            try:
                if p.stat().st_size <= MAX_DERIVATION_TEXT:
                    texts.append(p.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
    return sorted(prefixes), texts


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
