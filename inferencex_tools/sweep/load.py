"""Loading master configs and runners.yaml (SWEEP.md §1.1, §1.8).

Files are read with :func:`inferencex_tools.io.yamlio.load_safe` (C-backed) and
merged in file order.  Problems the generator cannot work with raise
:class:`~inferencex_tools.errors.InputError` (exit 2, one clear message).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferencex_tools.errors import InputError
from inferencex_tools.io.files import read_bytes
from inferencex_tools.io.yamlio import load_safe

_VALIDATE_HINT = "ixtool config validate shows every problem of the file with its line"


@dataclass
class Configs:
    """Merged master configs: key → entry, in file then key order."""

    data: dict[str, dict[str, Any]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # key → file label
    sources: dict[str, bytes] = field(default_factory=dict)  # file label → raw bytes

    @property
    def keys(self) -> list[str]:
        return list(self.data)


@dataclass
class Runners:
    labels: dict[str, list[str]] = field(default_factory=dict)
    hardware: dict[str, dict[str, Any]] = field(default_factory=dict)
    label: str = "runners.yaml"
    raw: bytes = b""


_CACHE: dict[tuple[str, bytes], Any] = {}
_CACHE_MAX = 16


def _load_cached(raw: bytes, label: str) -> Any:
    """load_safe, memoised per process by content (inputs are never mutated).

    from-changelog and test suites load the same master files many times.  The bytes
    themselves are the key (hashed once by Python, compared with memcmp): no digest
    library to load at start-up.
    """
    key = (label, raw)
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = load_safe(raw, source=label)
    return _CACHE[key]


def load_cached(raw: bytes, label: str) -> Any:
    """One YAML document, parsed once per process for the same bytes and label (the
    result is shared: callers never mutate it)."""
    return _load_cached(raw, label)


def clear_cache() -> None:
    _CACHE.clear()


def parse_master(raw: bytes, label: str) -> dict[str, Any]:
    """One master file → its mapping (E2/E3 checks)."""
    data = _load_cached(raw, label)
    if not isinstance(data, dict):
        from inferencex_tools.schemas import kind_of

        what = "empty" if data is None else kind_of(data)
        raise InputError(f"{label}: a master config must be a mapping of config keys, "
                         f"found {what}",
                         hint=_VALIDATE_HINT)
    for k in data:
        if not isinstance(k, str):
            raise InputError(f"{label}: config key {k!r} is not a string",
                             hint=_VALIDATE_HINT)
        if "*" in k:
            raise InputError(f"{label}: config key {k!r} contains '*', which is reserved "
                             "for changelog wildcards",
                             hint="rename the key: '*' is reserved for globs")
    return data


def merge_masters(parts: list[tuple[str, bytes]]) -> Configs:
    """Parse and merge master files in order (E4: a key defined in two files)."""
    out = Configs()
    for label, raw in parts:
        data = parse_master(raw, label)
        dup = sorted(k for k in data if k in out.data)
        if dup:
            raise InputError(f"duplicate config keys found in {label}: {', '.join(dup)}",
                             hint="each config key may be defined in one master file only")
        out.sources[label] = raw
        for k, v in data.items():
            out.data[k] = v
            out.origin[k] = label
    return out


def load_masters(paths: list[str | os.PathLike[str]]) -> Configs:
    parts = []
    for p in paths:
        if not Path(p).exists():
            raise InputError(f"input file '{p}' does not exist", hint="check --config-files")
        parts.append((str(p), read_bytes(p)))
    return merge_masters(parts)


def _legacy(data: dict[Any, Any]) -> bool:
    """runners.yaml as the repository kept it before 2026-07-02 (#1970): the labels
    mapping itself (label → node names), no ``labels``/``hardware`` sections."""
    return "labels" not in data and "hardware" not in data and bool(data) and all(
        isinstance(v, list) and v and all(isinstance(n, str) for n in v)
        for v in data.values())


def runners_document(data: Any) -> Any:
    """A loaded runners.yaml in today's shape (the flat form wrapped as ``labels``)."""
    return {"labels": data} if isinstance(data, dict) and _legacy(data) else data


def parse_runners(raw: bytes, label: str) -> Runners:
    """runners.yaml → labels + hardware (E7/E8); the earlier flat form (label → nodes,
    :func:`_legacy`) is read as its labels."""
    data = load_safe(raw, source=label)
    if not isinstance(data, dict):
        raise InputError(f"{label}: runner config must be a mapping with a 'labels' key",
                         hint=_VALIDATE_HINT)
    data = runners_document(data)
    labels = data.get("labels")
    if not isinstance(labels, dict):
        raise InputError(f"{label}: 'labels' must be a mapping of label → node names",
                         hint=_VALIDATE_HINT)
    for name, nodes in labels.items():
        if not isinstance(nodes, list) or not nodes or not all(isinstance(n, str)
                                                                 for n in nodes):
            raise InputError(f"{label}: labels.{name} must be a non-empty list of node names",
                             hint=_VALIDATE_HINT)
    extra = sorted(str(k) for k in data if k not in ("labels", "hardware"))
    if extra:
        raise InputError(f"{label}: runner config failed validation: unknown key(s) "
                         f"{', '.join(extra)}",
                         hint=_VALIDATE_HINT)
    hardware = data.get("hardware") or {}
    _check_hardware(hardware, label)
    return Runners(labels={str(k): list(v) for k, v in labels.items()},
                   hardware={str(k): dict(v) for k, v in hardware.items()}, label=label,
                   raw=raw)


def _check_hardware(hardware: Any, label: str) -> None:
    """runners.yaml ``hardware``: label → {available-cpu-dram-mib, gpus-per-node} > 0."""
    if not isinstance(hardware, dict):
        raise InputError(f"{label}: 'hardware' must be a mapping of label → hardware",
                         hint=_VALIDATE_HINT)
    for name, hw in hardware.items():
        if not isinstance(hw, dict):
            raise InputError(f"{label}: hardware.{name} must be a mapping",
                             hint=_VALIDATE_HINT)
        for k, v in hw.items():
            if k not in ("available-cpu-dram-mib", "gpus-per-node"):
                raise InputError(f"{label}: runner config failed validation: unknown key "
                                 f"hardware.{name}.{k}",
                                 hint=_VALIDATE_HINT)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise InputError(f"{label}: runner config failed validation: "
                                 f"hardware.{name}.{k} must be a positive integer, got {v!r}",
                                 hint=_VALIDATE_HINT)


def load_runners(path: str | os.PathLike[str]) -> Runners:
    if not Path(path).exists():
        raise InputError(f"runner config file '{path}' does not exist",
                         hint="pass --runner-config or run from the repository root")
    return parse_runners(read_bytes(path), str(path))
