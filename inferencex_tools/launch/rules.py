"""The launch rule catalog (ids LA1xx selection/resolution, LA2xx tracing,
LA3xx row ↔ launch agreement, LA4xx scheduler)."""

from __future__ import annotations

from inferencex_tools.report.findings import Severity, rule

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE
A = "launch"

# --- selection and resolution -------------------------------------------------
NO_ROWS = rule("LA101", E, "the selection matches no matrix row",
               "check --config-key/--arm/--conc against `ixtool sweep test-config`", area=A)
BAD_ROW = rule("LA102", E, "a row lacks fields the launcher needs",
               "pass a complete matrix row (as printed by `ixtool sweep`)", area=A)
NO_NODE = rule("LA103", E, "the row's runner label has no node to run on",
               "add the label to configs/runners.yaml or pass --runner NODE", area=A)
NO_LAUNCHER = rule("LA104", E, "no launcher script for the runner family",
                   "add runners/launch_<family>.sh or pick another --runner", area=A)
NO_SCRIPT = rule("LA105", E, "the benchmark script the row resolves to does not exist",
                 "add the recipe under benchmarks/single_node/ or fix the config's "
                 "model-prefix/precision/framework", area=A)
MULTINODE = rule("LA106", N, "a multi-node row is rendered up to the launcher's submission "
                 "(srtctl apply of a recipe, sbatch); the recipe's servers run on the cluster "
                 "and are not traced", "read the submitted recipe for the servers' settings",
                 area=A)
NAME_CLASH = rule("LA108", W, "several rows share one exp-name (job names and result names "
                  "collide)", "tell the jobs apart by job id; the sweep's exp-name omits ep, "
                  "pp and dp-attn", area=A)
OTHER_SCRIPT = rule("LA109", E, "the launcher runs another benchmark script than the row "
                    "resolves to", "make the launcher follow the script naming rule "
                    "(SWEEP.md §7) or rename the script", area=A)
EVAL_UNMARKED = rule("LA107", N, "rendered as an eval run although the sweep would not "
                     "select this row for evals",
                     "evals run at the row `ixtool sweep test-config --evals-only` picks",
                     area=A)

# --- tracing ----------------------------------------------------------------------
TRACE_FAILED = rule("LA201", E, "the launcher or benchmark script failed under tracing",
                    "run the script by hand with the exported environment; the last "
                    "recorded command is in the message", area=A)
NO_SERVER = rule("LA202", E, "no inference-server launch was captured",
                 "the script must start the server (vllm serve, sglang, trtllm-serve …)",
                 area=A)
NO_ALLOCATION = rule("LA203", E, "the launcher requests no Slurm allocation",
                     "the launcher must call salloc/sbatch/srun for the job", area=A)
ALLOC_UNRESOLVED = rule("LA204", W, "a piece of the Slurm allocation is not stated",
                        "state it in the launcher (partition, time, image, mounts)", area=A)
NO_SUBMISSION = rule("LA206", W, "a multi-node launcher did not reach its submission "
                     "(srtctl apply / sbatch) under tracing, so what it submits is unknown",
                     "vendor the recipe the launcher submits (benchmarks/multi_node/), or "
                     "run the launcher by hand with the exported environment", area=A)
NO_STEP = rule("LA205", E, "the launcher never runs the benchmark script in a job step",
               "run `srun … bash <script>` inside the allocation", area=A)
STUB_OUTPUT = rule("LA207", N, "a step needs what a stubbed tool would have written in the "
                   "job (a clone, a download, a container image): not checked beyond it",
                   "nothing to fix if the job has the network and its container runtime; "
                   "the message names the stubbed call and the step", area=A)

# --- row ↔ launch agreement ----------------------------------------------------------
GPU_MISMATCH = rule("LA301", E, "the allocation's GPU count differs from the row's tp×pp×pcp",
                    "request --gres=gpu:<tp·pp·pcp> per node", area=A)
TP_MISMATCH = rule("LA302", E, "the server's tensor parallelism differs from the row's tp",
                   "pass --tensor-parallel-size \"$TP\"", area=A)
EP_MISMATCH = rule("LA303", E, "expert parallelism in the server differs from the row's ep",
                   "enable expert parallelism exactly when the row's ep > 1", area=A)
KV_MISMATCH = rule("LA304", E, "KV offloading in the server differs from the row",
                   "configure the KV connector exactly when kv-offloading is dram", area=A)
SPEC_MISSING = rule("LA305", E, "the row runs speculative decoding but the server has no "
                    "speculative config", "pass --speculative-config for spec-decoding rows",
                    area=A)
CONC_MISMATCH = rule("LA306", W, "the server's --max-num-seqs is below the row's concurrency",
                     "size --max-num-seqs from CONC", area=A)
VAR_DROPPED = rule("LA307", E, "a row variable does not reach the benchmark script",
                   "export the variable in the launcher or pass --export=ALL to srun", area=A)
IMAGE_MISMATCH = rule("LA308", W, "the container image differs from the row's image",
                      "derive the container from $IMAGE", area=A)

# --- scheduler --------------------------------------------------------------------------
SUBMIT_FAILED = rule("LA401", E, "sbatch refused the job",
                     "read sbatch's message; check partition, gres and time limits", area=A)
JOB_UNKNOWN = rule("LA402", W, "a recorded job is known neither to squeue nor to sacct",
                   "the job may have aged out of the controller; check the cluster", area=A)
JOB_FAILED = rule("LA403", E, "a job ended in a state other than COMPLETED",
                  "read the job's output file (path in the message)", area=A)
JOB_PENDING = rule("LA404", N, "a job has not finished yet",
                   "wait (`ixtool launch status --wait`)", area=A)
NO_SCHEDULER = rule("LA405", E, "the Slurm client commands are not available",
                    "install Slurm's client tools or use --dry-run", area=A)
