"""``ixtool policy golden``: the golden AL for one cell, in every engine's unit (G-11)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferencex_tools.errors import UsageError
from inferencex_tools.policy.curves import Curve, RegistryEntry
from inferencex_tools.policy.store import CurveStore

if TYPE_CHECKING:
    from inferencex_tools.policy.engines import SpecFacts
    from inferencex_tools.sandbox import Record


@dataclass(frozen=True)
class EngineValue:
    engine: str
    setting: str
    value: float


@dataclass(frozen=True)
class GoldenAnswer:
    entry: RegistryEntry
    mode: str
    k: int
    al: float
    source_run: str | None
    values: tuple[EngineValue, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "registry-row": self.entry.id,
            "curve": self.entry.curve,
            "model-key": self.entry.model_key,
            "draft": self.entry.draft,
            "method": self.entry.method,
            "mode": self.mode,
            "k": self.k,
            "al": self.al,
            "source-run": self.source_run,
            "engines": [
                {"engine": v.engine, "setting": v.setting, "value": v.value} for v in self.values
            ],
        }


def engine_values(al: float, k: int) -> tuple[EngineValue, ...]:
    """The golden AL spelled for each engine (AL counts the bonus token)."""
    return (
        EngineValue("vllm", "synthetic_acceptance_length (with rejection_sample_method: "
                    "synthetic)", round(al, 6)),
        EngineValue("sglang", "SGLANG_SIMULATE_ACC_LEN", round(al, 6)),
        EngineValue("trt", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS (AL-1)", round(al - 1, 6)),
        EngineValue("atom", "--spec-decode-acceptance-length", round(al, 6)),
        EngineValue("atom", "--spec-decode-acceptance-rate ((AL-1)/K)", round((al - 1) / k, 6)),
    )


def find_entries(
    store: CurveStore, model: str, *, draft: str | None, method: str | None,
    sample: str | None,
) -> list[RegistryEntry]:
    """Registry rows for MODEL (model-prefix, curve model key, or a model id containing
    the prefix) narrowed by the options given."""
    m = model.lower()
    rows = [e for e in store.registry.entries
            if m in (e.model_prefix.lower(), e.model_key.lower())]
    if draft is not None:
        rows = [e for e in rows if e.matches_draft(draft)]
    if method is not None:
        rows = [e for e in rows if e.method == method.lower()]
    if sample is not None:
        rows = [e for e in rows if (e.draft_sample_method or "default") == sample]
    return rows


def _selector(e: RegistryEntry, rows: list[RegistryEntry]) -> str:
    """The options that pick ``e`` out of ``rows`` (``--sample default`` where a sibling
    differs only in sampling)."""
    out = ([f"--draft {e.draft}"] if e.draft else []) + [f"--method {e.method}"]
    if e.draft_sample_method or any(o is not e and o.method == e.method and o.draft == e.draft
                                    for o in rows):
        out.append(f"--sample {e.draft_sample_method or 'default'}")
    return " ".join(out)


def golden(
    store: CurveStore, model: str, *, k: int, thinking: str, draft: str | None = None,
    method: str | None = None, sample: str | None = None,
) -> GoldenAnswer:
    rows = find_entries(store, model, draft=draft, method=method, sample=sample)
    if not rows:
        known = sorted({f"{e.model_prefix} ({e.draft or e.method})"
                        for e in store.registry.entries})
        raise UsageError(f"no registry row for model '{model}'"
                         + (f" with draft '{draft}'" if draft else ""),
                         hint="registered: " + ", ".join(known))
    if len(rows) > 1:
        raise UsageError(f"'{model}' has {len(rows)} curves; curves of different draft heads "
                         "or sampling modes are never mixed, so say which one",
                         hint="; ".join(f"{e.id}: {_selector(e, rows)}" for e in rows))
    entry = rows[0]
    curve, why = store.curve_for(entry)
    if curve is None:
        raise UsageError(why or f"curve of {entry.label()} unavailable",
                         hint="pass --curves-dir DIR holding the curve files")
    mode = {"on": "thinking_on", "off": "thinking_off"}[thinking]
    al = curve.value(mode, k)
    if al is None:
        have = ", ".join(f"{m}: K {min(t)}..{max(t)}" for m, t in curve.modes.items())
        raise UsageError(f"{entry.curve} has no {mode} value for K={k}", hint=f"it has {have}")
    return GoldenAnswer(entry, mode, k, al, curve.source_run, engine_values(al, k))


# ----------------------------------------------------------------------------- one lookup

@dataclass(frozen=True)
class Lookup:
    """The golden AL of one launch (its draft, K and thinking mode) in one curve store:
    the registry row, its curve, the thinking mode decided and why, and the value; or
    ``why`` there is none.  ``policy``, ``review`` and ``al audit`` all ask here."""

    entry: RegistryEntry | None
    curve: Curve | None
    mode: str | None  # thinking_on | thinking_off | None (undetermined)
    evidence: str
    k: int | None
    value: float | None
    why: str | None  # why there is no value (None: there is one)


def lookup(store: CurveStore, prefix: str, f: SpecFacts, records: Sequence[Record] = ()
           ) -> Lookup:
    """The registry row the launch ``f`` (of model prefix ``prefix``) matches, its curve
    and the value at the launch's K and thinking mode (decided from the trace ``records``,
    the launch, then the model's template default)."""
    from inferencex_tools.policy.engines import decide_thinking

    entry = store.registry.match(prefix, f.method, f.draft, f.sample)
    if entry is None:
        amb = store.registry.ambiguous.get((prefix, f.method or "", f.sample))
        return Lookup(None, None, None, "", f.k, None,
                      f"no registry row for {prefix} / {f.method} / draft "
                      f"{f.draft or '(native)'}"
                      + (f" (the curves {', '.join(amb)} cannot be told apart)"
                         if amb else ""))
    curve, why = store.curve_for(entry)
    if curve is None:
        return Lookup(entry, None, None, "", f.k, None, why or entry.label())
    th = decide_thinking(f, records, store.registry.template_default(prefix), prefix)
    if f.k is None:
        return Lookup(entry, curve, th.mode, th.evidence, None, None,
                      "the launch's draft length K is unknown")
    if th.mode is None:
        return Lookup(entry, curve, None, th.evidence, f.k, None,
                      f"thinking mode undetermined: {th.evidence}")
    value = curve.value(th.mode, f.k)
    return Lookup(entry, curve, th.mode, th.evidence, f.k, value,
                  None if value is not None else
                  f"{entry.curve} has no {th.mode} value for K={f.k}")


