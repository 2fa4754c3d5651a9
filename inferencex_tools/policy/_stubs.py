"""Text of the files the tracing sandbox installs (recorder, shim, entry script).

Kept apart from :mod:`trace` so the logic there stays readable.  ``@ROOT@`` is replaced
by the sandbox root as the traced script sees it.
"""

from __future__ import annotations

# Executables replaced by the recorder (first on PATH).  Servers and launchers record and
# exit 0; host probes print plausible output; side effects are swallowed.
SERVER_TOOLS = ("vllm", "sglang", "trtllm-serve", "mpirun", "vllm-router", "atom")
SIDE_EFFECT_TOOLS = (
    "hf", "huggingface-cli", "nvidia-smi", "amd-smi", "rocm-smi", "numactl", "ibv_devinfo",
    "git", "curl", "wget", "pip", "pip3", "uv", "apt-get", "apt", "sudo", "make", "cmake",
    "docker", "podman", "enroot", "modal", "srun", "sbatch", "salloc", "scancel", "squeue",
    "ssh", "scp", "rsync", "nc", "lm_eval", "aiperf", "srtctl", "nvcc",
)
DAEMON_TOOLS = ("mooncake_master", "mooncake_client", "etcd", "nats-server")
PYTHON_TOOLS = ("python", "python3")
SLEEP_TOOLS = ("sleep",)
ALL_TOOLS = SERVER_TOOLS + SIDE_EFFECT_TOOLS + DAEMON_TOOLS + PYTHON_TOOLS + SLEEP_TOOLS

# python -m <module> prefixes that are recorded instead of run.
STUB_MODULES = (
    "sglang.launch_server", "sglang_router", "sglang.srt", "atom.entrypoints",
    "vllm.entrypoints", "vllm", "pip", "uv", "lm_eval", "aiperf", "mooncake", "lmcache",
    "dynamo", "tensorrt_llm", "huggingface_hub", "venv",
)

# benchmark_lib functions replaced by recorders (TRACING-NOTES "What had to be stubbed").
WAIT_FUNCTIONS = ("wait_for_server_ready", "wait_for_ready")
RECORD_FUNCTIONS = (
    "run_eval", "run_lm_eval", "run_swebench_eval", "run_benchmark_serving",
    "build_replay_cmd", "run_agentic_replay_and_write_outputs", "install_agentic_deps",
    "agentic_pip_install", "ensure_agentic_uv", "ensure_hf_cli", "resolve_trace_source",
    "start_gpu_monitor", "stop_gpu_monitor", "wait_for_amd_gpu_clean",
    "validate_required_agentic_server_metrics", "write_agentic_result_json",
    "stop_background_process_tree", "stop_server",
)

RECORDER = r'''
import json, os, sys, time

ROOT = "@ROOT@"
BIN = ROOT + "/.ixtrace/bin"
RECORDS = ROOT + "/.ixtrace/records"
STUB_MODULES = @STUB_MODULES@
DAEMONS = @DAEMONS@
PY_FLAGS_WITH_ARG = ("-X", "-W", "-c")


def record(tool, argv):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("IXTRACE_") and k not in ("_", "SHLVL", "OLDPWD")}
    files = {}
    for a in argv:
        for cand in (a, a.split("=", 1)[-1]):
            if cand.endswith((".yaml", ".yml", ".json")) and os.path.isfile(cand):
                try:
                    if os.path.getsize(cand) <= 1 << 20:
                        with open(cand, encoding="utf-8", errors="replace") as fh:
                            files[cand] = fh.read()
                except OSError:
                    pass
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = "?"
    rec = {"tool": tool, "argv": argv, "cwd": cwd, "env": env, "files": files,
           "pid": os.getpid(), "t": time.time_ns()}
    name = "%d-%d" % (time.time_ns(), os.getpid())
    tmp = RECORDS + "/." + name
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(rec, fh)
        os.rename(tmp, RECORDS + "/" + name + ".json")
    except OSError:
        pass


def real(name):
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or os.path.realpath(d) == os.path.realpath(BIN):
            continue
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return sys.executable


def module_of(args):
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-m":
            return args[i + 1] if i + 1 < len(args) else None
        if a.startswith("-m") and len(a) > 2:
            return a[2:]
        if a in ("-X", "-W"):
            i += 2
            continue
        if a.startswith("-") and a not in ("-", "-c") and not a.startswith("--"):
            i += 1
            continue
        return None
    return None


def fake_venv(args):
    target = [a for a in args if not a.startswith("-")]
    if not target:
        return
    d = os.path.abspath(target[-1])
    os.makedirs(d + "/bin", exist_ok=True)
    for n in ("python", "python3", "pip", "pip3"):
        p = d + "/bin/" + n
        if not os.path.exists(p):
            os.symlink(BIN + "/" + n, p)
    with open(d + "/bin/activate", "w") as fh:
        fh.write('export VIRTUAL_ENV="%s"\nexport PATH="%s/bin:$PATH"\n' % (d, d))


def hf(args):
    if "download" not in args:
        return
    rest = args[args.index("download") + 1:]
    repo = next((a for a in rest if not a.startswith("-")), "unknown/model")
    if "--local-dir" in rest and rest.index("--local-dir") + 1 < len(rest):
        d = rest[rest.index("--local-dir") + 1]
    else:
        hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
            os.environ.get("HF_HOME") or os.path.expanduser("~/.cache/huggingface"), "hub")
        base = os.path.join(hub, "models--" + repo.replace("/", "--"))
        os.makedirs(base + "/refs", exist_ok=True)
        with open(base + "/refs/main", "w") as fh:
            fh.write("0" * 40)
        d = base + "/snapshots/" + "0" * 40
    os.makedirs(d, exist_ok=True)
    for n, body in (("config.json", "{}"), ("tokenizer_config.json", "{}"),
                    ("model.safetensors.index.json", '{"weight_map": {}}')):
        p = os.path.join(d, n)
        if not os.path.exists(p):
            with open(p, "w") as fh:
                fh.write(body)
    print(d)


def nvidia_smi(args):
    joined = " ".join(args)
    if "-L" in args:
        for i in range(8):
            print("GPU %d: NVIDIA H200 (UUID: GPU-%08d)" % (i, i))
    elif "--query-gpu" in joined:
        q = joined.split("--query-gpu", 1)[1].lstrip("=").split()[0].split(",")
        for i in range(8):
            print(", ".join("NVIDIA H200" if f.strip() == "name" else
                            str(i) if f.strip() == "index" else "143771" if "memory" in f
                            else "0" for f in q))
    else:
        print("NVIDIA-SMI 570.00  Driver Version: 570.00  CUDA Version: 12.8")


def seconds(s):
    mult = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        if s and s[-1] in mult:
            return float(s[:-1]) * mult[s[-1]]
        return float(s)
    except ValueError:
        return 1e9


def main():
    tool = sys.argv[1]
    args = sys.argv[2:]
    if tool == ".fn":
        record(args[0], args[1:])
        return 0
    if tool == "sleep":
        total = sum(seconds(a) for a in args if not a.startswith("-"))
        time.sleep(min(total, 0.05))
        return 0
    if tool in ("python", "python3") or tool.startswith("python3."):
        mod = module_of(args)
        if mod and any(mod == m or mod.startswith(m + ".") for m in STUB_MODULES):
            record("python -m " + mod, [tool, *args])
            if mod == "venv":
                fake_venv(args[args.index("venv") + 1:] if "venv" in args else [])
            return 0
        exe = real(tool)
        os.execv(exe, [exe, *args])
    record(tool, [tool, *args])
    if tool in ("hf", "huggingface-cli"):
        hf(args)
    elif tool == "nvidia-smi":
        nvidia_smi(args)
    elif tool in DAEMONS:
        time.sleep(30)
    return 0


sys.exit(main())
'''

