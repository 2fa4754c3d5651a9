"""Tracing recipes written for the tests: one per engine, both EVAL_ONLY values, exact
captured argv/env and verdicts; the hostile recipe is contained."""

from __future__ import annotations

import os
import shutil
import tempfile
import types
from pathlib import Path
from typing import Any

import pytest

from inferencex_tools.policy.check import evaluate
from inferencex_tools.policy.engines import engine_of, facts_of
from inferencex_tools.policy.pipeline import RepoIndex
from inferencex_tools.policy.resolve import Row, enumerate_rows
from inferencex_tools.policy.store import CurveStore, open_store
from inferencex_tools.sandbox import Record, TraceResult, namespaces_available, trace_script
from inferencex_tools.sandbox import trace as sandbox_trace

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "tests" / "cases" / "policy" / "recipes"
SUB = "benchmarks/single_node/agentic"


@pytest.fixture(scope="module")
def store(corpus: Path) -> CurveStore:
    return open_store(None, corpus / "golden_al_distribution", root=ROOT)


def mini_repo(tmp: Path, script: str, text: str | None = None) -> Path:
    (tmp / SUB).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "benchmarks/benchmark_lib.sh", tmp / "benchmarks/benchmark_lib.sh")
    body = text if text is not None else (RECIPES / script).read_text()
    (tmp / SUB / script).write_text(body)
    return tmp


def row_for(prefix: str, framework: str, conc: int, eval_only: bool, model: str) -> Row:
    doc: dict[str, Any] = {"k": {
        "image": "img", "model": model, "model-prefix": prefix, "precision": "fp8",
        "framework": framework, "runner": "cluster:x", "multinode": False,
        "scenarios": {"agentic-coding": [{"search-space": [
            {"tp": 8, "ep": 1, "spec-decoding": "mtp", "kv-offloading": "none",
             "conc-list": [conc]}]}]},
    }}
    rows = enumerate_rows("configs/t-master.yaml", doc, "k:\n", globs=None, all_evals=False)
    return next(r for r in rows if r.eval_only is eval_only)


def server(tr: TraceResult) -> tuple[Record, str]:
    found = [(r, e) for r in tr.records if (e := engine_of(r))]
    assert len(found) == 1, [r.tool for r in tr.records]
    return found[0]


def run(tmp: Path, script: str, row: Row, text: str | None = None) -> TraceResult:
    repo = mini_repo(tmp, script, text)
    tr = trace_script(repo, f"{SUB}/{script}", row.env("h200-dgxc-slurm_0"), timeout=30)
    assert tr.ok, (tr.returncode, tr.last_line, tr.stderr_tail[-800:])
    return tr


def verdicts(tmp: Path, script: str, row: Row, tr: TraceResult, store: CurveStore) -> list[str]:
    text = (tmp / SUB / script).read_text()
    return sorted(v.rule.id for v in evaluate(row, f"{SUB}/{script}", text, tr, store).verdicts)


@pytest.mark.parametrize("eval_only", [False, True])
def test_vllm_dspark_probabilistic(tmp_path: Path, store: CurveStore, eval_only: bool) -> None:
    row = row_for("kimik3", "vllm", 4, eval_only, "moonshotai/Kimi-K3")
    tr = run(tmp_path, "vllm_kimik3_dspark.sh", row)
    rec, eng = server(tr)
    verify = ('"rejection_sample_method":"block"' if eval_only else
              '"rejection_sample_method":"synthetic","synthetic_acceptance_length":3.00')
    assert eng == "vllm"
    assert rec.argv == (
        "vllm", "serve", "moonshotai/Kimi-K3", "--tensor-parallel-size", "8",
        "--default-chat-template-kwargs", '{"thinking": true}', "--speculative-config",
        '{"method":"dspark","model":"/data/models/Kimi-K3-DSpark","num_speculative_tokens":3,'
        '"draft_sample_method":"probabilistic",' + verify + "}")
    assert rec.env["CONC"] == "4" and rec.env["EVAL_ONLY"] == str(eval_only).lower()
    f = facts_of(rec, eng)
    assert (f.method, f.k, f.sample, f.synthetic) == ("dspark", 3, "probabilistic", not eval_only)
    # the library's helpers run as they are: their client is what the trace records
    clients = [r.tool for r in tr.records if r.tool.startswith("python -m ")]
    assert clients == ["python -m lm_eval" if eval_only else "python -m aiperf"], clients
    assert verdicts(tmp_path, "vllm_kimik3_dspark.sh", row, tr, store) == []


