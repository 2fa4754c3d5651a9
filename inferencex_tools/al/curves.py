"""``ixtool policy curves import``: a SpeedBench AL collection run's artifact becomes a
golden curve file in the repository's format (G-13/G-14), with its provenance.

The collection workflow (``speedbench-al.yml``) uploads the collector's matrix as
``speedbench-reference-al-<model-prefix>`` (one file, ``speedbench-reference-al.yaml``:
the collector's comment header, then ``<model key>: {thinking_on|thinking_off: {K: AL}}``,
``N/A`` for a cell whose server did not start), and the vLLM server logs as
``speedbench_server_logs-<model-prefix>``.  The curve file is

1. ``# Source GitHub Actions run: <run URL>``;
2. ``# Provenance: run <id>, image <image>, model <model>, category <category>; …``;
3. the collector's header lines, unchanged;
4. the matrix, re-emitted canonically (modes in the artifact's order, K ascending,
   two decimals): importing the same run again gives the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.al.rules import COLLECTION_INVALID, CURVE_WOULD_CHANGE, NO_COLLECTION
from inferencex_tools.errors import YamlError
from inferencex_tools.io.artifacts import READ_ERRORS, Artifact
from inferencex_tools.report.findings import Finding, Result

if TYPE_CHECKING:
    from inferencex_tools.io.github import Forge

ARTIFACT_PREFIX = "speedbench-reference-al-"
LOGS_PREFIX = "speedbench_server_logs-"
MATRIX_FILE = "speedbench-reference-al.yaml"
MAX_MATRIX = 1 << 20
MODES = ("thinking_on", "thinking_off")
_METHOD = re.compile(r"Measured on (\S+) \(([^,)]*), vLLM ([A-Za-z0-9]+)")
_CATEGORY = re.compile(r"dataset:\s*([A-Za-z0-9_.-]+)")
_VLLM_VERSION = re.compile(rb"vLLM API server version ([0-9A-Za-z.+_-]{1,40})")
_SAFE = re.compile(r"[^\x20-\x7e]")


@dataclass
class Provenance:
    run_id: int
    run_url: str
    image: str | None = None
    model: str | None = None


@dataclass
class Imported:
    prefix: str
    method: str | None
    file_name: str  # <prefix>_<method>.yaml
    text: str | None  # None: not importable
    model_key: str | None = None
    category: str | None = None
    image: str | None = None
    model: str | None = None
    findings: list[Finding] = field(default_factory=list)


def _clean(s: str, limit: int = 200) -> str:
    return _SAFE.sub("?", s)[:limit]


def _header(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("#"):
            out.append(_clean(line.rstrip(), 400))
        elif line.strip():
            break
    return out


def _cells(doc: Any, where: str) -> tuple[str, dict[str, dict[int, float]], list[str]]:
    """The matrix (model key, mode → K → AL) and what is wrong with it."""
    problems: list[str] = []
    if not isinstance(doc, dict) or len(doc) != 1:
        return "", {}, [f"{where}: not one top-level model key"]
    key, table = next(iter(doc.items()))
    if not isinstance(key, str) or not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,80}", key):
        return "", {}, [f"{where}: the model key {_clean(str(key))!r} is not a lower-case id"]
    if not isinstance(table, dict) or not table:
        return key, {}, [f"{where}: {key} has no thinking modes"]
    modes: dict[str, dict[int, float]] = {}
    for mode, row in table.items():
        if mode not in MODES or not isinstance(row, dict):
            problems.append(f"{key}.{_clean(str(mode))}: not thinking_on/thinking_off → K: AL")
            continue
        cells: dict[int, float] = {}
        for k, v in row.items():
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 8:
                problems.append(f"{key}.{mode}: K {_clean(str(k))!r} is not 1..8")
            elif isinstance(v, bool) or not isinstance(v, int | float):
                problems.append(f"{key}.{mode}[{k}] = {_clean(str(v))!r}: the cell was not "
                                "collected (its server did not start or the run failed)")
            else:
                cells[k] = float(v)
        modes[mode] = dict(sorted(cells.items()))
    return key, modes, problems


def compose(data: bytes, prefix: str, prov: Provenance) -> Imported:
    """The curve file for the collector's matrix ``data`` (pure)."""
    from inferencex_tools.io.yamlio import load_safe
    from inferencex_tools.policy.curves import parse_curve

    where = f"{ARTIFACT_PREFIX}{prefix}/{MATRIX_FILE}"
    text = data.decode("utf-8", errors="replace")
    header = _header(text)
    joined = "\n".join(header)
    m = _METHOD.search(joined)
    method = m.group(3).lower() if m else None
    out = Imported(prefix, method, f"{prefix}_{method or 'unknown'}.yaml", None,
                   category=(c.group(1) if (c := _CATEGORY.search(joined)) else None))
    out.image, out.model = prov.image, prov.model
    try:
        doc = load_safe(data, source=where)
    except YamlError as exc:
        out.findings.append(COLLECTION_INVALID.at(where, exc.line, exc.column, exc.detail))
        return out
    key, modes, problems = _cells(doc, where)
    out.model_key = key or None
    if method is None:
        problems.append("the header names no 'Measured on <model> (<GPU>, vLLM <METHOD>)' "
                        "line: the speculative method is unknown")
    for p in problems:
        out.findings.append(COLLECTION_INVALID.at(where, None, None, p))
    if problems:
        return out
    body = [f"{key}:"]
    for mode, cells in modes.items():
        body.append(f"  {mode}:")
        body += [f"    {k}: {v:.2f}" for k, v in cells.items()]
    prov_line = (f"# Provenance: run {prov.run_id}, image {_clean(prov.image or 'unknown')}, "
                 f"model {_clean(prov.model or key)}, category "
                 f"{out.category or 'unknown'}; imported by `ixtool policy curves import`.")
    out.text = "\n".join([f"# Source GitHub Actions run: {prov.run_url}", prov_line,
                          *header, *body]) + "\n"
    _, found = parse_curve(out.text.encode(), out.file_name)
    out.findings.extend(found)  # PO101-PO104: the same checks as every committed curve
    if found:
        out.text = None
    return out


