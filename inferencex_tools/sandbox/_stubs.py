"""Text of the files the tracing sandbox installs: the stub (one bash script; every
stubbed tool is a symlink to it) and the entry script.  The repository's own files,
``benchmarks/benchmark_lib.sh`` included, run as they are: programs are stubbed, never a
repository function.

Kept apart from :mod:`.trace` so the logic there stays readable.  Placeholders
(``@NAME@``) are filled in per trace by :meth:`.trace.Session._tools`.

Cost matters (a full check runs hundreds of traces): the stub is bash, not Python,
and records with shell builtins only.

**The ledger.**  Records, the stop marker and notes are not files the traced script could
rewrite: each is a series of lines written to the trace's ledger, a FIFO whose read end
only ixtool holds (:class:`inferencex_tools.sandbox.trace.Ledger`).  The FIFO sits in a
directory the trace sees read-only (mode 0222: the trace may write, not read it), so a
script can neither remove, replace nor read back what a stub delivered.  One line is
``<record id> <kind> <payload>\n``.  A payload is a blob of items, each escaped (``\\``,
``\n``, ``\t``) and followed by a tab, cut into pieces of at most 1,000 characters (an
upper-case kind starts a blob, its lower-case continues it), so every line is one write
of less than PIPE_BUF bytes (atomic: lines of concurrent stubs never mix).  Kinds: ``T``
tool, ``A`` the argv, ``E`` the environment, ``P`` a captured file's path and ``F`` its
content, ``W`` the working directory, ``Z`` the record is complete (its item: how many
lines came before it; nothing more is accepted for it), ``S`` the complete record
stopped the trace, ``N`` a note, ``X`` the traced script has ended (written by the entry
script once no stub is recording any more).  A line that
does not parse, a count that does not match or a line for a complete record is
tampering: the trace fails (ixtool gives no verdict from it).
"""

from __future__ import annotations

# Servers and launchers: recorded, exit 0.
SERVER_TOOLS = ("vllm", "sglang", "trtllm-serve", "mpirun", "vllm-router", "atom")
# Host probes with plausible output, side effects swallowed, cluster tools simulated.
SIDE_EFFECT_TOOLS = (
    "hf", "huggingface-cli", "nvidia-smi", "amd-smi", "rocm-smi", "ibv_devinfo",
    "git", "curl", "wget", "pip", "pip3", "uv", "apt-get", "apt", "sudo", "make", "cmake",
    "docker", "podman", "enroot", "unsquashfs", "modal", "srun", "sbatch", "salloc",
    "scancel", "squeue", "scontrol", "sacct", "sbcast", "sinfo", "ssh", "scp", "rsync", "nc",
    "lm_eval", "aiperf", "srtctl", "nvcc", "flock",
)
# Wrappers that run their command (so a server behind them is recorded as itself).
WRAPPER_TOOLS = ("numactl", "taskset")
DAEMON_TOOLS = ("mooncake_master", "mooncake_client", "etcd", "nats-server")
PYTHON_TOOLS = ("python", "python3", "python3.10", "python3.11", "python3.12", "python3.13")
# In-place editors that must tolerate container-only files (TRACING-NOTES "Pitfalls"):
# sed -i, and patch of the image's own files (its stand-ins here)
TOLERANT_TOOLS = ("sed", "patch")
SLEEP_TOOLS = ("sleep",)
ALL_TOOLS = (SERVER_TOOLS + SIDE_EFFECT_TOOLS + WRAPPER_TOOLS + DAEMON_TOOLS + PYTHON_TOOLS
             + TOLERANT_TOOLS + SLEEP_TOOLS)

# Tools whose environment never matters to a verdict: recorded without it (one process
# less per call).  Servers, job steps, clients and every other tool keep theirs.
NO_ENV_TOOLS = (
    "hf", "huggingface-cli", "nvidia-smi", "amd-smi", "rocm-smi", "ibv_devinfo", "git",
    "curl", "wget", "pip", "pip3", "uv", "apt-get", "apt", "sudo", "make", "cmake", "enroot",
    "unsquashfs", "modal", "scancel", "squeue", "scontrol", "sacct", "sbcast", "sinfo",
    "ssh", "scp", "rsync", "nc", "nvcc", "flock", "numactl", "taskset",
)

# python -m <module> prefixes that are recorded instead of run.
STUB_MODULES = (
    "sglang.launch_server", "sglang_router", "sglang.srt", "atom.entrypoints",
    "vllm.entrypoints", "vllm", "pip", "uv", "lm_eval", "aiperf", "mooncake", "lmcache",
    "dynamo", "tensorrt_llm", "huggingface_hub", "venv", "sglang",
)

# Benchmark client programs (a repository's copy of one included), recorded instead of
# run like the client modules above: they load the served model with requests and
# write results, and a server is what a verdict judges.  By the name of the file
# python runs (vLLM's benchmarks/benchmark_serving.py, SGLang's bench_serving.py).
CLIENT_SCRIPTS = ("benchmark_serving.py", "bench_serving.py")

# The ledger writers (``@P@``: the stub's ``ix_`` prefix); ``@P@rid`` is the record's
# id, ``@P@fd`` the ledger's descriptor, ``@P@lines`` counts the record's lines (its Z
# line says how many there were).  Items are escaped all at once (array-wide
# substitutions) and joined, each followed by a tab: a record is a handful of writes,
# not one per environment entry.
LEDGER_FNS = r'''
@P@items() {  # $1 kind, then the items: one blob, in lines of at most 1000 characters
    local __ix_k=$1 __ix_v IFS=
    shift
    (($#)) || return 0
    __ix_v="$*"
    if [[ $__ix_v == *[\\$'\n\t']* ]]; then  # (bash substitutions are slow: only if needed)
        local -a __ix_a=("$@")
        __ix_a=("${__ix_a[@]//\\/\\\\}")
        __ix_a=("${__ix_a[@]//$'\n'/\\n}")
        __ix_a=("${__ix_a[@]//$'\t'/\\t}")
        printf -v __ix_v '%s\t' "${__ix_a[@]}"
    else
        printf -v __ix_v '%s\t' "$@"
    fi
    while ((${#__ix_v} > 1000)); do
        printf '%s %s %s\n' "$@P@rid" "$__ix_k" "${__ix_v:0:1000}" >&"$@P@fd"
        __ix_v=${__ix_v:1000}
        __ix_k=${__ix_k,,}
        ((++@P@lines))
    done
    printf '%s %s %s\n' "$@P@rid" "$__ix_k" "$__ix_v" >&"$@P@fd"
    ((++@P@lines))
}
@P@env() {  # the environment, with builtins only (one subshell for the names: listing
    # them without one, ${!X@} for every first character, sorts every variable 53 times)
    local __ix_n
    local -a __ix_e=()
    for __ix_n in $(compgen -e); do __ix_e+=("$__ix_n=${!__ix_n}"); done
    @P@items E "${__ix_e[@]}"
}
'''

