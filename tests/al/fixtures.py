"""Run artifacts in the real formats, generated (small) by test code.

* ``gh run download RUN_ID -D DIR`` layout: one subdirectory per artifact, named as the
  reference benchmark template uploads them (``agentic_<RESULT_FILENAME>`` = the job's
  ``results/**``, ``server_logs_<RESULT_FILENAME>`` / ``eval_server_logs_…`` = its
  server logs), RESULT_FILENAME spelled as the template's launch step builds it.
* aiperf's ``server_metrics_export.json`` as its JSON export schema documents it
  (``schema_version``, ``summary``, ``metrics`` → family → ``type``/``series`` →
  ``endpoint_url``/``labels``/``stats.total``…), with vLLM's spec-decode counter
  families and their labels (``engine``, ``model_name``; ``position`` for the
  per-position family), as utils/agentic/aggregation reads such files.
* vLLM's periodic ``SpecDecoding metrics: …`` log line and SGLang's ``Decode batch…
  accept len: …`` line, with the fields their loggers print.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODEL = "MiniMaxAI/MiniMax-M3-MXFP8"
SEED_KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"
SEED_RATES = (0.80, 0.59, 0.44)  # synthetic K=3 schedule: 1 + Σ = 2.83
REAL_RATES = (0.74, 0.47, 0.31)  # real EAGLE3 acceptance on agentic traces: 2.52
GQA_RATES = (0.79, 0.57, 0.42)  # the GQA head, SPEED-Bench-like traffic: 2.78
# (tp, ep, kv) arms of the seed key and their concurrencies (configs/nvidia-master.yaml)
SEED_ARMS = ((8, 1, "none", (1, 4, 8, 12, 16)), (8, 8, "none", (1, 4, 8, 12, 16)),
             (8, 8, "dram", (4, 8, 12, 16)))


def result_filename(*, prefix: str = "minimaxm3", tp: int, ep: int, conc: int,
                    kv: str = "none", spec: str = "mtp", precision: str = "fp8",
                    framework: str = "vllm", runner: str = "h200-dgxc-slurm_2",
                    backend: str = "mooncake") -> str:
    """RESULT_FILENAME as benchmark-tmpl.yml's launch step builds it."""
    kvtag = "kvnone" if kv == "none" else f"kv{kv}-{backend}"
    spectag = "" if spec == "none" else f"_spec-{spec}"
    exp = f"{prefix}_tp{tp}_conc{conc}_{kvtag}{spectag}"
    return (f"{exp}_{precision}_{framework}_tp{tp}-pp1-dcp1-pcp1-ep{ep}-dpafalse_"
            f"disagg-false_spec-{spec}_conc{conc}_{runner}")


# ----------------------------------------------------------------------------- counts

@dataclass
class Counts:
    drafts: int
    per_pos: list[int]  # accepted tokens per position (nested: non-increasing)
    k: int = 3

    @property
    def accepted(self) -> int:
        return sum(self.per_pos)

    @property
    def draft_tokens(self) -> int:
        return self.drafts * self.k


def draw(rng: random.Random, drafts: int, rates: Sequence[float]) -> Counts:
    """Per-position acceptance counts of ``drafts`` drafts at ``rates`` (binomial noise,
    kept nested)."""
    out: list[int] = []
    prev = drafts
    for r in rates:
        mu = drafts * r
        c = round(mu + rng.gauss(0, math.sqrt(mu * (1 - r))))
        c = max(0, min(prev, c))
        out.append(c)
        prev = c
    return Counts(drafts, out, len(rates))


def split(rng: random.Random, total: Counts, parts: int) -> list[Counts]:
    """``total`` cut into ``parts`` logging intervals (the counts add up exactly)."""
    cuts = sorted(rng.sample(range(1, total.drafts), parts - 1))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, total.drafts], strict=True)]
    out: list[Counts] = []
    left = list(total.per_pos)
    for i, n in enumerate(sizes):
        if i == parts - 1:
            out.append(Counts(n, left, total.k))
            break
        frac = n / total.drafts
        pos = []
        prev = n
        for j, c in enumerate(total.per_pos):
            v = min(prev, left[j], round(c * frac))
            pos.append(v)
            prev = v
        left = [a - b for a, b in zip(left, pos, strict=True)]
        out.append(Counts(n, pos, total.k))
    return out


# ----------------------------------------------------------------------------- aiperf