def store_at(root: Path, ref: str, *, git: Any = None) -> CurveStore | None:
    """The curve store as the commit ``ref`` of the repository at ``root`` has it (its
    registry, else the one derived from its curves, README, master configs and recipe
    texts): the store a pull request is judged with is its base's (a change cannot bring
    its own curves).  None when ``ref`` does not resolve."""
    from inferencex_tools.errors import IxtoolError
    from inferencex_tools.io.gitcat import GitReader
    from inferencex_tools.policy.store import (
        DEFAULT_REGISTRY,
        derived_store,
        registry_store,
    )

    reader = git if git is not None else GitReader(root)
    try:
        sha = reader.resolve(ref)
        cdir = DEFAULT_REGISTRY.parent.as_posix()
        blobs = _blobs(reader, sha, cdir + "/")
        curves = {k.rsplit("/", 1)[-1]: v for k, v in blobs.items()
                  if k.count("/") == 1 and k.endswith(".yaml")
                  and not k.endswith("/" + DEFAULT_REGISTRY.name)}
        reg = blobs.get(DEFAULT_REGISTRY.as_posix())
        if reg is not None:
            return registry_store(reg, f"{DEFAULT_REGISTRY.as_posix()}@{sha[:12]}",
                                  curves_dir=root / cdir, display_dir=cdir, blobs=curves)
        texts = [b.decode("utf-8", errors="replace")
                 for p, b in _blobs(reader, sha, "benchmarks/").items()
                 if p.endswith((".sh", ".yaml", ".yml", ".py")) and len(b) <= 512 * 1024]
        readme = blobs.get(f"{cdir}/README.md")
        return derived_store(curves, display_dir=cdir, curves_dir=root / cdir,
                             readme=readme.decode("utf-8", errors="replace")
                             if readme else None,
                             prefixes=_prefixes_at(reader, sha), recipe_texts=texts)
    except IxtoolError:
        return None
    finally:
        if git is None:
            reader.close()


def _blobs(reader: Any, sha: str, prefix: str) -> dict[str, bytes]:
    from inferencex_tools.policy.base import base_files

    return dict(base_files(reader.root, sha, prefix, reader=reader))


def _prefixes_at(reader: Any, sha: str) -> list[str]:
    """The model prefixes of the master configs at ``sha`` (where its layout has them)."""
    from inferencex_tools.errors import YamlError
    from inferencex_tools.io.layout import layout_at
    from inferencex_tools.io.yamlio import load_safe
    from inferencex_tools.sweep.blocks import field_values

    out: set[str] = set()
    for p in layout_at(reader, sha).masters:
        data, _ = reader.blob(sha, p)
        try:
            doc = load_safe(data or b"", source=p)
        except YamlError:
            continue
        if isinstance(doc, dict):
            out |= field_values(doc.values(), "model-prefix")
    return sorted(out)