STUB = r'''#!/bin/bash
# ixtool trace stub: every stubbed tool of one trace is a symlink to this file.
# A signal waits until the record in progress is complete (never a record cut off);
# then it ends the stub as it would have ended the program (ix_serve).
ix_term=""
trap 'ix_term=1' TERM INT HUP
IX_TOOL=${0##*/}
IX_AS=${IX_AS_TOOL-}  # a command the trace's PATH does not have (command_not_found_handle)
unset IX_AS_TOOL
[[ -n $IX_AS ]] && IX_TOOL=${IX_AS##*/}
if [[ $IX_TOOL == sleep ]]; then exec @SLEEP@ 0.05; fi
if [[ $IX_TOOL == sed ]]; then  # only an in-place edit needs the stub (tolerated failure)
    for a in "$@"; do
        case $a in -i|-i*|--in-place*) break ;; esac
    done
    case ${a-} in -i|-i*|--in-place*) ;; *) exec @SED@ "$@" ;; esac
fi
IX_ROOT=@ROOT@
IX_DAEMONS="@DAEMONS@"
IX_STUB_MODULES=" @STUB_MODULES@ "
IX_CLIENT_SCRIPTS=" @CLIENT_SCRIPTS@ "
IX_CLIENTS=@CLIENTS@
IX_SHA256SUM=@SHA256SUM@
# A call that starts a server (a program that runs until it is killed): a daemon, or a
# command word among its first ones such as serve, server, *_server, launch_server,
# *router, frontend (vllm serve, lmcache server, trtllm-serve, nats-server, dynamo.frontend)
ix_serves() {
    local w n=0
    case " $IX_DAEMONS " in *" $1 "*) return 0 ;; esac
    for w in "$@"; do
        case $w in -*) continue ;; esac
        case ${w##*[/.]} in
            serve|server|*-serve|*-server|*_server|launch_server|*router|frontend) return 0 ;;
        esac
        ((++n > 4)) && return 1
    done
    return 1
}

# Started in the background (stdin is /dev/null: the traced shell's own stdin is another
# empty file, so a foreground call is told apart), a server registers at once (a health
# check waits for it from then), writes its record itself (a signal deferred until it is
# whole: ix_server_record), is up from then on and stays alive until it is killed.  In
# the foreground it returns at once.
ix_bg=""
[[ /proc/self/fd/0 -ef /dev/null ]] && ix_bg=1
ix_server=""
if [[ -n $ix_bg ]]; then  # (first thing: a health check finds it from now on)
    case $IX_TOOL in
        python|python3|python3.*)
            for ((ix_i = 1; ix_i < $#; ix_i++)); do
                [[ ${!ix_i} == -m ]] || continue
                ix_j=$((ix_i + 1)) ix_m=""
                for ix_s in $IX_STUB_MODULES; do
                    [[ ${!ix_j} == "$ix_s" || ${!ix_j} == "$ix_s".* ]] && ix_m=${!ix_j}
                done
                if [[ -n $ix_m ]] && { [[ $ix_m == dynamo.* ]] || ix_serves "$ix_m" "${@:ix_j+1}"; }
                then ix_server=1; fi  # a stubbed server module (or a dynamo worker)
                break
            done ;;
        *) ix_serves "$IX_TOOL" "$@" && ix_server=1 ;;
    esac
    if [[ -n $ix_server ]]; then
        [[ -d $IX_ROOT/.ix/serving ]] || @MKDIR@ -p "$IX_ROOT/.ix/serving" 2>/dev/null
        : > "$IX_ROOT/.ix/serving/$$" 2>/dev/null
    fi
fi
IX_TRACE=@TRACE@
IX_BIN=@BIN@
IX_JOBS=$IX_ROOT/.ix/jobs
IX_SLEEP=@SLEEP@
IX_PY=@PYTHON@
IX_ENV=@ENV@
IX_HEAD=@HEAD@
IX_MKDIR=@MKDIR@
IX_SED=@SED@
IX_PATCH=@PATCH@
IX_STOP="" IX_GPU=""
{ read -r IX_STOP; read -r IX_GPU; } < "$IX_TRACE/conf" 2>/dev/null
IX_STOP=" $IX_STOP "
IX_NO_ENV="@NO_ENV@"
IX_LIB=@LIB@

ix_rid="" ix_fd="" ix_lines=0
@LEDGER_FNS@
ix_open() {  # the trace's ledger (see _stubs.LEDGER_FNS), once per stub
    [[ -n $ix_fd ]] && return 0
    exec {ix_fd}>>"$IX_TRACE/ledger" && return 0
    printf 'ixtool trace: the bookkeeping of this trace is unavailable\n' >&2
    exit 97
}

ix_note() {
    ix_open
    local ix_rid="${EPOCHREALTIME/./}-$$-${SRANDOM:-$RANDOM}" ix_lines=0
    ix_items N "$*"
}

# One record: the tool, argv, the environment, the .yaml/.yml/.json files named in argv
# (their first MiB), the working directory, then Z: a record without Z is incomplete and
# ignored, and nothing is accepted for it after Z.
ix_record() {
    local label=$1 a cand body; shift
    ix_open
    ix_rid="${EPOCHREALTIME/./}-$$-${SRANDOM:-$RANDOM}" ix_lines=0
    ix_items T "$label"
    ix_items A "$@"
    case " $IX_NO_ENV " in
        *" $IX_TOOL "*) ;;
        *) ix_env ;;
    esac
    for a in "$@"; do
        for cand in "$a" "${a#*=}" "${a%%:*}"; do
            case $cand in
                *.yaml|*.yml|*.json)
                    if [[ -f $cand && ! -L $cand && -r $cand ]]; then
                        body=""
                        IFS= read -r -N 1048576 body < "$cand" 2>/dev/null
                        ix_items P "$cand"
                        ix_items F "$body"
                        break
                    fi ;;
            esac
        done
    done
    ix_items W "$PWD"
    ix_items Z "$ix_lines"
}

# Stop the trace here (the step it was run for has been reached): the record just made
# is marked as the one that stopped it.
ix_stop() {
    [[ -n $ix_rid ]] && ix_items S ""
    kill -KILL 0
    exit 0
}

ix_job() {  # allocate a simulated Slurm job (named $1): its id in IX_JOB
    [[ -d $IX_JOBS ]] || "$IX_MKDIR" -p "$IX_JOBS" 2>/dev/null
    IX_JOB=$((4200 + RANDOM % 1000))
    printf '%s\n' "$1" > "$IX_JOBS/$IX_JOB"
}

ix_opt() {  # value of --name=V / --name V in "$@" (first) in IX_OPT; $1 = option name
    local want=$1; shift
    IX_OPT=""
    while (($#)); do
        case $1 in
            "$want"=*) IX_OPT=${1#*=}; break ;;
            "$want") IX_OPT=${2-}; break ;;
        esac
        shift
    done
    (($#)) || return 1
    while [[ $IX_OPT == *$'\n' ]]; do IX_OPT=${IX_OPT%$'\n'}; done  # as $(…) gave it
    return 0
}

ix_server_record() {  # the arguments of ix_record (registered at the top already)
    # The server writes its record itself, a TERM/INT/HUP deferred until it is whole
    # (the trap at the top), with no child a stop helper's `pkill -P <server>` or
    # process-tree KILL could cut off; only then is it up: its registration says so,
    # and a health check answers from then on (it waits while the server records).  A
    # KILL of the server itself while it records cuts the record off, which the ledger
    # tells (PO310: fails closed).
    ix_record "$@"
    printf up > "$IX_ROOT/.ix/serving/$$" 2>/dev/null
}

ix_serve() {  # alive until killed (a signal received while it recorded ends it now)
    if [[ -n $ix_fd ]]; then exec {ix_fd}>&-; fi
    trap - TERM INT HUP
    [[ -n $ix_term ]] && exit 143
    exec "$IX_SLEEP" infinity
}

ix_monitor() {  # a monitor (-l, --loop, -w, --watch) in the background runs until killed
    local a
    [[ -n $ix_bg ]] || return 0
    for a in "$@"; do
        case $a in -l|-l*|--loop|--loop=*|-w|--watch|--watch=*) ix_serve ;; esac
    done
}

# Would a local server refuse the connection?  Yes when servers were started in the
# background and none of them is alive now (killed, or a zombie nobody waited for); no
# server ever started (a download, a remote host, a server ixtool does not model): the
# call succeeds, as before.
ix_refused() {
    ix_alive_server && return 1
    ix_wait_starting
    ix_alive_server && return 1
    local f
    for f in "$IX_ROOT"/.ix/serving/*; do
        [[ -e $f ]] && return 0
    done
    return 1
}

ix_alive_server() {  # is a registered server up (recorded) and alive?
    local f
    for f in "$IX_ROOT"/.ix/serving/*; do
        [[ -s $f ]] && ix_live "${f##*/}" && return 0
    done
    return 1
}

ix_live() {  # is process $1 alive (not ended, not a zombie)?
    local st=""
    { read -r st < "/proc/$1/stat"; } 2>/dev/null || return 1
    st=${st##*) }
    [[ ${st:0:1} != [ZX] ]]
}

# A server started in the background and not registered yet (its process starts while
# the recipe goes on) or not up yet: a health check waits for it — a registered server
# still writing its record, a server stub not registered yet (at most 30 s: it registers
# first thing), a process of this session whose program is
# being loaded (an exec in progress: its command line reads empty until the kernel has
# set it up, and a starved CPU holds a child there for many milliseconds), or a process
# the same shell forked that does not run its program yet (at most 2 s: a background
# subshell never will) — so whether a recipe finds its server up does not depend on
# scheduling.  (Without the exec case a check that ran while the server was mid-exec
# answered as if no server had started; the recipe then killed the server before it
# registered, and every later check answered too.)
ix_wait_starting() {
    local p a i found st parent="" sid
    local -a f
    mapfile -d '' -t parent < "/proc/$PPID/cmdline" 2>/dev/null
    { read -r st < "/proc/$$/stat"; } 2>/dev/null
    f=(${st##*) })
    sid=${f[3]-}
    for ((i = 0; i < 1500; i++)); do
        found=""
        for p in "$IX_ROOT"/.ix/serving/*; do  # registered, alive, still recording
            [[ -e $p && ! -s $p ]] && ix_live "${p##*/}" && { found=recording; break; }
        done
        if [[ -n $found ]]; then "$IX_SLEEP" 0.02; continue; fi
        for p in /proc/[0-9]*; do
            [[ ${p#/proc/} == "$$" || ${p#/proc/} == "$PPID" ]] && continue
            [[ -e $IX_ROOT/.ix/serving/${p#/proc/} ]] && continue
            mapfile -d '' -t a < "$p/cmdline" 2>/dev/null || continue
            if [[ ${a[1]-} == "$IX_BIN"/* ]]; then
                [[ $p/fd/0 -ef /dev/null ]] 2>/dev/null || continue
                # (a container tool runs as .stub: its name is not in its command line)
                [[ ${a[1]##*/} == .stub ]] || ix_serves "${a[1]##*/}" "${a[@]:2}" || continue
                found=stub
            elif ((i < 100)) && [[ "${a[*]}" == "${parent[*]}" ]]; then  # forked only
                { read -r st < "$p/stat"; } 2>/dev/null || continue
                st=${st##*) }
                [[ ${st#* } == "$PPID "* ]] || continue
                found=fork
            elif [[ -z ${a[0]-} && -n $sid ]]; then  # an exec in progress (not a zombie)
                { read -r st < "$p/stat"; } 2>/dev/null || continue
                f=(${st##*) })
                [[ ${f[0]} != [ZX] && ${f[3]-} == "$sid" ]] || continue
                found=exec
            else
                continue
            fi
            break
        done
        [[ -n $found ]] || return 0
        "$IX_SLEEP" 0.02
    done
}

ix_local_url() {  # does a URL among the arguments name this host?
    local a h
    for a in "$@"; do
        case $a in
            *://*) h=${a#*://}; h=${h%%/*}; h=${h##*@}
                   case $h in \[*) h=${h%%]*}; h=${h#[} ;; *) h=${h%%:*} ;; esac
                   case $h in
                       localhost|0.0.0.0|127.*|::1|"${HOSTNAME:-localhost}") return 0 ;;
                   esac
                   return 1 ;;
        esac
    done
    return 1
}

ix_runs_script() {  # is one of the arguments a .sh script (the benchmark step)?
    local a
    for a in "$@"; do
        case $a in *.sh) return 0 ;; esac
    done
    return 1
}

case $IX_TOOL in
    python|python3|python3.*) source "$IX_LIB-py"; ix_python "$@" ;;
    patch)  # the image's own files (a stand-in tree here) cannot be patched: noted
        "$IX_PATCH" "$@" && exit 0
        rc=$?
        source "$IX_LIB-job"
        if ix_patches_image "$@"; then
            ix_note "container content step stubbed: patch $* (the image's files are" \
                "stand-ins here)"
            exit 0
        fi
        exit $rc ;;
    sed)
        "$IX_SED" "$@" && exit 0
        rc=$?
        for a in "$@"; do
            case $a in -i|-i*|--in-place*) ix_note "sed -i failed (tolerated): $*"; exit 0 ;; esac
        done
        exit $rc ;;
    numactl|taskset)
        ix_record "$IX_TOOL" "$IX_TOOL" "$@"
        while (($#)); do
            case $1 in
                -c|-p|--cpunodebind|--membind|--physcpubind|--interleave|--preferred) shift 2 ;;
                -N|-m|-C) shift 2 ;;
                -*) shift ;;
                *)
                    if [[ $IX_TOOL == taskset && $1 =~ ^[0-9a-fx,-]+$ ]]; then shift
                    else break; fi ;;
            esac
        done
        (($#)) || exit 0
        trap - TERM INT HUP
        exec "$@" ;;
esac

if [[ -n $IX_AS ]]; then  # not a repository file, not modelled: a tool of the container
    if [[ -n $ix_server ]]; then
        ix_server_record "container:$IX_TOOL" "$IX_AS" "$@"
    else
        ix_record "container:$IX_TOOL" "$IX_AS" "$@"
    fi
    ix_note "container tool stubbed: $IX_AS"
    [[ -n $ix_server ]] && ix_serve
    exit 0
fi
case " @NETWORK@ " in  # a network tool's call of another host: the trace says so (PO303)
    *" $IX_TOOL "*) ix_local_url "$@" || ix_note "network tool '$IX_TOOL' called (stubbed)" ;;
esac
if [[ -n $ix_server ]]; then
    ix_server_record "$IX_TOOL" "$IX_TOOL" "$@"
    ix_serve
fi
ix_record "$IX_TOOL" "$IX_TOOL" "$@"

case $IX_TOOL in  # the helpers of the tools that do more than record (a part each)
    hf|huggingface-cli) source "$IX_LIB-hf" ;;
    nvidia-smi|rocm-smi) source "$IX_LIB-smi" ;;
    uv|pip|pip3) source "$IX_LIB-py" ;;
esac
case $IX_TOOL in
    hf|huggingface-cli) ix_hf "$@" ;;
    pip|pip3) ix_pip "$@" ;;
    nvidia-smi) ix_nvidia_smi "$@"; ix_monitor "$@" ;;
    rocm-smi) ix_rocm_smi "$@" ;;
    amd-smi) printf 'GPU: 0\n'; ix_monitor "$@" ;;
    aiperf)  # a finished run's artifacts, as its callers check them: exports present,
        # the server's metrics under each engine's name prefix (no measurement in them)
        if { ix_opt --output-artifact-dir "$@" || ix_opt --artifact-dir "$@"; } &&
                [[ -n $IX_OPT ]] && "$IX_MKDIR" -p -- "$IX_OPT" 2>/dev/null; then
            for f in profile_export.json profile_export.jsonl \
                    server_metrics_export.json server_metrics_export.csv; do
                [[ -e $IX_OPT/$f ]] && continue
                case $f in
                    server_metrics_export.json)
                        printf '{"metrics": {%s}}\n' '"vllm:stub": {}, "sglang:stub": {},
 "trtllm:stub": {}, "atom:stub": {}, "dynamo_stub": {}' ;;
                    server_metrics_export.csv) printf 'metric,value\nvllm:stub,0\n' ;;
                    *) printf '{}\n' ;;
                esac > "$IX_OPT/$f" 2>/dev/null
            done
        fi ;;
    ibv_devinfo) printf 'hca_id:\tmlx5_0\n\tport:\t1\n\t\tstate:\t\t\tPORT_ACTIVE (4)\n' ;;
    salloc)
        ix_opt --job-name "$@"; ix_job "$IX_OPT"
        printf 'salloc: Granted job allocation %s\n' "$IX_JOB" >&2 ;;
    sbatch)
        ix_opt --job-name "$@"; ix_job "$IX_OPT"
        printf 'Submitted batch job %s\n' "$IX_JOB"
        [[ $IX_STOP == *" sbatch "* ]] && ix_stop ;;
    scontrol)
        if [[ " $* " == *" hostnames "* ]]; then
            printf 'node-1\nnode-2\nnode-3\nnode-4\n'
        fi ;;
    squeue)
        if [[ " $* " == *"%N"* ]]; then printf 'node-[1-4]\n'; exit 0; fi
        name=""; jid=""
        ix_opt --name "$@" && name=$IX_OPT
        { ix_opt -j "$@" || ix_opt --jobs "$@"; } && jid=$IX_OPT
        for f in "$IX_JOBS"/*; do
            [[ -f $f ]] || continue
            id=${f##*/}
            [[ -n $jid && $jid != "$id" ]] && continue
            [[ -n $name && $name != "$(<"$f")" ]] && continue
            printf '%s\n' "$id"
        done ;;
    scancel)
        name=""
        ix_opt --name "$@" && name=$IX_OPT
        for f in "$IX_JOBS"/*; do
            [[ -f $f ]] || continue
            id=${f##*/}
            if [[ -n $name && $name == "$(<"$f")" ]] || [[ " $* " == *" $id "* ]]; then
                rm -f -- "$f"
            fi
        done ;;
    srun|docker|podman)
        if ix_runs_script "$@"; then  # a job step: which mounts hold a copy of the checkout
            source "$IX_LIB-job"; ix_checkout_copies "$@"
            [[ $IX_STOP == *" $IX_TOOL "* ]] && ix_stop
        elif [[ $IX_TOOL == srun ]]; then  # a staging step runs here (the node is the sandbox)
            source "$IX_LIB-job"; ix_srun_stage "$@"
        fi ;;
    sbcast) source "$IX_LIB-job"; ix_sbcast "$@" || exit 1 ;;
    srtctl)
        if [[ " $* " == *" apply "* ]]; then
            printf '✅ Job 4242 submitted\n'
            [[ $IX_STOP == *" srtctl "* ]] && ix_stop
        fi ;;
    git)
        if [[ ${1:-} == clone ]]; then
            shift; last=""; url=""
            while (($#)); do
                case $1 in
                    --branch|-b|--depth|--origin|-o|--reference|--config|-c) shift ;;
                    -*) ;;
                    *) if [[ -z $url ]]; then url=$1; else last=$1; fi ;;
                esac
                shift
            done
            [[ -n $last ]] || { last=${url##*/}; last=${last%.git}; }
            [[ -n $last ]] && "$IX_MKDIR" -p -- "$last"
        elif [[ " $* " == *" rev-parse "* ]]; then
            printf '0000000000000000000000000000000000000000\n'
        fi ;;
    uv)
        [[ ${1:-} == pip ]] && ix_pip "${@:2}"
        if [[ ${1:-} == venv ]]; then
            shift; d=""; skip=0
            for a in "$@"; do
                if [[ $skip == 1 ]]; then skip=0; continue; fi
                case $a in --python|-p) skip=1 ;; -*) ;; *) d=$a ;; esac
            done
            ix_fake_venv "${d:-.venv}"
        fi ;;
    curl|wget)
        if ix_local_url "$@" && ix_refused; then  # the local server is gone
            [[ $IX_TOOL == curl ]] && exit 7
            exit 4
        fi
        out=""
        { ix_opt -o "$@" || ix_opt --output "$@"; } && out=$IX_OPT
        [[ -n $out && $out != - ]] && : > "$out" 2>/dev/null ;;
    flock) ;;
esac
exit 0
'''

