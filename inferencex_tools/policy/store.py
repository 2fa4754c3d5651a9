"""Disk access for curves and the registry (the I/O edge of the curve model)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from inferencex_tools.errors import InputError
from inferencex_tools.io.files import read_bytes
from inferencex_tools.policy import rules as R
from inferencex_tools.policy.curves import (
    Curve,
    Registry,
    RegistryEntry,
    parse_curve,
    parse_registry,
)
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

    def curve(self, name: str) -> Curve | None:
        if name not in self._cache:
            path = self.curves_dir / name
            shown = f"{self.display_dir}/{name}" if self.display_dir else name
            if not path.is_file():
                self._cache[name] = None
            else:
                curve, found = parse_curve(read_bytes(path), shown)
                self.findings.extend(found)
                self._cache[name] = curve
        return self._cache[name]

    def curve_for(self, entry: RegistryEntry) -> tuple[Curve | None, str | None]:
        """The entry's curve, or None and why not."""
        curve = self.curve(entry.curve)
        if curve is None:
            path = self.curves_dir / entry.curve
            return None, (f"{entry.label()}: curve file {path} "
                          f"{'is invalid' if path.is_file() else 'does not exist'}")
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
                missing = not (self.curves_dir / e.curve).is_file()
                if missing and not require_files:
                    continue
                out.append(R.REGISTRY_CURVE.at(self.registry.file, e.line, 1, why))
        return out


def open_store(registry: Path | None, curves_dir: Path | None, *, root: Path) -> CurveStore:
    """Load the registry (default ``<root>/golden_al_distribution/registry.yaml``).

    Curve files are looked up in ``curves_dir`` (default: the registry's directory).
    An invalid registry raises :class:`InputError`: nothing can be checked without it.
    """
    reg_path = registry if registry is not None else root / DEFAULT_REGISTRY
    if not reg_path.is_file():
        raise InputError(f"{reg_path}: golden-AL registry not found",
                         hint="pass --registry or create golden_al_distribution/registry.yaml")
    shown = _rel(reg_path, root)
    reg, found = parse_registry(read_bytes(reg_path), shown)
    if reg is None:
        first = found[0] if found else None
        raise InputError(f"{shown}: invalid golden-AL registry: "
                         f"{first.message if first else 'unknown error'}",
                         hint="see schemas/golden-al.schema.json $defs/registry")
    cdir = curves_dir if curves_dir is not None else reg_path.parent
    store = CurveStore(reg, cdir, _rel(cdir, root))
    store.findings.extend(found)
    return store


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