WRAPPER = """#!/bin/sh
exec "@PYTHON@" -I -S "@ROOT@/.ixtrace/bin/.recorder.py" "@TOOL@" "$@"
"""

SHIM = r'''# benchmark_lib.sh replaced by `ixtool policy check` for tracing: the repository's
# library is sourced first, then the helpers that would wait for a server or run a
# benchmark are replaced by recorders.
__ix_dir=$(dirname "${BASH_SOURCE[0]}")
if [[ -f "$__ix_dir/.benchmark_lib.real.sh" ]]; then
    # shellcheck disable=SC1091
    source "$__ix_dir/.benchmark_lib.real.sh"
fi
__ix_rec() { "@ROOT@/.ixtrace/bin/.fn" "fn:$1" "${@:2}"; }
__ix_pid() {
    local prev=""
    for a in "$@"; do
        if [[ $prev == --server-pid || $prev == --pid ]]; then printf '%s' "$a"; return 0; fi
        prev=$a
    done
    return 1
}
__ix_wait() {
    __ix_rec "$@"
    local pid
    if pid=$(__ix_pid "${@:2}"); then
        wait "$pid" 2>/dev/null || while kill -0 "$pid" 2>/dev/null; do /bin/sleep 0.05; done
    else
        /bin/sleep 0.3
    fi
    return 0
}
'''

ENTER = r'''# entry of one trace (runs as pid 1 of the sandbox's namespaces, or plainly)
set -u
HOST_ROOT=@HOST_ROOT@
ROOT=@ROOT@
ISOLATE=@ISOLATE@
TMPFS_TMP=@TMPFS_TMP@
SCRIPT=$1
if [[ $ISOLATE == 1 ]]; then
    mount --make-rprivate / 2>/dev/null
    mount --bind "$HOST_ROOT" "$HOST_ROOT" || exit 97
    cd "$HOST_ROOT" || exit 97
    while read -r _ _ _ _ mp _; do
        mp=${mp//\\040/ }
        case $mp in
            /proc|/proc/*|/dev|/dev/*|/sys|/sys/*|"$HOST_ROOT") continue ;;
        esac
        mount -o remount,bind,ro "$mp" 2>/dev/null
    done < /proc/self/mountinfo
    mount -t tmpfs -o size=512m,mode=1777 tmpfs /dev/shm 2>/dev/null
    if [[ $TMPFS_TMP == 1 ]]; then
        mount -t tmpfs -o size=256m,mode=1777 tmpfs /tmp || exit 97
        mkdir -p "$ROOT" || exit 97
        mount --no-canonicalize --bind . "$ROOT" || exit 97
    fi
    cd "$ROOT" || exit 97
    export PWD=$ROOT
fi
exec 9>>"$ROOT/.ixtrace/xtrace.log"
TRACED='BASH_XTRACEFD=9; PS4="+\${BASH_SOURCE:-?}:\${LINENO}: "; set -x; source "$0"'
bash --noprofile --norc -c "$TRACED" "$SCRIPT" < /dev/null
rc=$?
echo "$rc" > "$ROOT/.ixtrace/rc"
exit "$rc"
'''