# sed: a POSIX shell script of its own (a shell that starts in half the time of bash: most
# sed calls are not in-place edits and run the real sed at once); an in-place edit runs
# the stub (as ``sed``, through the link in ``.sed/``), which tolerates its failure.
SED_FRONT = r'''#!/bin/sh
for ix_a in "$@"; do
    case $ix_a in -i|-i*|--in-place*) exec @BIN@/.sed/sed "$@" ;; esac
done
exec @SED@ "$@"
'''

# The stub's helpers for the tools that do more than record, in parts sourced on demand
# (the stub itself stays short, it runs for every stubbed call; a part is parsed only
# by the tools that need it).  Job steps (srun, docker, podman, sbcast):
STUB_LIB_JOB = r'''
# srun options written as "--opt value" (inferencex_tools.workflow.step._SRUN_VALUE_OPTS)
IX_SRUN_VALUED=" --jobid --nodes --ntasks --partition --account --time --job-name --export
 --container-image --container-mounts --container-workdir --container-name --container-env
 --gres --nodelist --exclude --mem --cpus-per-task --ntasks-per-node --gpus --gpus-per-node
 --mpi --output --error --chdir --dependency --qos --reservation --constraint --distribution
 --cpu-bind --overlap-force -N -n -p -A -t -J -w -x -c -o -e -D -G -C -q "
IX_SRUN_VALUED=${IX_SRUN_VALUED//$'\n'/ }

# an srun step with no container and no script: its command runs here; a failure (the
# node's own files — /raid/…, locks — are not in the sandbox) is tolerated and noted, as
# when the step was only recorded
ix_srun_stage() {
    local a
    while (($#)); do
        a=$1
        case $a in
            --) shift; break ;;
            --container-*) return 0 ;;
            --*=*) shift ;;
            -*) if [[ $IX_SRUN_VALUED == *" $a "* ]]; then shift 2; else shift; fi ;;
            *) break ;;
        esac
    done
    (($#)) || return 0
    trap - TERM INT HUP
    if [[ -n $ix_fd ]]; then exec {ix_fd}>&-; ix_fd=""; fi  # the ledger stays the stubs'
    "$@" && exit 0
    ix_note "srun step failed (tolerated): $*"
    exit 0
}

ix_sbcast() {  # the node is the sandbox: the file is copied where the job step reads it
    local a skip=0 pos=() keep=()
    for a in "$@"; do
        if [[ $skip == 1 ]]; then skip=0; continue; fi
        case $a in
            -j|--jobid|-F|--fanout|-s|--size|-t|--timeout) skip=1 ;;
            -p|--preserve) keep=(-p) ;;
            -*) ;;
            *) pos+=("$a") ;;
        esac
    done
    ((${#pos[@]} == 2)) || return 0
    cp "${keep[@]}" -f -- "${pos[0]}" "${pos[1]}"
}

ix_patches_image() {  # does this patch call target the image's stand-in packages?
    local a dir=$PWD next=0
    for a in "$@"; do
        if [[ $next == 1 ]]; then dir=$a; next=0; continue; fi
        case $a in
            -d|--directory) next=1 ;;
            --directory=*) dir=${a#*=} ;;
            -d*) dir=${a#-d} ;;
        esac
    done
    [[ $dir == /* ]] || dir=$PWD/$dir
    local fake=$IX_ROOT/.ix/pyfake
    [[ $dir == "$fake" || $dir == "$fake"/* ]]
}

ix_checkout_copies() {  # note each mount source of a job step holding a copy of the checkout
    local a next=0 specs=() spec m src e ws=$IX_ROOT/ws
    for a in "$@"; do
        if [[ $next == 1 ]]; then specs+=("$a"); next=0; continue; fi
        case $a in
            --container-mounts=*|--volume=*) specs+=("${a#*=}") ;;
            --container-mounts|-v|--volume) next=1 ;;
        esac
    done
    local -a tops=()  # the checkout's top-level names (listed by ixtool, not read here)
    mapfile -t tops < "${IX_BIN%/bin}/tops" 2>/dev/null
    ((${#tops[@]})) || return 0
    for spec in "${specs[@]}"; do
        local IFS=,
        for m in $spec; do
            src=${m%%:*}
            [[ $m == *:* && -d $src && ! $src -ef $ws ]] || continue
            for e in "${tops[@]}"; do
                [[ -e $src/$e ]] || continue 2
            done
            ix_note "checkout copy: $src"
        done
    done
    return 0
}
'''