def _counter(name: str, desc: str, series: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    return name, {"type": "counter", "description": desc, "unit": "tokens"
                  if "tokens" in name else None, "series": series}


def export(c: Counts | None, *, model: str = MODEL, port: int = 8888,
           extra: dict[str, Any] | None = None, slices: Sequence[Counts] = ()) -> dict[str, Any]:
    """An aiperf server_metrics_export.json with vLLM's counters (``c``: spec decoding)."""
    url = f"http://localhost:{port}/metrics"
    labels = {"engine": "0", "model_name": model}

    def s(total: float, ts: Sequence[float] = ()) -> dict[str, Any]:
        out: dict[str, Any] = {"endpoint_url": url, "labels": dict(labels),
                               "stats": {"total": float(total), "rate": total / 3600.0}}
        if ts:
            out["timeslices"] = [{"start_ns": 10**18 + i * 10**10,
                                  "end_ns": 10**18 + (i + 1) * 10**10,
                                  "total": float(v), "rate": v / 10.0}
                                 for i, v in enumerate(ts)]
        return out

    metrics = dict([
        _counter("vllm:prompt_tokens", "Number of prefill tokens processed.", [s(9.1e7)]),
        _counter("vllm:generation_tokens", "Number of generation tokens processed.",
                 [s(4.2e6)]),
        ("vllm:kv_cache_usage_perc", {"type": "gauge", "description": "KV-cache usage.",
                                      "unit": "ratio", "series": [{
                                          "endpoint_url": url, "labels": dict(labels),
                                          "stats": {"avg": 0.41, "min": 0.0, "max": 0.93,
                                                    "std": 0.2, "p50": 0.44}}]}),
    ])
    if c is not None:
        metrics.update(dict([
            _counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.",
                     [s(c.drafts, [x.drafts for x in slices])]),
            _counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.",
                     [s(c.draft_tokens, [x.draft_tokens for x in slices])]),
            _counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
                     [s(c.accepted, [x.accepted for x in slices])]),
        ]))
        metrics["vllm:spec_decode_num_accepted_tokens_per_pos"] = {
            "type": "counter", "description": "Accepted tokens per draft position.",
            "unit": "tokens", "series": [
                {"endpoint_url": url, "labels": {**labels, "position": str(i)},
                 "stats": {"total": float(v), "rate": v / 3600.0}}
                for i, v in enumerate(c.per_pos)]}
    metrics.update(extra or {})
    return {"schema_version": "1.0", "aiperf_version": "0.8.0",
            "benchmark_id": "5f1c0de4-0000-4000-8000-000000000001",
            "summary": {"endpoints_configured": [url], "endpoints_successful": [url],
                        "start_time": "2026-07-14T10:00:00.000000",
                        "end_time": "2026-07-14T11:00:00.000000"},
            "metrics": metrics}


# ----------------------------------------------------------------------------- logs

def vllm_log(intervals: Sequence[Counts], *, pid: int = 4242, noise: bool = True) -> str:
    """A vLLM server log: startup lines, then one ``SpecDecoding metrics`` line per
    logging interval (10 s) next to the engine's throughput line."""
    out = [f"(APIServer pid={pid}) INFO 07-14 10:00:00 [api_server.py:1](...) vLLM API "
           "server version 0.27.1",
           f"(APIServer pid={pid}) INFO 07-14 10:00:01 [utils.py:1] non-default args: "
           "{'model': 'MiniMaxAI/MiniMax-M3-MXFP8', 'speculative_config': {...}}"]
    for i, c in enumerate(intervals):
        t = f"10:{(i * 10) // 60 % 60:02d}:{(i * 10) % 60:02d}"
        al = 1 + c.accepted / c.drafts
        rates = ", ".join(f"{v / c.drafts:.3f}" for v in c.per_pos)
        if noise:
            out.append(f"(APIServer pid={pid}) INFO 07-14 {t} [loggers.py:123] Engine 000: "
                       "Avg prompt throughput: 25310.4 tokens/s, Avg generation throughput: "
                       "1180.2 tokens/s, Running: 16 reqs, Waiting: 0 reqs, GPU KV cache "
                       "usage: 41.0%, Prefix cache hit rate: 88.1%")
        out.append(f"(APIServer pid={pid}) INFO 07-14 {t} [metrics.py:96] SpecDecoding "
                   f"metrics: Mean acceptance length: {al:.2f}, Accepted throughput: "
                   f"{c.accepted / 10:.2f} tokens/s, Drafted throughput: "
                   f"{c.draft_tokens / 10:.2f} tokens/s, Accepted: {c.accepted} tokens, "
                   f"Drafted: {c.draft_tokens} tokens, Per-position acceptance rate: "
                   f"{rates}, Avg Draft acceptance rate: "
                   f"{100 * c.accepted / c.draft_tokens:.1f}%")
    return "\n".join(out) + "\n"


def sglang_log(values: Sequence[float]) -> str:
    out = ["[2026-07-14 10:00:00] server_args=ServerArgs(model_path='x', "
           "speculative_algorithm='EAGLE3', speculative_num_steps=3)"]
    for i, v in enumerate(values):
        out.append(f"[2026-07-14 10:{i // 60 % 60:02d}:{i % 60:02d} TP0] Decode batch, "
                   f"#running-req: 16, #token: 81234, token usage: 0.41, accept len: "
                   f"{v:.2f}, accept rate: {(v - 1) / 3:.2f}, cuda graph: True, gen "
                   "throughput (token/s): 1170.55, #queue-req: 0")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- runs

