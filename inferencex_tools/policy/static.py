"""The worker a multi-node recipe launches, read from the recipe as submitted.

Multi-node launchers submit an srt-slurm recipe with ``srtctl apply -f RECIPE[:SELECTOR]``
(TRACING-NOTES pitfall 8: the jobs themselves run on a cluster).  The launcher is
traced up to that submission, so the recipe this module reads is the one the job runs:
after the launcher's own edits and after the runner's synthetic-acceptance injection
(``runners/inject_synthetic_acceptance.py`` runs for real in the trace).

Pure: recipe text in, a pseudo launch :class:`~inferencex_tools.sandbox.Record` of the
decode worker (or the aggregated worker) out, which the per-engine parsers of
:mod:`.engines` read like a traced one.  The text is parsed the way ``srtctl`` parses it
(:mod:`.recipes`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from inferencex_tools.policy.recipes import RecipeDoc, load_recipe
from inferencex_tools.sandbox import Record

ENGINE_OF_BACKEND = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trt", "trt": "trt",
                     "tensorrt-llm": "trt", "atom": "atom"}
CONFIG_KEYS = {"vllm": "vllm_config", "sglang": "sglang_config", "trt": "trtllm_config",
               "atom": "atom_config"}


@dataclass
class StaticLaunch:
    record: Record | None
    engine: str | None
    notes: list[str]
    error: str | None = None
    doc: RecipeDoc = field(default_factory=RecipeDoc)


def select(doc: Any, selector: str | None) -> Any:
    """Zip recipes: ``base`` merged with the named override, element ``[i]`` of lists."""
    if not isinstance(doc, dict) or "base" not in doc:
        return doc
    if not selector:
        return doc["base"]
    m = re.fullmatch(r"([^\[\]]+)(?:\[(\d+)\])?", selector)
    if not m:
        return doc["base"]
    name, idx = m.group(1), int(m.group(2) or 0)
    override = doc.get(name) or (doc.get("overrides") or {}).get(name) or {}
    return merge(doc["base"], pick(override, idx))


def pick(node: Any, i: int) -> Any:
    if isinstance(node, list):
        return pick(node[i] if i < len(node) else node[-1], i) if node else node
    if isinstance(node, dict):
        return {k: pick(v, i) for k, v in node.items()}
    return node


def merge(base: Any, over: Any) -> Any:
    """srtctl's deep merge: mappings merge, ``null`` deletes a key, anything else replaces."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            if v is None:
                out.pop(k, None)
            elif k in base:
                out[k] = merge(base[k], v)
            else:
                out[k] = v
        return out
    return over


def argv_of(args: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k, v in args.items():
        flag = "--" + str(k).replace("_", "-")
        if v is True:
            out.append(flag)
        elif v is False or v is None:
            continue
        elif isinstance(v, dict | list):
            out += [flag, json.dumps(v)]
        else:
            out += [flag, str(v)]
    return out


def engine_of_backend(backend: dict[str, Any]) -> str | None:
    engine = ENGINE_OF_BACKEND.get(str(backend.get("type", "")).lower())
    if engine is None:
        for eng, key in (("sglang", "sglang_config"), ("vllm", "vllm_config"),
                         ("trt", "trtllm_config"), ("atom", "atom_config")):
            if key in backend:
                return eng
    return engine


def worker(doc: dict[str, Any], backend: dict[str, Any],
           engine: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(role, worker args, worker environment): the decode worker, else the aggregated one."""
    workers = backend.get(CONFIG_KEYS[engine]) or {}
    role = "aggregated" if (isinstance(workers, dict) and "aggregated" in workers) \
        or "aggregated_environment" in backend else "decode"
    args = dict(workers.get(role) or {}) if isinstance(workers, dict) else {}
    env = {str(k): str(v) for k, v in (doc.get("environment") or {}).items()}
    env.update({str(k): str(v) for k, v in (backend.get(f"{role}_environment") or {}).items()})
    return role, args, env


def record_of(engine: str, model: str, args: dict[str, Any], env: dict[str, str]) -> Record:
    files: dict[str, str] = {}
    if engine == "vllm":
        if isinstance(args.get("speculative-config"), dict):
            args["speculative-config"] = json.dumps(args["speculative-config"])
        argv, tool = ["vllm", "serve", model, *argv_of(args)], "vllm"
    elif engine == "sglang":
        argv = ["python3", "-m", "sglang.launch_server", "--model-path", model, *argv_of(args)]
        tool = "python -m sglang.launch_server"
    elif engine == "trt":
        files["recipe-worker.yaml"] = json.dumps(args)
        argv, tool = ["trtllm-serve", model, "--config", "recipe-worker.yaml"], "trtllm-serve"
    else:
        argv = ["python3", "-m", "atom.entrypoints.openai_server", "--model", model,
                *argv_of(args)]
        tool = "python -m atom.entrypoints.openai_server"
    return Record(tool=tool, argv=tuple(argv), env=env, cwd="", files=files, seq=0)


def extract(text: str, source: str, *, selector: str | None) -> StaticLaunch:
    """The decode/aggregated worker of one recipe (as submitted) as a pseudo record."""
    doc = load_recipe(text)
    if doc.limit is not None or doc.error is not None:
        return StaticLaunch(None, None, [], f"{source}: {doc.limit or doc.error}", doc)
    data = select(doc.data, selector)
    if not isinstance(data, dict) or not isinstance(data.get("backend"), dict):
        return StaticLaunch(None, None, [], f"{source}: no backend: mapping", doc)
    backend: dict[str, Any] = data["backend"]
    engine = engine_of_backend(backend)
    if engine is None:
        return StaticLaunch(None, None, [], f"{source}: backend type unknown", doc)
    role, args, env = worker(data, backend, engine)
    notes = [f"static: {role} worker of {source}" + (f" ({selector})" if selector else "")]
    model = str((data.get("model") or {}).get("path", "model"))
    return StaticLaunch(record_of(engine, model, args, env), engine, notes, None, doc)