# python, pip and uv:
STUB_LIB_PY = r'''ix_fake_venv() {
    local d=$1
    [[ -n $d ]] || d=.venv
    "$IX_MKDIR" -p "$d/bin" 2>/dev/null || return 0
    local n
    for n in python python3 pip pip3 uv; do
        printf '#!/bin/sh\nexec "%s/%s" "$@"\n' "$IX_BIN" "$n" > "$d/bin/$n"
    done
    chmod +x "$d/bin/python" "$d/bin/python3" "$d/bin/pip" "$d/bin/pip3" "$d/bin/uv" \
        2>/dev/null
    printf 'export VIRTUAL_ENV="%s"\nexport PATH="%s/bin:$PATH"\n' "$d" "$d" > "$d/bin/activate"
}

ix_pip() {  # pip install: what it installs is there afterwards (import, metadata, and
    # its console scripts in the environment it installs into: see ix_scripts)
    [[ ${1:-} == install ]] || return 0
    shift
    local a skip="" name ver bin="" scripts=""
    [[ -n ${VIRTUAL_ENV:-} ]] && bin=$VIRTUAL_ENV/bin
    for a in "$@"; do
        case $skip in
            python) bin=${a%/*}; [[ $a == */* ]] || bin=""; skip=""; continue ;;
            editable) scripts+=" $(ix_project_scripts "$a")"; skip=""; continue ;;
            ?*) skip=""; continue ;;
        esac
        case $a in
            --python|-p) skip=python; continue ;;
            -e|--editable) skip=editable; continue ;;
            -r|-c|-i|-t|-f|--index-url|--extra-index-url|--target|--find-links|--prefix|\
            --root|--constraint|--requirement|--trusted-host|\
            --platform|--python-version|--src|--cache-dir|--log|--timeout|--retries)
                skip=1; continue ;;
            --python=*) a=${a#--python=}; bin=${a%/*}; continue ;;
            -*|*/*|.) continue ;;
        esac
        name=${a%%[^A-Za-z0-9._-]*}
        ver=0.0.0
        if [[ $a == *==* ]]; then ver=${a#*==}; ver=${ver%%[^A-Za-z0-9._+-]*}; fi
        [[ -n $name ]] && printf '%s %s\n' "$name" "${ver:-0.0.0}" >> "$IX_ROOT/.ix/installed"
        [[ -n $name ]] && scripts+=" $(ix_package_scripts "$name")"
    done
    [[ -n $bin && -d $bin && -w $bin ]] && ix_scripts "$bin" $scripts
    return 0
}

ix_package_scripts() {  # the console scripts a package from an index installs: its own
    # name, and the ones of the few packages whose commands are named otherwise
    local n=${1,,}
    n=${n//_/-}
    case $n in
        huggingface-hub) printf 'hf huggingface-cli' ;;
        lm-eval) printf 'lm_eval lm-eval' ;;
        *) printf '%s' "$n" ;;
    esac
}

ix_project_scripts() {  # the console scripts of a project installed from its folder:
    # its pyproject's [project.scripts], else the folder's name
    local d=${1%/} line in=0 found=""
    if [[ -f $d/pyproject.toml ]]; then
        while IFS= read -r line; do
            if [[ $line == \[* ]]; then
                in=0; [[ $line == '[project.scripts]'* ]] && in=1
                continue
            fi
            if ((in)) && [[ $line =~ ^[[:space:]]*\"?([A-Za-z0-9._-]+)\"?[[:space:]]*= ]]; then
                found+=" ${BASH_REMATCH[1]}"
            fi
        done < "$d/pyproject.toml"
    fi
    [[ -n $found ]] || found=${d##*/}
    printf '%s' "$found"
}

ix_scripts() {  # $1 an environment's bin folder, then command names: each a stub there
    local bin=$1 n
    local -a made=()
    shift
    for n in "$@"; do
        [[ $n == [A-Za-z0-9]*([A-Za-z0-9._-]) && ! -e $bin/$n ]] || continue
        if [[ -e $IX_BIN/$n ]]; then
            printf '#!/bin/sh\nexec "%s/%s" "$@"\n' "$IX_BIN" "$n" > "$bin/$n"
        else
            printf '#!/bin/sh\nIX_AS_TOOL=%s exec "%s/.stub" "$@"\n' "$n" "$IX_BIN" > "$bin/$n"
        fi
        made+=("$bin/$n")
    done
    ((${#made[@]})) && chmod +x "${made[@]}" 2>/dev/null  # (one process for all)
    return 0
}

# Is the benchmark client python is about to run ($1) one the check trusts?  The
# manifest (@CLIENTS@) lists each by its file name with the files of its code relative
# to its directory and their SHA-256 digests: the client's directory must hold them,
# byte for byte, now (a recipe may rewrite a client, or what it imports, before it runs
# it), and python must start as the job's default would (a PYTHON* setting that can run
# other code — PYTHONPATH, PYTHONSTARTUP, PYTHONWARNINGS … — or a -W option makes it
# another program).  Otherwise the client runs as it is.
ix_trusted_client() {
    local f=$1 dir=. name rel want v
    local -a names sums
    [[ -f $f ]] || return 1
    for v in ${!PYTHON@}; do
        case $v in
            PYTHONUNBUFFERED|PYTHONDONTWRITEBYTECODE|PYTHONHASHSEED|PYTHONIOENCODING) ;;
            PYTHONFAULTHANDLER|PYTHONNOUSERSITE|PYTHONPYCACHEPREFIX|PYTHONUTF8) ;;
            PYTHONPATH) [[ $PYTHONPATH == "@PYDIR@" ]] || return 1 ;;
            *) return 1 ;;
        esac
    done
    [[ $f == */* ]] && dir=${f%/*}
    while IFS=$'\t' read -r name rel want; do
        [[ $name == "${f##*/}" ]] || continue
        read -ra names <<< "$rel"
        mapfile -t sums < <(cd -- "${dir:-/}" 2>/dev/null &&
                            "$IX_SHA256SUM" -- "${names[@]}" 2>/dev/null)
        [[ "${sums[*]%% *}" == "$want" ]] && return 0
    done < "$IX_CLIENTS"
    return 1
}

ix_python() {
    local mod="" i=1 a warn=""
    while (( i <= $# )); do
        a=${!i}
        case $a in
            -m) i=$((i + 1)); mod=${!i:-}; break ;;
            -m*) mod=${a#-m}; break ;;
            -W|-W*) warn=1; [[ $a == -W ]] && i=$((i + 1)) ;;
            -X) i=$((i + 2)); continue ;;
            -c|-|--*) break ;;
            -*) ;;
            *) break ;;
        esac
        i=$((i + 1))
    done
    if [[ -z $mod && $i -le $# && ${!i} != -* ]]; then  # a program run by path
        case $IX_CLIENT_SCRIPTS in
            *" ${!i##*/} "*)
                if [[ -z $warn ]] && ix_trusted_client "${!i}"; then
                    ix_record "python ${!i##*/}" "$IX_TOOL" "$@"
                    exit 0
                fi ;;
        esac
    fi
    if [[ -n $mod ]]; then
        local m
        for m in $IX_STUB_MODULES; do
            if [[ $mod == "$m" || $mod == "$m".* ]]; then
                if [[ -n $ix_server ]]; then  # a server (or a dynamo worker), background
                    ix_server_record "python -m $mod" "$IX_TOOL" "$@"
                    ix_serve
                fi
                ix_record "python -m $mod" "$IX_TOOL" "$@"
                [[ $mod == pip ]] && ix_pip "${@:i+1}"
                if [[ $mod == venv ]]; then
                    local last="" b
                    for b in "$@"; do [[ $b != -* ]] && last=$b; done
                    ix_fake_venv "$last"
                fi
                exit 0
            fi
        done
    fi
    trap - TERM INT HUP
    # no bytecode prefix: a fresh prefix directory per trace would recompile the
    # standard library on every run (caching only, never semantics); engine packages
    # the container would have (vllm, sglang, …) import as stand-ins (.ix/py)
    PYTHONPYCACHEPREFIX= PYTHONPATH="@PYDIR@${PYTHONPATH:+:$PYTHONPATH}" \
        IXTRACE_PYFAKE="$IX_ROOT/.ix/pyfake" "$IX_PY" "$@"
    local rc=$?
    if [[ $rc != 0 ]]; then
        ix_note "python exited $rc (masked): $*"
    fi
    exit 0
}
'''