@dataclass
class Job:
    tp: int
    ep: int
    kv: str
    conc: int
    mode: str = "throughput"
    counts: Counts | None = None
    runner: str = "h200-dgxc-slurm_2"
    metrics: bool = True  # upload the aiperf export
    log: bool = True  # upload the server log
    raw_export: bytes | None = None  # an export as given (hostile, truncated …)
    raw_log: bytes | None = None
    extra: dict[str, bytes] = field(default_factory=dict)  # more files: artifact/path → bytes
    spec: str = "mtp"

    @property
    def rf(self) -> str:
        return result_filename(tp=self.tp, ep=self.ep, conc=self.conc, kv=self.kv,
                               runner=self.runner, spec=self.spec)


def write_run(dest: Path, jobs: Sequence[Job], seed: int = 7) -> Path:
    """``gh run download`` of a run with these jobs, each job's artifacts as
    benchmark-tmpl.yml uploads them for an agentic-coding job: ``agentic_<RF>`` (its
    ``results/**``: aiperf's artifacts, the server log), ``bmk_agentic_<RF>``, and by
    mode ``server_logs_<RF>`` / ``gpu_metrics_<RF>`` (throughput) or
    ``eval_server_logs_<RF>`` / ``eval_gpu_metrics_<RF>`` / ``eval_<EXP_NAME>_<RF>``
    (eval-only: no aiperf client, the results tree holds the server log)."""
    rng = random.Random(seed)
    for j in jobs:
        rf = j.rf
        ev = j.mode == "eval"
        logs = f"eval_server_logs_{rf}" if ev else f"server_logs_{rf}"
        raw = dest / f"agentic_{rf}"
        raw.mkdir(parents=True, exist_ok=True)
        (raw / "benchmark_command.txt").write_text("aiperf profile --model x\n")
        if not ev:
            (raw / "aiperf_artifacts").mkdir(parents=True, exist_ok=True)
            (raw / "aiperf_artifacts" / "profile_export_aiperf.json").write_text(
                json.dumps({"request_count": {"avg": 812}}))
            if j.raw_export is not None:
                (raw / "aiperf_artifacts" / "server_metrics_export.json").write_bytes(
                    j.raw_export)
            elif j.metrics:
                sl = split(rng, j.counts, 6) if j.counts else ()
                (raw / "aiperf_artifacts" / "server_metrics_export.json").write_text(
                    json.dumps(export(j.counts, slices=sl), indent=1))
            (dest / f"bmk_agentic_{rf}").mkdir(parents=True, exist_ok=True)
            (dest / f"bmk_agentic_{rf}" / f"{rf}.json").write_text("{}")
        else:
            exp = rf.split("_fp8_", 1)[0]
            (dest / f"eval_{exp}_{rf}").mkdir(parents=True, exist_ok=True)
            (dest / f"eval_{exp}_{rf}" / "results_gsm8k.json").write_text("{}")
        gpu = dest / (f"eval_gpu_metrics_{rf}" if ev else f"gpu_metrics_{rf}")
        gpu.mkdir(parents=True, exist_ok=True)
        (gpu / "gpu_metrics.csv").write_text("timestamp,power\n")
        (dest / logs).mkdir(parents=True, exist_ok=True)
        (dest / logs / "server_config.json").write_text("{}")
        if j.raw_log is not None:
            (dest / logs / "server.log").write_bytes(j.raw_log)
        elif j.log:
            text = vllm_log(split(rng, j.counts, 40)) if j.counts else vllm_log([])
            (dest / logs / "server.log").write_text(text)
            if ev:  # the results tree holds the same log
                (raw / "server.log").write_text(text)
        for rel, data in j.extra.items():
            p = dest / rel.replace("{rf}", rf)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
    return dest


def seed_jobs(rng: random.Random, rates: Sequence[float] = SEED_RATES,
              eval_rates: Sequence[float] | None = None) -> list[Job]:
    """The seed run as the sweep generator builds it: 14 throughput jobs and (with
    ``eval_rates``) the one eval-only job the generator marks, at the top concurrency of
    the key's first arm (tp8, conc 16), on a runner of its own."""
    jobs: list[Job] = []
    for tp, ep, kv, concs in SEED_ARMS:
        for conc in concs:
            n = 40_000 * conc + rng.randrange(20_000)
            jobs.append(Job(tp, ep, kv, conc, counts=draw(rng, n, rates),
                            runner=f"h200-dgxc-slurm_{rng.randrange(4)}"))
    if eval_rates is not None:  # GitHub refuses a second artifact of one name in a run:
        tp, ep, kv, concs = SEED_ARMS[0]  # the eval ran on another node than its twin
        twin = next(j.runner for j in jobs if (j.tp, j.ep, j.kv, j.conc) ==
                    (tp, ep, kv, concs[-1]))
        node = next(f"h200-dgxc-slurm_{i}" for i in range(4)
                    if f"h200-dgxc-slurm_{i}" != twin)
        jobs.append(Job(tp, ep, kv, concs[-1], mode="eval",
                        counts=draw(rng, 400_000, eval_rates), runner=node))
    return jobs