def _logs_image(arts: Sequence[Artifact], prefix: str) -> str | None:
    """'vLLM <version>' from the collection's server logs (their start-up line)."""
    for a in arts:
        if a.name != f"{LOGS_PREFIX}{prefix}":
            continue
        for mem in a.members():
            try:
                head = b"".join(a.chunks(mem, 1 << 20))
            except READ_ERRORS:  # an unreadable log gives no version
                continue
            m = _VLLM_VERSION.search(head)
            if m:
                return f"vLLM {m.group(1).decode()} (from the server log)"
    return None


def from_artifacts(arts: Sequence[Artifact], prov: Provenance, prefix: str | None,
                   result: Result) -> Imported | None:
    """The collection artifact of ``arts`` (the one of ``prefix``) as a curve file."""
    found = [a for a in arts if a.name.startswith(ARTIFACT_PREFIX)
             and (prefix is None or a.name == ARTIFACT_PREFIX + prefix)]
    if len(found) != 1:
        names = ", ".join(a.name for a in arts if a.name.startswith(ARTIFACT_PREFIX))
        result.add(NO_COLLECTION.at(
            "<run>", None, None,
            (f"{len(found)} {ARTIFACT_PREFIX}* artifacts ({names}): pass --prefix"
             if found else f"no {ARTIFACT_PREFIX}{prefix or '<model-prefix>'} artifact"
             + (f" (the run has {names})" if names else ""))))
        return None
    (a,) = found
    pre = a.name[len(ARTIFACT_PREFIX):]
    mem = next((m for m in a.members() if m.path.rsplit("/", 1)[-1] == MATRIX_FILE), None)
    if mem is None:
        result.add(NO_COLLECTION.at(a.name, None, None,
                                    f"{a.name} holds no {MATRIX_FILE}: the collection failed"))
        return None
    try:
        data = a.read(mem, MAX_MATRIX)
    except READ_ERRORS as exc:
        result.add(COLLECTION_INVALID.at(f"{a.name}/{mem.path}", None, None,
                                         f"not read: {str(exc)[:200]}"))
        return None
    if prov.image is None:
        prov.image = _logs_image(arts, pre)
    return compose(data, pre, prov)


def compare(existing: bytes | None, imp: Imported, force: bool, shown: str) -> str:
    """'created' | 'unchanged' | 'updated' | 'refused' (with a finding)."""
    assert imp.text is not None
    if existing is None:
        return "created"
    if existing == imp.text.encode():
        return "unchanged"
    if force:
        return "updated"
    imp.findings.append(CURVE_WOULD_CHANGE.at(
        shown, 1, 1, f"{shown} exists and differs from the import of this run: pass --force "
        "to replace it (a curve changes only in its own reviewed PR)"))
    return "refused"


def import_curve(root: Path, arts: Sequence[Artifact], prov: Provenance, *,
                 prefix: str | None, output: Path | None, force: bool) -> Result:
    """Write the curve file of the run's collection artifact (``output``, default
    ``golden_al_distribution/<prefix>_<method>.yaml`` under ``root``)."""
    from inferencex_tools.io.files import atomic_write, read_bytes

    result = Result("policy curves import")
    imp = from_artifacts(arts, prov, prefix, result)
    if imp is None:
        return result
    result.findings.extend(imp.findings)
    target = output if output is not None else root / "golden_al_distribution" / imp.file_name
    result.info.update({"prefix": imp.prefix, "method": imp.method, "model-key": imp.model_key,
                        "category": imp.category, "image": imp.image, "model": imp.model,
                        "run-id": prov.run_id, "run-url": prov.run_url, "file": str(target)})
    if imp.text is None:
        result.info["state"] = "not imported"
        return result
    existing = read_bytes(target) if target.is_file() else None
    state = compare(existing, imp, force, str(target))
    result.findings.extend(f for f in imp.findings if f not in result.findings)
    result.info["state"] = state
    if state in ("created", "updated"):
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, imp.text.encode())
        result.done.append(f"{state} {target}")
    elif state == "unchanged":
        result.done.append(f"unchanged {target} (identical to this run's import)")
    result.checked = [f"run {prov.run_id}"]
    return result


def import_run(root: Path, forge: Forge, prov: Provenance, *, prefix: str | None,
               output: Path | None, force: bool) -> Result:
    """:func:`import_curve` of a run's artifacts downloaded through the API (the
    collection artifact and its server logs only)."""
    import tempfile

    from inferencex_tools.io.artifacts import Limits, download

    infos = [i for i in forge.run_artifacts(prov.run_id)
             if i.name.startswith((ARTIFACT_PREFIX, LOGS_PREFIX))
             and (prefix is None or i.name in (ARTIFACT_PREFIX + prefix, LOGS_PREFIX + prefix))]
    limits = Limits(max_download=256 << 20)
    with tempfile.TemporaryDirectory(prefix="ixtool-collection-") as tmp:
        arts, refused = download(forge, infos, Path(tmp), limits)
        try:
            result = import_curve(root, arts, prov, prefix=prefix, output=output,
                                  force=force)
        finally:
            for a in arts:
                a.close()
    for r in refused:
        if r.artifact.startswith(ARTIFACT_PREFIX):
            result.add(NO_COLLECTION.at(r.artifact, None, None, f"{r.artifact}: {r.why}"))
    return result