# hf / huggingface-cli:
STUB_LIB_HF = r'''ix_hf() {
    local repo="" dir="" prev="" a seen=0
    for a in "$@"; do
        if [[ $prev == --local-dir ]]; then dir=$a
        elif [[ $a == --local-dir=* ]]; then dir=${a#*=}
        elif [[ $seen == 1 && -z $repo && $a != -* && $prev != --* ]]; then repo=$a
        fi
        [[ $a == download ]] && seen=1
        prev=$a
    done
    [[ $seen == 1 ]] || return 0
    [[ -n $repo ]] || repo=unknown/model
    local rev=0123456789abcdef0123456789abcdef01234567
    if [[ -z $dir ]]; then
        local hub=${HF_HUB_CACHE:-}
        if [[ -z $hub ]]; then
            if [[ -n ${HF_HOME:-} ]]; then hub=$HF_HOME/hub
            else hub=$HOME/.cache/huggingface/hub; fi
        fi
        local base="$hub/models--${repo//\//--}"
        "$IX_MKDIR" -p "$base/refs" "$base/snapshots/$rev" || return 1
        printf '%s' "$rev" > "$base/refs/main"
        dir=$base/snapshots/$rev
    else
        "$IX_MKDIR" -p "$dir" || return 1
    fi
    [[ -e $dir/config.json ]] || printf '{}' > "$dir/config.json"
    [[ -e $dir/tokenizer_config.json ]] || printf '{}' > "$dir/tokenizer_config.json"
    [[ -e $dir/tokenizer.json ]] || printf '{}' > "$dir/tokenizer.json"
    [[ -e $dir/generation_config.json ]] || printf '{}' > "$dir/generation_config.json"
    printf '{"weight_map": {"w": "model-00001-of-00001.safetensors"}}' \
        > "$dir/model.safetensors.index.json"
    : > "$dir/model-00001-of-00001.safetensors"
    printf '%s\n' "$dir"
}
'''

