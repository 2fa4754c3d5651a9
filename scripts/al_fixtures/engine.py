"""A stand-in inference server for the real producers (not part of ixtool's runtime).

It answers OpenAI chat completions and serves ``/metrics`` with the speculative-decoding
metric families of the engine it plays, declared as the engines declare them with
``prometheus_client`` (names, types, help texts and label sets, facts from):

* vLLM 0.33.0 ``vllm/v1/spec_decode/metrics.py``: ``SpecDecodingProm`` (counters
  ``vllm:spec_decode_num_drafts``, ``…_num_draft_tokens``, ``…_num_accepted_tokens``,
  ``…_num_accepted_tokens_per_pos`` with ``position``; labels ``model_name``,
  ``engine``) and ``SpecDecodingLogging``'s log line;
* SGLang 0.5.23 ``sglang/srt/observability/metrics_collector.py``: the tokenizer's
  counters ``sglang:generation_tokens`` (``model_name``, ``engine_type``,
  ``is_streaming``) and ``sglang:spec_verify_calls`` (``model_name``, ``engine_type``),
  grown when a request finishes, the scheduler's gauge ``sglang:spec_accept_length``
  (``model_name``, ``engine_type``, ``tp_rank``, ``pp_rank``, ``moe_ep_rank``), and the
  ``Decode batch … accept len`` line of ``managers/scheduler_components/
  metrics_reporter.py``.

Each request's tokens are produced in verification steps: a step drafts K tokens and
accepts the first j of them (nested: ``--rates`` are the per-position acceptance rates
as vLLM reports them, so position i is accepted with probability r_i / r_(i-1) once
position i-1 was), plus the bonus token; ``--forced AL`` plays synthetic acceptance
(j is AL-1 rounded down or up, with the mean AL-1).  Run with the throwaway environment of
``make.py``::

    python engine.py --engine vllm --port 8000 --k 3 --rates 0.8,0.59,0.44 --log server.log
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

MODEL = "MiniMaxAI/MiniMax-M3-MXFP8"


class Engine:
    def __init__(self, args: argparse.Namespace) -> None:
        self.a = args
        self.rng = random.Random(args.seed)
        self.lock = threading.Lock()
        self.reg = CollectorRegistry()
        self.rates = [float(x) for x in args.rates.split(",")] if args.rates else []
        self.k = args.k
        self.log = open(args.log, "a", encoding="utf-8")  # noqa: SIM115 - closed at exit
        self.interval = {"drafts": 0, "draft_tokens": 0, "accepted": 0,
                         "pos": [0] * self.k, "t": time.monotonic()}
        if args.no_spec:
            self.gen = Counter("vllm:generation_tokens", "Number of generation tokens "
                               "processed.", ["model_name", "engine"], registry=self.reg)
            self.lv = [MODEL, "0"]
        elif args.engine == "vllm":
            labels = ["model_name", "engine"]
            self.v = {name: Counter(name, doc, labels, registry=self.reg) for name, doc in (
                ("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
                ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
                ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."))}
            self.pos = Counter("vllm:spec_decode_num_accepted_tokens_per_pos",
                               "Accepted tokens per draft position.", [*labels, "position"],
                               registry=self.reg)
            self.gen = Counter("vllm:generation_tokens", "Number of generation tokens "
                               "processed.", labels, registry=self.reg)
            self.lv = [MODEL, "0"]
            for c in self.v.values():  # vLLM creates every engine's children up front
                c.labels(*self.lv)
            for i in range(self.k):
                self.pos.labels(*self.lv, str(i))
        else:
            tok = ["model_name", "engine_type"]
            self.sg_gen = Counter("sglang:generation_tokens", "Number of generation tokens "
                                  "processed.", [*tok, "is_streaming"], registry=self.reg)
            self.sg_ver = Counter("sglang:spec_verify_calls", "Number of speculative "
                                  "decoding verification calls.", tok, registry=self.reg)
            self.sg_len = Gauge("sglang:spec_accept_length", "Mean acceptance length of "
                                "speculative decoding (accepted drafts + bonus token per "
                                "forward).", [*tok, "tp_rank", "pp_rank", "moe_ep_rank"],
                                registry=self.reg)
        self.hostile = args.hostile

    # -------------------------------------------------------------------- decoding
    def step(self) -> int:
        """One verification step: the accepted draft tokens (nested)."""
        if self.a.forced is not None:  # synthetic acceptance: the mean is the forced AL
            m = self.a.forced - 1
            j = int(m) + (1 if self.rng.random() < m - int(m) else 0)
            return min(j, self.k)
        j, prev = 0, 1.0  # --rates: per-position acceptance as vLLM reports it (nested)
        for r in self.rates:
            if self.rng.random() >= r / prev:
                break
            j, prev = j + 1, r
        return j

    def generate(self, n_tokens: int, streaming: bool) -> int:
        """Produce ``n_tokens`` tokens in verification steps; the counters as the engine
        counts them."""
        made = steps = 0
        with self.lock:
            while made < n_tokens:
                j = self.step()
                steps += 1
                made += j + 1
                iv = self.interval
                iv["drafts"] += 1
                iv["draft_tokens"] += self.k
                iv["accepted"] += j
                for i in range(j):
                    iv["pos"][i] += 1
                if self.a.engine == "vllm" and not self.a.no_spec:
                    self.v["vllm:spec_decode_num_drafts"].labels(*self.lv).inc(1)
                    self.v["vllm:spec_decode_num_draft_tokens"].labels(*self.lv).inc(self.k)
                    self.v["vllm:spec_decode_num_accepted_tokens"].labels(*self.lv).inc(j)
                    for i in range(j):
                        self.pos.labels(*self.lv, str(i)).inc(1)
                if not self.a.no_spec:
                    self._maybe_log()
            if self.a.engine == "vllm" or self.a.no_spec:
                self.gen.labels(*self.lv).inc(made)
            elif not self.a.gauge_only:  # the tokenizer manager counts finished requests
                tok = {"model_name": MODEL, "engine_type": "unified"}
                self.sg_gen.labels(**tok, is_streaming=str(streaming).lower()).inc(made)
                self.sg_ver.labels(**tok).inc(steps)
        return made

    def _maybe_log(self) -> None:
        iv = self.interval
        now = time.monotonic()
        if now - iv["t"] < self.a.log_interval or not iv["drafts"]:
            return
        dt = now - iv["t"]
        stamp = time.strftime("%m-%d %H:%M:%S")
        al = 1 + iv["accepted"] / iv["drafts"]
        if self.a.engine == "vllm":
            rates = ", ".join(f"{p / iv['drafts']:.3f}" for p in iv["pos"])
            if self.a.no_log:
                self._reset(now)
                return
            self.log.write(
                f"(APIServer pid=4242) INFO {stamp} [metrics.py:120] SpecDecoding metrics: "
                f"Mean acceptance length: {al:.2f}, Accepted throughput: "
                f"{iv['accepted'] / dt:.2f} tokens/s, Drafted throughput: "
                f"{iv['draft_tokens'] / dt:.2f} tokens/s, Accepted: {iv['accepted']} "
                f"tokens, Drafted: {iv['draft_tokens']} tokens, Per-position acceptance "
                f"rate: {rates}, Avg Draft acceptance rate: "
                f"{100 * iv['accepted'] / iv['draft_tokens']:.1f}%\n")
        elif self.a.no_log:
            self.sg_len.labels(MODEL, "unified", "0", "0", "0").set(al)
        else:
            self.sg_len.labels(MODEL, "unified", "0", "0", "0").set(al)
            self.log.write(
                f"[{time.strftime('%Y-%m-%d %H:%M:%S')} TP0] Decode batch, #running-req: "
                f"{self.a.conc}, #token: 8123, token usage: 0.41, accept len: {al:.2f}, "
                f"accept rate: {(al - 1) / self.k:.2f}, cuda graph: True, gen throughput "
                f"(token/s): {(iv['drafts'] + iv['accepted']) / dt:.2f}, #queue-req: 0\n")
        self.log.flush()
        self._reset(now)

    def _reset(self, now: float) -> None:
        self.interval = {"drafts": 0, "draft_tokens": 0, "accepted": 0,
                         "pos": [0] * self.k, "t": now}

    def metrics(self) -> bytes:
        text = generate_latest(self.reg)
        if self.hostile and self.a.engine == "vllm":  # a 400-digit counter sample
            lines = text.split(b"\n")
            for i, ln in enumerate(lines):
                if ln.startswith(b"vllm:spec_decode_num_drafts_total{"):
                    lines[i] = ln.rsplit(b" ", 1)[0] + b" 1" + b"0" * 399
            text = b"\n".join(lines)
        return text


def handler(engine: Engine) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.startswith("/metrics"):
                self._send(200, engine.metrics(), "text/plain; version=0.0.4")
            elif self.path.startswith("/v1/models"):
                self._send(200, json.dumps({"object": "list", "data": [
                    {"id": MODEL, "object": "model"}]}).encode())
            else:
                self._send(200, b"{}")

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0)))
                              or b"{}")
            n = int(body.get("max_completion_tokens") or body.get("max_tokens") or 64)
            stream = bool(body.get("stream"))
            made = engine.generate(n, stream)
            time.sleep(engine.a.latency)
            text = " ".join(["tok"] * made)
            usage = {"prompt_tokens": 32, "completion_tokens": made,
                     "total_tokens": 32 + made}
            if not stream:
                self._send(200, json.dumps({
                    "id": "c", "object": "chat.completion", "created": int(time.time()),
                    "model": MODEL, "choices": [{"index": 0, "finish_reason": "length",
                                                 "message": {"role": "assistant",
                                                             "content": text}}],
                    "usage": usage}).encode())
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for chunk in ({"choices": [{"index": 0, "delta": {"role": "assistant",
                                                              "content": text}}]},
                          {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
                           "usage": usage}):
                payload = {"id": "c", "object": "chat.completion.chunk", "model": MODEL,
                           "created": int(time.time()), **chunk}
                self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

    return H


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--engine", choices=("vllm", "sglang"), required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--rates", default="")
    p.add_argument("--forced", type=float, default=None)
    p.add_argument("--log", required=True)
    p.add_argument("--log-interval", type=float, default=1.0)
    p.add_argument("--latency", type=float, default=0.02)
    p.add_argument("--conc", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hostile", action="store_true")
    p.add_argument("--no-log", action="store_true", help="write no acceptance log lines")
    p.add_argument("--gauge-only", action="store_true", help="SGLang before "
                   "spec_verify_calls: only the spec_accept_length gauge")
    p.add_argument("--no-spec", action="store_true", help="serve no spec-decode families "
                   "and log no acceptance lines (a launch whose drafter never ran)")
    args = p.parse_args()
    engine = Engine(args)
    ThreadingHTTPServer(("127.0.0.1", args.port), handler(engine)).serve_forever()


if __name__ == "__main__":
    main()