def test_vllm_k_follows_concurrency(tmp_path: Path, store: CurveStore) -> None:
    row = row_for("kimik3", "vllm", 16, False, "moonshotai/Kimi-K3")
    tr = run(tmp_path, "vllm_kimik3_dspark.sh", row)
    f = facts_of(*server(tr))
    assert (f.k, f.al) == (2, 2.51)
    assert verdicts(tmp_path, "vllm_kimik3_dspark.sh", row, tr, store) == []


@pytest.mark.parametrize("eval_only", [False, True])
def test_sglang_native_mtp(tmp_path: Path, store: CurveStore, eval_only: bool) -> None:
    row = row_for("qwen3.5", "sglang", 8, eval_only, "Qwen/Qwen3.5-397B-A17B-FP8")
    tr = run(tmp_path, "sglang_qwen35_mtp.sh", row)
    rec, eng = server(tr)
    assert eng == "sglang" and rec.tool == "python -m sglang.launch_server"
    assert rec.argv == (
        "python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3.5-397B-A17B-FP8",
        "--tp", "8", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4")
    knobs = {k: v for k, v in rec.env.items() if k.startswith("SGLANG_SIMULATE")}
    assert knobs == ({} if eval_only else {
        "SGLANG_SIMULATE_ACC_LEN": "3.39", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
        "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"})
    f = facts_of(rec, eng)
    assert (f.method, f.draft, f.k) == ("mtp", None, 3)
    assert verdicts(tmp_path, "sglang_qwen35_mtp.sh", row, tr, store) == []


@pytest.mark.parametrize("eval_only", [False, True])
def test_trt_eagle3_gqa_local_draft(tmp_path: Path, store: CurveStore, eval_only: bool) -> None:
    row = row_for("minimaxm3", "trt", 4, eval_only, "MiniMaxAI/MiniMax-M3")
    tr = run(tmp_path, "trt_minimaxm3_eagle3.sh", row)
    rec, eng = server(tr)
    assert eng == "trt" and rec.tool == "mpirun"
    assert rec.argv == ("mpirun", "-n", "1", "--allow-run-as-root", "trtllm-serve",
                        "MiniMaxAI/MiniMax-M3", "--tp_size", "8", "--config", "ser.yaml")
    assert "max_draft_len: 3" in rec.files["ser.yaml"]
    assert rec.env.get("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS") == (
        None if eval_only else "1.78")
    f = facts_of(rec, eng)
    assert (f.method, f.draft, f.k) == ("eagle3", "/data/models/MiniMax-M3-EAGLE3-GQA", 3)
    if not eval_only:
        assert f.al == pytest.approx(2.78) and f.unit == "al-1"
    assert verdicts(tmp_path, "trt_minimaxm3_eagle3.sh", row, tr, store) == []


@pytest.mark.parametrize("eval_only", [False, True])
def test_atom_rate_form(tmp_path: Path, store: CurveStore, eval_only: bool) -> None:
    row = row_for("glm5.2", "atom", 4, eval_only, "zai-org/GLM-5.2-FP8")
    tr = run(tmp_path, "atom_glm52_mtp.sh", row)
    rec, eng = server(tr)
    assert eng == "atom"
    tail = () if eval_only else ("--spec-decode-acceptance-rate", "0.663333")
    assert rec.argv == ("python3", "-u", "-m", "atom.entrypoints.openai_server", "--model",
                        "zai-org/GLM-5.2-FP8", "-tp", "8", "--method", "mtp",
                        "--num-speculative-tokens", "3", *tail)
    f = facts_of(rec, eng)
    if not eval_only:
        assert f.al == pytest.approx(2.989999) and f.unit == "rate"
    assert verdicts(tmp_path, "atom_glm52_mtp.sh", row, tr, store) == []


# --- wrong recipes: each fails with its own rule --------------------------------------


def test_trt_without_minus_one(tmp_path: Path, store: CurveStore) -> None:
    text = (RECIPES / "trt_minimaxm3_eagle3.sh").read_text().replace(
        "NUM_ACCEPTED_TOKENS=1.78", "NUM_ACCEPTED_TOKENS=2.78")
    row = row_for("minimaxm3", "trt", 4, False, "MiniMaxAI/MiniMax-M3")
    tr = run(tmp_path, "trt_minimaxm3_eagle3.sh", row, text)
    assert verdicts(tmp_path, "trt_minimaxm3_eagle3.sh", row, tr, store) == ["PO409"]


def test_framework_mismatch(tmp_path: Path, store: CurveStore) -> None:
    row = row_for("qwen3.5", "vllm", 8, False, "Qwen/Qwen3.5")
    tr = run(tmp_path, "sglang_qwen35_mtp.sh", row)
    assert "PO203" in verdicts(tmp_path, "sglang_qwen35_mtp.sh", row, tr, store)


# --- the hostile recipe -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["namespaces", "bwrap", "basic-as-root"])
def test_hostile_recipe_is_contained(tmp_path: Path, store: CurveStore, temp_repo: Any,
                                     mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate = mode == "namespaces"
    if isolate and not namespaces_available():
        pytest.skip("user namespaces unavailable")
    if mode == "basic-as-root" and os.geteuid() != 0:
        pytest.skip("the basic sandbox protects the repository only when run as root")
    if mode == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed here")
    if mode == "basic-as-root":  # bubblewrap is tried first: this case is without it
        monkeypatch.setattr(sandbox_trace, "find_bwrap", lambda path, **kw: None)
    repo: Path = temp_repo.path
    temp_repo.write("README", "precious\n")
    text = (RECIPES / "hostile.sh").read_text().replace("@REPO@", str(repo))
    temp_repo.write(f"{SUB}/hostile.sh", text)
    shutil.copyfile(ROOT / "benchmarks/benchmark_lib.sh", repo / "benchmarks/benchmark_lib.sh")
    temp_repo.commit("repo")
    before = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*"))
    row = row_for("minimaxm3", "vllm", 4, False, "MiniMaxAI/MiniMax-M3")
    try:
        tr = trace_script(repo, f"{SUB}/hostile.sh", row.env("x_0"), timeout=4,
                          isolate=isolate, allow_unsandboxed=not isolate)
    finally:
        escaped = Path(tempfile.gettempdir()) / "ixtool-escaped"
        escaped_exists = escaped.exists()
        escaped.unlink(missing_ok=True)
    assert tr.timed_out and tr.seconds >= 4  # stopped by the 4 s bound, not by its end
    assert "network tool 'curl' called (stubbed)" in tr.events
    assert sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*")) == before
    assert temp_repo.git("status", "--porcelain") == ""
    assert not Path("/etc/ixtool-pwned").exists()
    assert tr.isolation == mode.removesuffix("-as-root")
    if mode != "basic-as-root":
        assert "write outside the sandbox directory blocked" in tr.events
        assert "network access blocked" in tr.events
        assert not escaped_exists
    else:
        assert "permission denied" in tr.events
    # the timeout stopped it: no verdict, an error that says so
    assert verdicts_hostile(repo, text, row, tr, store) == ["PO310"]


def verdicts_hostile(repo: Path, text: str, row: Row, tr: TraceResult,
                     store: CurveStore) -> list[str]:
    return sorted(v.rule.id for v in evaluate(row, f"{SUB}/hostile.sh", text, tr,
                                              store).verdicts)


# --- the launcher exports what the tracer passes ------------------------------------


@pytest.mark.parametrize(("entry", "conc", "eval_only"), [(0, 1, False), (2, 16, True)])
def test_launcher_exports_the_traced_variables(
    tmp_path: Path, entry: int, conc: int, eval_only: bool
) -> None:
    """Trace runners/launch_h200-dgxc-slurm.sh itself: the recorded srun names the script
    the §7 resolver picks, and exports every variable the script trace is given."""
    from inferencex_tools.io.yamlio import load_safe
    from inferencex_tools.policy.resolve import resolve_script

    cfg = ROOT / "configs/nvidia-master.yaml"
    rows = enumerate_rows("configs/nvidia-master.yaml", load_safe(cfg.read_bytes()),
                          cfg.read_text(), globs=None, all_evals=True)
    row = next(r for r in rows if r.key == "minimaxm3-fp8-h200-vllm-agentic-mtp"
               and (r.entry_index, r.conc, r.eval_only) == (entry, conc, eval_only))
    res = resolve_script(ROOT, row, "h200-dgxc-slurm")
    assert res.script == "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"
    repo = tmp_path / "repo"
    (repo / "runners").mkdir(parents=True)
    shutil.copytree(ROOT / "benchmarks", repo / "benchmarks")
    shutil.copyfile(ROOT / "runners/launch_h200-dgxc-slurm.sh",
                    repo / "benchmarks/launch_h200-dgxc-slurm.sh")
    env = row.env("h200-dgxc-slurm_3")
    tr = trace_script(repo, "benchmarks/launch_h200-dgxc-slurm.sh",
                      {**env, "GITHUB_WORKSPACE": "."}, timeout=30)
    assert tr.ok, tr.stderr_tail
    (srun,) = [r for r in tr.records if r.tool == "srun"]
    assert srun.argv[-2:] == ("bash", res.script)
    assert "--container-image=vllm/vllm-openai:v0.27.1" in srun.argv
    assert "--gres=gpu:8" in srun.argv
    for k, v in env.items():
        assert srun.env.get(k) == v, k


_HEAD = '#!/usr/bin/env bash\nset -euo pipefail\nsource "$(dirname "$0")/../../benchmark_lib.sh"\n'


@pytest.mark.parametrize(
    ("body", "spec", "expected"),
    [
        # no server at all
        ('echo "nothing to launch"\n', "mtp", ["PO302"]),
        # a draft head without a curve (the kimik2.5 row has no draft id)
        ("vllm serve m --speculative-config "
         "'{\"method\":\"eagle3\",\"model\":\"x/Unknown-EAGLE3\",\"num_speculative_tokens\":3,"
         "\"rejection_sample_method\":\"synthetic\",\"synthetic_acceptance_length\":2.83}'\n",
         "mtp", ["PO405"]),
        # K outside 1..8
        ("vllm serve m --speculative-config "
         "'{\"method\":\"eagle3\",\"model\":\"Inferact/MiniMax-M3-EAGLE3\","
         "\"num_speculative_tokens\":12,\"rejection_sample_method\":\"synthetic\","
         "\"synthetic_acceptance_length\":2.83}'\n", "mtp", ["PO414"]),
        # drafting although the config says spec-decoding none (still checked: AL wrong)
        ("vllm serve m --default-chat-template-kwargs '{\"thinking_mode\":\"enabled\"}' "
         "--speculative-config '{\"method\":\"eagle3\",\"model\":\"Inferact/MiniMax-M3-EAGLE3\","
         "\"num_speculative_tokens\":3,\"rejection_sample_method\":\"synthetic\","
         "\"synthetic_acceptance_length\":2.90}'\n", "none", ["PO403", "PO415"]),
    ],
    ids=["no-server", "no-curve", "bad-k", "unlabelled"],
)
def test_more_rules(tmp_path: Path, store: CurveStore, body: str, spec: str,
                    expected: list[str]) -> None:
    row = row_for("minimaxm3", "vllm", 4, False, "MiniMaxAI/MiniMax-M3")
    if spec == "none":
        row = Row(**{**row.__dict__, "entry": {**row.entry, "spec-decoding": "none"}})
    tr = run(tmp_path, "inline.sh", row, _HEAD + body)
    assert verdicts(tmp_path, "inline.sh", row, tr, store) == expected


def test_pip_installs_become_importable_with_their_version(tmp_path: Path) -> None:
    """What a recipe installs with pip is there afterwards (a stand-in with metadata), as
    a container's setup step leaves it; a stand-in package runs with python -m."""
    text = ("#!/bin/bash\nset -e\n"
            "pip install --quiet --no-deps 'ixfakepkg==1.2.3' other-pkg\n"
            "python3 -m pip install ixfakethird==4.5\n"
            "python3 - <<'PY'\nimport ixfakepkg.sub.mod\nfrom importlib.metadata import version\n"
            "print('V', version('ixfakepkg'), version('other-pkg'), version('ixfakethird'))\nPY\n"
            "python3 -m ixfakepkg.tool --help\n"
            "echo done\n")
    repo = mini_repo(tmp_path, "install.sh", text)
    tr = trace_script(repo, f"{SUB}/install.sh", {"PATH": "/usr/bin:/bin"}, timeout=30)
    assert tr.returncode == 0, tr.stderr_tail
    assert "V 1.2.3 0.0.0 4.5" in tr.stdout_tail and "done" in tr.stdout_tail


def test_sed_and_hf_stubs(tmp_path: Path) -> None:
    """sed runs for real (its output and exit status); only a failed in-place edit is
    tolerated.  hf download leaves a snapshot in the hub cache or in --local-dir."""
    text = ("#!/bin/bash\n"
            "echo a-b | sed 's/-/+/'\n"
            "sed 's/x/y/' /nonexistent/file; echo \"rc=$?\"\n"
            "sed -i 's/x/y/' /nonexistent/file; echo \"rc_i=$?\"\n"
            "printf 'old\\n' > f.txt; sed -i 's/old/new/' f.txt; cat f.txt\n"
            "snap=$(hf download org/model)\n"
            "ls \"$snap\" | tr '\\n' ' '; echo\n"
            "hf download org/model --local-dir \"$PWD/m\" > /dev/null; ls m | wc -l\n"
            "echo done\n")
    repo = mini_repo(tmp_path, "sedhf.sh", text)
    tr = trace_script(repo, f"{SUB}/sedhf.sh", {"PATH": "/usr/bin:/bin"}, timeout=30)
    assert tr.returncode == 0, tr.stderr_tail
    out = tr.stdout_tail
    assert "a+b" in out and "rc=2" in out and "rc_i=0" in out and "\nnew\n" in out
    assert "config.json" in out and "model.safetensors.index.json" in out
    assert "\n6\ndone" in out, out


@pytest.mark.parametrize(("body", "missing"), [
    ("set -u\necho \"model $MODEL at $RESULT_DIR\"\n", "RESULT_DIR"),
    # the real benchmark_lib.sh's check: one "  - NAME" line per missing variable
    ('check_env_vars() {\n  local m=() v\n  for v in "$@"; do [[ -z "${!v:-}" ]] && m+=("$v");'
     ' done\n  if ((${#m[@]})); then\n    echo "Error: The following required environment '
     'variables are not set:"\n    for v in "${m[@]}"; do echo "  - $v"; done\n    exit 1\n'
     '  fi\n}\ncheck_env_vars MODEL RESULT_DIR RANDOM_RANGE_RATIO\n',
     "RESULT_DIR,RANDOM_RANGE_RATIO"),
], ids=["set-u", "check_env_vars"])
def test_a_failed_trace_names_the_missing_variable(tmp_path: Path, body: str,
                                                   missing: str) -> None:
    """PO301's message: the last traced line, the script's last stderr lines and the
    variable the script says it lacks."""
    from inferencex_tools.policy.check import failure_message

    repo = mini_repo(tmp_path, "needs.sh", "#!/bin/bash\n" + body)
    tr = trace_script(repo, f"{SUB}/needs.sh", {"PATH": "/usr/bin:/bin", "MODEL": "m"},
                      timeout=30)
    assert tr.returncode not in (0, None)
    msg, data = failure_message(tr)
    assert dict(data)["missing_variables"] == missing, msg
    assert "last traced line: " in msg and "missing variable" in msg


def test_a_failed_trace_that_reports_on_stdout_says_so(tmp_path: Path) -> None:
    """A recipe that hides its steps (`set +x`) and reports a failure on stdout only (the
    benchmark library's "Server died before becoming healthy"): PO301's message carries
    the last stdout lines, which are not part of the verdict's identity (another process
    id, the same verdict at the base and at the head)."""
    from inferencex_tools.policy.check import STDOUT_PART, failure_message

    body = ('echo "Server PID: $$"\nset +x\nfalse_step() { echo "Server died before '
            'becoming healthy. Exiting."; exit 1; }\nfalse_step\n')
    repo = mini_repo(tmp_path, "dies.sh", "#!/bin/bash\n" + body)
    tr = trace_script(repo, f"{SUB}/dies.sh", {"PATH": "/usr/bin:/bin"}, timeout=30)
    assert tr.returncode == 1
    msg, data = failure_message(tr)
    assert msg.endswith(STDOUT_PART + "Server PID: " + tr.stdout_tail.split("PID: ")[1]
                        .splitlines()[0] + " | Server died before becoming healthy. Exiting."), msg
    assert "Server died" in dict(data)["stdout"]
    tr.stderr_tail = "dies.sh: line 4: boom\n"
    msg, data = failure_message(tr)  # stderr said why: stdout is left out
    assert "stdout" not in dict(data) and msg.endswith("; stderr: dies.sh: line 4: boom"), msg


def test_a_verdict_s_identity_leaves_out_the_stdout_lines() -> None:
    from inferencex_tools.policy.check import STDOUT_PART
    from inferencex_tools.policy.rules import TRACE_FAILED
    from inferencex_tools.policy.service import _verdict_id

    def vid(message: str) -> tuple[str, ...]:
        row = types.SimpleNamespace(key="k", entry_label=lambda: "tp8", eval_only=False)
        out = types.SimpleNamespace(row=row, family="")
        v = types.SimpleNamespace(rule=TRACE_FAILED, file="r.sh", message=message)
        return _verdict_id(out, v)  # type: ignore[arg-type]

    stem = "trace exit status 1; last traced line: r.sh:3: vllm serve m"
    assert vid(stem + STDOUT_PART + "Server PID: 41 | died") == \
        vid(stem + STDOUT_PART + "Server PID: 97 | died") == vid(stem)
    assert vid(stem) != vid(stem.replace("status 1", "status 2"))


def test_batched_reads_keep_every_output(tmp_path: Path) -> None:
    """The pipes are read in batches, not at each write: a trace that writes more than a
    pipe holds (stdout, stderr, its `set -x` lines) and many records still ends, with
    the tails, the last traced line and every record it made."""
    text = ("#!/bin/bash\n"
            "for i in $(seq 3000); do printf '%0200d\\n' \"$i\"; done\n"
            "for i in $(seq 3000); do printf '%0200d\\n' \"$i\" >&2; done\n"
            "for i in $(seq 60); do git rev-parse \"r$i\" > /dev/null; done\n"
            "i=0; while ((i < 5000)); do ((i += 1)); done\n"
            "echo last-out; echo last-err >&2\n"
            "final_step=1\n")
    repo = mini_repo(tmp_path, "loud.sh", text)
    tr = trace_script(repo, f"{SUB}/loud.sh", {"PATH": "/usr/bin:/bin"}, timeout=60)
    assert tr.returncode == 0, tr.stderr_tail[-400:]
    assert tr.stdout_tail.endswith("last-out\n") and tr.stderr_tail.endswith("last-err\n")
    assert tr.last_line is not None and tr.last_line.endswith("final_step=1"), tr.last_line
    revs = [r.argv[-1] for r in tr.records if r.tool == "git"]
    assert revs == [f"r{i}" for i in range(1, 61)]


def test_slurm_and_download_stubs(tmp_path: Path) -> None:
    """The simulated Slurm tools and curl's -o answer from their options (read without a
    subshell): salloc/sbatch allocate named jobs, squeue finds them by name or id, scancel
    ends them; curl -o/--output leaves the file; git needs none of the stub's helpers."""
    text = ("#!/bin/bash\nset -eu\n"
            "salloc --job-name=alpha -N 1 2> alloc.txt\n"
            "a=$(sed -n 's/.*allocation //p' alloc.txt)\n"
            "b=$(sbatch --job-name beta job.sh | awk '{print $4}')\n"
            "echo \"by-name $(squeue --name=alpha -h) $(squeue --name beta)\"\n"
            "[[ $(squeue -j \"$b\") == \"$b\" && $(squeue --jobs=\"$a\") == \"$a\" ]]\n"
            "[[ $a =~ ^[45][0-9]{3}$ && $b =~ ^[45][0-9]{3}$ ]]\n"
            "echo \"ok-ids $a $b\" > ids.txt\n"
            "scancel --name=alpha; echo \"left $(squeue | tr '\\n' ' ')\"\n"
            "scancel \"$b\"; echo \"none [$(squeue)]\"\n"
            "curl -sL -o out.bin https://x.invalid/a; wget --output=o2 https://x.invalid/b\n"
            "ls out.bin o2\n"
            "git clone https://x.invalid/repo.git; ls -d repo\n"
            "echo done\n")
    repo = mini_repo(tmp_path, "slurm.sh", text)
    tr = trace_script(repo, f"{SUB}/slurm.sh", {"PATH": "/usr/bin:/bin"}, timeout=30)
    assert tr.returncode == 0, tr.stderr_tail[-600:]
    out = tr.stdout_tail
    ids = [r for r in tr.records if r.tool in ("salloc", "sbatch")]
    assert [r.tool for r in ids] == ["salloc", "sbatch"]
    first = out.split("by-name ", 1)[1].split("\n", 1)[0].split()
    assert len(first) == 2 and first[0] != first[1], out
    assert f"left {first[1]} \n" in out and "none []\n" in out, out
    assert "o2\nout.bin\n" in out and "repo\n" in out and out.endswith("done\n")


def test_recorded_environment_is_the_exported_one(tmp_path: Path) -> None:
    """A record's environment is what the recording shell exports (``compgen -e``), read
    with builtins only: shell variables, arrays and unset names stay out, a `set -u`
    script's stubs still work, temporary assignments count."""
    text = ("#!/bin/bash\nset -eu\n"
            "source \"$(dirname \"$0\")/../../benchmark_lib.sh\"\n"
            "export EXPORTED=yes\nPLAIN=no\ndeclare -a EMPTY_ARR=()\nexport DECLARED_ONLY\n"
            "f() { local -x LOCAL_X=lx; srun --jobid 1 true; aiperf profile --x 1; }\n"
            "TEMP_ONE=t f\n"
            "echo done\n")
    repo = mini_repo(tmp_path, "envs.sh", text)
    tr = trace_script(repo, f"{SUB}/envs.sh", {"PATH": "/usr/bin:/bin", "FROM_JOB": "j"},
                      timeout=30)
    assert tr.returncode == 0, tr.stderr_tail[-600:]
    recs = {r.tool: r for r in tr.records if r.tool in ("srun", "aiperf")}
    assert set(recs) == {"srun", "aiperf"}
    for r in recs.values():
        assert {"EXPORTED", "FROM_JOB", "LOCAL_X", "TEMP_ONE", "PATH"} <= set(r.env), r.env
        assert not {"PLAIN", "EMPTY_ARR", "DECLARED_ONLY"} & set(r.env), r.env
        assert r.env["EXPORTED"] == "yes" and r.env["TEMP_ONE"] == "t"


def test_what_the_stubbed_programs_leave_is_there(tmp_path: Path) -> None:
    """The stubbed programs leave what a job's would, for the recipe and the library
    functions that check it: a GPU monitor started in the background runs until it is
    killed (an nvidia-smi one ended at once: a `set -e` `kill` of it failed); a package
    installed into a venv brings its console scripts there (a
    project's from its pyproject, an index package's under its name); aiperf leaves the
    artifacts its callers check; a number the image would compute reads as 0; a health
    check of the job's own server is no network access (PO303), a download is."""
    text = r"""#!/bin/bash
set -euo pipefail
nvidia-smi --query-gpu=power.draw --format=csv -l 1 > gpu.csv &
MON=$!
amd-smi metric -w 1 --csv > amd.csv &
AMON=$!
uv venv --python 3.11 venv
mkdir -p proj
printf '[project]\nname = "proj"\n[project.scripts]\nproj-cli = "proj:main"\n' > proj/pyproject.toml
uv pip install --python venv/bin/python -e ./proj "huggingface_hub[cli]>=0.25" aiperf
[ -x venv/bin/proj-cli ] && [ -x venv/bin/hf ] && [ -x venv/bin/aiperf ]
venv/bin/proj-cli --version
venv/bin/aiperf profile --output-artifact-dir results/art
[ -s results/art/server_metrics_export.json ] && [ -s results/art/server_metrics_export.csv ]
grep -q '"sglang:' results/art/server_metrics_export.json
N=$(python3 -c "from transformers import AutoConfig
print(AutoConfig.from_pretrained('m').max_position_embeddings)")
echo "N=$((N + 1))"
curl -sf http://127.0.0.1:8000/health
kill -0 "$MON" && kill "$MON" && kill "$AMON"
echo done
"""
    repo = mini_repo(tmp_path, "helpers.sh", text)
    tr = trace_script(repo, f"{SUB}/helpers.sh", {"PATH": "/usr/bin:/bin"}, timeout=30)
    assert tr.returncode == 0, tr.stderr_tail[-800:]
    assert "N=1\n" in tr.stdout_tail and tr.stdout_tail.endswith("done\n"), tr.stdout_tail
    tools = [r.tool for r in tr.records]
    assert {"container:proj-cli", "aiperf"} <= set(tools), tools
    assert not [e for e in tr.events if "network tool" in e], tr.events
    text = text.replace("http://127.0.0.1:8000/health", "https://example.com/x")
    repo = mini_repo(tmp_path / "remote", "helpers.sh", text)
    tr = trace_script(repo, f"{SUB}/helpers.sh", {"PATH": "/usr/bin:/bin"}, timeout=30)
    assert "network tool 'curl' called (stubbed)" in tr.events, tr.events



def test_a_benchmark_client_is_recorded_not_run(tmp_path: Path) -> None:
    """A benchmark client python runs by path (``sandbox.CLIENT_SCRIPTS``) is a stubbed
    program: recorded with its arguments, not run (it would load the served model);
    another repository Python program still runs."""
    text = """set -euo pipefail
python3 -u "$PWD/utils/bench_serving/benchmark_serving.py" --model m --num-prompts 10
python3 "$PWD/utils/other.py"
echo "done"
"""
    repo = mini_repo(tmp_path / "remote", "client.sh", text)
    (repo / "utils/bench_serving").mkdir(parents=True)
    (repo / "utils/bench_serving/benchmark_serving.py").write_text(
        "print('the client ran')\nraise SystemExit(3)\n")
    (repo / "utils/other.py").write_text("print('other ran')\n")
    tr = trace_script(repo, f"{SUB}/client.sh", {"PATH": "/usr/bin:/bin"}, timeout=30,
                      clients=RepoIndex(repo).clients())
    assert tr.ok, (tr.returncode, tr.last_line, tr.stderr_tail)
    assert "the client ran" not in tr.stdout_tail and "other ran" in tr.stdout_tail
    client = [r for r in tr.records if r.tool == "python benchmark_serving.py"]
    assert len(client) == 1 and client[0].argv[-2:] == ("--num-prompts", "10"), \
        [(r.tool, r.argv) for r in tr.records]


_CLIENT_RUN = 'python3 {opt}"$PWD/utils/bench_serving/benchmark_serving.py" --model m\n'


@pytest.mark.parametrize("how,before,opt", [
    ("the client the check trusts", "", ""),
    ("no client trusted (the manifest is the session's)", "", ""),
    ("what the client imports rewritten by the recipe",
     'echo "import os" >> "$PWD/utils/bench_serving/backend_request_func.py"\n', ""),
    ("the client itself rewritten by the recipe",
     'echo "#" >> "$PWD/utils/bench_serving/benchmark_serving.py"\n', ""),
    ("a PYTHONPATH of the job's", 'export PYTHONPATH="$PWD/utils"\n', ""),
    ("a warnings filter, which imports its category", "", "-W error::x.Warn "),
])
def test_a_benchmark_client_runs_unless_it_is_the_one_trusted(
        tmp_path: Path, how: str, before: str, opt: str) -> None:
    """The trace records a client instead of running it only while it is the one the
    check trusts (``Session(clients=…)``: its code unchanged from the base, byte for
    byte when python starts it, in a Python environment of the job's defaults);
    otherwise it runs as it is — a launch hidden in it or in what it imports is seen."""
    text = f"set -euo pipefail\n{before}{_CLIENT_RUN.format(opt=opt)}echo done\n"
    repo = mini_repo(tmp_path / "remote", "client.sh", text)
    (repo / "utils/bench_serving").mkdir(parents=True)
    (repo / "utils/bench_serving/benchmark_serving.py").write_text(
        "import backend_request_func\nprint('the client ran')\n")
    (repo / "utils/bench_serving/backend_request_func.py").write_text("X = 1\n")
    clients = None if how.startswith("no client") else RepoIndex(repo).clients()
    assert clients is None or list(clients) == ["utils/bench_serving/benchmark_serving.py"]
    tr = trace_script(repo, f"{SUB}/client.sh", {"PATH": "/usr/bin:/bin"}, timeout=30,
                      clients=clients)
    assert tr.ok, (how, tr.returncode, tr.last_line, tr.stderr_tail)
    recorded = [r for r in tr.records if r.tool == "python benchmark_serving.py"]
    ran = "the client ran" in tr.stdout_tail
    if how == "the client the check trusts":
        assert len(recorded) == 1 and not ran, (how, tr.stdout_tail)
    else:
        assert not recorded and ran, (how, tr.stdout_tail, tr.stderr_tail)