# nvidia-smi, rocm-smi:
STUB_LIB_SMI = r'''ix_nvidia_smi() {
    local a q="" i
    for a in "$@"; do
        case $a in --query-gpu=*) q=${a#*=} ;; esac
    done
    if [[ " $* " == *" -L "* ]]; then
        for i in 0 1 2 3 4 5 6 7; do
            printf 'GPU %d: NVIDIA %s (UUID: GPU-0000000%d)\n' "$i" "$IX_GPU" "$i"
        done
    elif [[ -n $q ]]; then
        local IFS=, f line
        for i in 0 1 2 3 4 5 6 7; do
            line=""
            for f in $q; do
                case ${f// /} in
                    name) v="NVIDIA $IX_GPU" ;;
                    index) v=$i ;;
                    memory.total) v=183359 ;;
                    memory.used|utilization.*) v=0 ;;
                    memory.free) v=183359 ;;
                    *) v=0 ;;
                esac
                line+="${line:+, }$v"
            done
            printf '%s\n' "$line"
        done
    else
        printf 'NVIDIA-SMI 570.00  Driver Version: 570.00  CUDA Version: 12.8\n'
    fi
}

ix_rocm_smi() {
    local i
    case " $* " in
        *" --showfw "*)
            for i in 0 1 2 3 4 5 6 7; do
                printf 'GPU[%d]\t\t: MEC firmware version: \t\t177\n' "$i"
            done ;;
        *" --showmemuse "*)
            for i in 0 1 2 3 4 5 6 7; do
                printf 'GPU[%d]\t\t: GPU Memory Allocated (VRAM%%): 0\n' "$i"
            done ;;
        *) printf 'ROCM System Management Interface\n' ;;
    esac
}
'''

STUB_LIBS = {"job": STUB_LIB_JOB, "py": STUB_LIB_PY, "hf": STUB_LIB_HF,
             "smi": STUB_LIB_SMI}

# sitecustomize for the real Python runs of a trace: packages of the container image that
# the host does not have import as stand-ins (a module whose every attribute is a
# callable stand-in; ``find_spec(...).origin`` is a real, writable file of the trace).
SITE = r'''
import os, sys

ROOTS = set(@ROOTS@)
BASE = os.environ.get("IXTRACE_PYFAKE") or os.path.join(os.path.dirname(
    os.path.abspath(__file__)), "fake")


def _norm(name):
    return name.lower().replace("-", "_").replace(".", "_")


# what a traced `pip install` installed: name -> version (import and metadata stand-ins)
INSTALLED = {}
try:
    with open(os.path.join(os.path.dirname(BASE), "installed"), encoding="utf-8") as _fh:
        for _line in _fh:
            _p = _line.split()
            if len(_p) == 2:
                INSTALLED[_norm(_p[0])] = _p[1]
except OSError:
    pass
# the image's own packages (when the host lacks them) have a version too
for _r in ROOTS:
    INSTALLED.setdefault(_norm(_r), "0.0.0")
ROOTS |= set(INSTALLED)


class _Stand:
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Stand()

    def __call__(self, *a, **k):
        return _Stand()

    def __iter__(self):
        return iter(())

    # a value the image would compute (a model's context length, a count): unknown
    # here, it reads as 0, the value a job's "could not determine" branch handles
    def __str__(self):
        return "0"

    def __int__(self):
        return 0

    __index__ = __int__

    def __float__(self):
        return 0.0


class _Finder:
    # imports nothing until a stand-in is needed (startup cost is per python run)
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] not in ROOTS:
            return None
        import importlib.util

        if not os.path.isdir(BASE):  # one site directory, as in an image
            for r in ROOTS:
                os.makedirs(os.path.join(BASE, r), exist_ok=True)
                open(os.path.join(BASE, r, "__init__.py"), "a").close()
        d = os.path.join(BASE, *name.split("."))
        if name.endswith(".__main__"):  # `python -m <stand-in>` runs and does nothing
            f = d + ".py"
            if not os.path.exists(f):
                open(f, "w").close()
            return importlib.util.spec_from_file_location(name, f)
        os.makedirs(d, exist_ok=True)
        f = os.path.join(d, "__init__.py")
        if not os.path.exists(f):
            open(f, "w").close()
        return importlib.util.spec_from_file_location(name, f, loader=self,
                                                      submodule_search_locations=[d])

    def create_module(self, spec):
        return None

    def find_distributions(self, context=None):
        name = getattr(context, "name", None)
        if not name or _norm(name) not in INSTALLED:
            return iter(())
        import importlib.metadata as md

        version = INSTALLED[_norm(name)]

        class _Dist(md.Distribution):
            def read_text(self, filename):
                if filename in ("METADATA", "PKG-INFO"):
                    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                return None

            def locate_file(self, path):
                return os.path.join(BASE, str(path))

        return iter((_Dist(),))

    def exec_module(self, module):
        module.__version__ = "0.0.0"
        module.__getattr__ = lambda n: _Stand()


sys.meta_path.append(_Finder())


# Python's path finder lists each directory of sys.path it searches and looks names up
# in that listing.  In the workspace it asks for each name instead (one lookup per
# candidate: the module, its package directory, each loader suffix), with the same
# answers: what the run then depends on of the directory is the names it looked for,
# each a path the read view records as found or missing (sandbox/_readfs.py) — not every
# entry, so a README added at the root does not reach every python run.
class _IxLookups:
    __slots__ = ("path",)

    def __init__(self, path):
        self.path = path

    def __contains__(self, name):
        return os.path.lexists(os.path.join(self.path, name) if self.path else name)

    def __iter__(self):  # (not the path finder: whoever enumerates gets a real listing)
        return iter(os.listdir(self.path or "."))


_IX_WS = []


def _ix_in_workspace(path):
    if not _IX_WS:
        try:
            _IX_WS.append(os.stat("@INNER@/ws").st_dev)
        except OSError:
            _IX_WS.append(None)
    return _IX_WS[0] is not None and os.stat(path or ".").st_dev == _IX_WS[0]


def _ix_lookups():
    ff = getattr(sys.modules.get("_frozen_importlib_external"), "FileFinder", None)
    fill = getattr(ff, "_fill_cache", None)
    if fill is None or sys.platform != "linux":
        return

    def _fill_cache(self):
        try:
            here = _ix_in_workspace(self.path)
        except Exception:  # (a path os.stat refuses: the path finder's own answer)
            here = False
        if not here:
            return fill(self)
        self._path_cache = _IxLookups(self.path)

    ff._fill_cache = _fill_cache


_ix_lookups()
'''

# container-image packages that import as stand-ins when the host lacks them
FAKE_PACKAGES = ("vllm", "sglang", "sgl_kernel", "tensorrt_llm", "atom", "aiter", "mooncake",
                 "lmcache", "cupy", "torch", "triton", "flashinfer", "deep_gemm", "dynamo",
                 "transformers", "nixl", "aiperf", "safetensors", "huggingface_hub", "yaml")

STUB = STUB.replace("@LEDGER_FNS@", LEDGER_FNS.replace("@P@", "ix_"))

# The traced shell: xtrace to the pipe ixtool holds; ``source``/``.`` of a file that is
# missing outside the workspace (a runner's own environment file such as uv's
# ~/.local/bin/env) is skipped and noted instead of failing the trace.  A command found
# nowhere on PATH (not a repository file: those are run by path) is a tool of the job's
# container image (``lmcache``, a vendor CLI): recorded and stubbed like any other, in
# every bash the trace starts (``command_not_found_handle``, exported).
#
# ``kill`` (exported too) signals as bash does, after one wait: a signal sent to a child
# the shell has just forked, before that child has started its program, reaches a copy of
# the shell that still holds the script's trap for that signal; the copy defers the trap
# and the exec of the program then drops it, so the program never gets the signal.  A job
# never sees that window (its health check takes seconds); a trace's stubbed check
# answers within it, and under CPU pressure `tail -f log & t=$!; curl …/health; kill $t;
# wait $t` with a `trap … TERM` waited forever (1 trace in ~250 of the real tree's lmcache
# recipe at load 10).  So a catchable signal to such a child (its parent is this shell, its
# command line still the shell's, the signal still caught) waits until the child has
# started its program or reset the trap (at most 400 polls of 5 ms), then goes as before.
INNER = r'''cd "$2" || exit 97
export PWD
TRACED="BASH_XTRACEFD=$3; IXW=\"\$PWD\"; "'
source() {
    if [[ $# -gt 0 && $1 == /* && ! -e $1 && $1 != "$IXW"/* ]]; then
        printf "%s N missing runner file not sourced: %q\t\n" \
            "${EPOCHREALTIME/./}-$$-$RANDOM" "${1:0:500}" >> @LEDGER@
        return 0
    fi
    builtin source "$@"
}
.() { source "$@"; }
command_not_found_handle() { IX_AS_TOOL=$1 exec @STUB@ "${@:2}"; }
kill() {
    local - __ix_a __ix_o="" __ix_s=15 __ix_p="" __ix_q __ix_i __ix_k __ix_v __ix_pp
    local -a __ix_w __ix_c __ix_me
    set +x
    for __ix_a in "$@"; do
        if [[ $__ix_o == s ]]; then __ix_s=$__ix_a __ix_o=""; continue; fi
        case $__ix_o/$__ix_a in  # (after --, every word is a pid or a job)
            /-l|/-L) builtin kill "$@"; return ;;
            /-s|/-n) __ix_o=s ;;
            /--) __ix_o=- ;;
            /-?*) __ix_s=${__ix_a#-} ;;
            *) [[ $__ix_a == [1-9]*([0-9]) ]] && __ix_p+=" $__ix_a" ;;
        esac
    done
    __ix_s=${__ix_s^^}; __ix_s=${__ix_s#SIG}
    if [[ $__ix_s != +([0-9]) ]]; then
        __ix_a=" HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM STKFLT"
        __ix_a+=" CHLD CONT STOP TSTP TTIN TTOU URG XCPU XFSZ VTALRM PROF WINCH IO PWR SYS "
        __ix_k=${__ix_a%%" $__ix_s "*}
        __ix_w=($__ix_k)
        if [[ $__ix_k == "$__ix_a" ]]; then __ix_s=-1; else __ix_s=$((${#__ix_w[@]} + 1)); fi
    fi
    case $__ix_s in 0|9|19) __ix_p="" ;; esac
    [[ -n $__ix_p ]] && mapfile -d "" -t __ix_me < "/proc/$BASHPID/cmdline" 2>/dev/null
    for __ix_q in $__ix_p; do
        for ((__ix_i = 0; __ix_i < 400; __ix_i++)); do
            __ix_pp="" __ix_v=""
            { while read -r __ix_k __ix_v; do
                  [[ $__ix_k == PPid: ]] && __ix_pp=$__ix_v
                  [[ $__ix_k == SigCgt: ]] && break
              done < "/proc/$__ix_q/status"; } 2>/dev/null || break
            [[ $__ix_pp == "$BASHPID" && $__ix_v == +([0-9a-f]) ]] || break
            ((__ix_s < 0 || (16#$__ix_v >> (__ix_s - 1)) & 1)) || break
            mapfile -d "" -t __ix_c < "/proc/$__ix_q/cmdline" 2>/dev/null || break
            [[ "${__ix_c[*]}" == "${__ix_me[*]}" ]] || break
            @SLEEP@ 0.005
        done
    done
    builtin kill "$@"
}
export -f command_not_found_handle kill
PS4="+\${BASH_SOURCE:-?}:\${LINENO}: "; set -x; builtin source "$0"'
@BASH@ --noprofile --norc -c "$TRACED" "$1" < @STDIN@
ix_rc=$?
# a stub still writing its record when the script ended (started in the background and
# not waited for) gets up to a second to finish it: a record cut off fails the trace
for ((ix_i = 0; ix_i < 50; ix_i++)); do
    ix_busy=0
    for ix_p in /proc/[0-9]*/cmdline; do
        [[ $ix_p == "/proc/$$/cmdline" ]] && continue
        mapfile -d '' -t ix_a < "$ix_p" 2>/dev/null || continue
        if [[ ${ix_a[1]-} == @BIN@/* ]]; then ix_busy=1; break; fi
    done
    ((ix_busy)) || break
    @SLEEP@ 0.02
done
printf '%s X \n' "${EPOCHREALTIME/./}-$$-$RANDOM" >> @LEDGER@
exit $ix_rc
'''

# host directories a trace's root links to (read-only); every other top-level path is
# the trace's own (empty, writable)
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "proc",
               "dev", "sys", "run")
