"""The golden-AL policy rule catalog (ids PO1xx curves/registry, PO2xx resolution,
PO3xx tracing, PO4xx policy).  G-xx references are to ../shared/spec/POLICY.md."""

from __future__ import annotations

from inferencex_tools.report.findings import Severity, rule

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE
A = "policy"

# --- curve files and the registry (G-04, G-06, G-13, G-14) -------------------------
CURVE_YAML = rule("PO101", E, "curve file is not loadable YAML",
                  "fix the YAML; curve files come unchanged from a speedbench-al.yml artifact",
                  area=A)
CURVE_SCHEMA = rule("PO102", E, "curve file fails schemas/golden-al.schema.json (G-13)",
                    "one top-level model key, thinking_on/thinking_off, K 1..8 -> AL", area=A)
CURVE_HEADER = rule("PO103", E, "curve header lacks the source Actions run URL (G-14)",
                    "start the file with '# Source GitHub Actions run: "
                    "https://github.com/OWNER/REPO/actions/runs/ID'", area=A)
CURVE_VALUE = rule("PO104", E, "curve value outside [1, K+1] or not two decimals (G-09, G-13)",
                   "copy the values unchanged from the collection run's artifact", area=A)
REGISTRY_INVALID = rule("PO105", E, "golden-AL registry is invalid",
                        "fix golden_al_distribution/registry.yaml (see "
                        "schemas/golden-al.schema.json $defs/registry)", area=A)
REGISTRY_CURVE = rule("PO106", E, "registry row names a curve file or model key that "
                      "does not exist", "add the curve file, or fix the row's curve/model-key",
                      area=A)
REGISTRY_CONFLICT = rule("PO107", E, "two registry rows cover the same model, method, draft "
                         "and sampling (G-06)", "keep exactly one committed curve per cell",
                         area=A)
REGISTRY_AMBIGUOUS = rule("PO108", W, "the curve mapping derived from the repository is "
                          "ambiguous (no registry.yaml)",
                          "run 'ixtool policy init', name each curve's draft in the written "
                          "golden_al_distribution/registry.yaml and commit it", area=A)
CURVE_CHANGED = rule("PO109", W, "a golden curve or the registry changes in this change "
                     "(--base): recipes are judged against the base ref's curves",
                     "the curve takes effect after merge: land curve changes in their own "
                     "reviewed PR (from a speedbench-al.yml run), then change recipes", area=A)

# --- recipe resolution (SWEEP.md §7, POLICY.md §3) ------------------------------------
NO_LAUNCHER = rule("PO201", E, "no launcher for the config's runner",
                   "add runners/launch_<runner family>.sh or fix the config's runner", area=A)
NO_SCRIPT = rule("PO202", E, "the benchmark script the config key resolves to does not exist",
                 "add the script at the resolved path, or fix model-prefix/precision/framework",
                 area=A)
WRONG_FRAMEWORK = rule("PO203", E, "the resolved script launches another framework's server",
                       "add a script for the config's framework (…_<framework>_mtp.sh) or fix "
                       "the config's framework", area=A)
NO_RECIPE = rule("PO204", E, "multi-node recipe (CONFIG_FILE) missing or not vendored",
                 "vendor the recipe under benchmarks/multi_node/srt-slurm-recipes/", area=A)
CONFIG_INVALID = rule("PO205", E, "master config unreadable for the policy check",
                      "fix the master config (ixtool sweep validate gives details)", area=A)
GENERATOR_REFUSED = rule("PO206", W, "the sweep generator refuses this config key: its rows "
                         "are not checked (the other keys' rows are generated without it)",
                         "fix the entry (`ixtool config validate` shows where); the policy "
                         "check then traces its rows", area=A)

# --- tracing (TRACING-NOTES.md) ---------------------------------------------------------
TRACE_FAILED = rule("PO301", E, "tracing the recipe failed (non-zero exit status)",
                    "make the script run to its server launch with the row's variables; "
                    "the message names the last traced line", area=A)
NO_SERVER = rule("PO302", E, "the traced recipe launched no inference server",
                 "the script must start vllm/sglang/trtllm-serve/ATOM for this row", area=A)
SANDBOX_EVENT = rule("PO303", W, "the recipe tried something the sandbox blocked "
                     "(network, writes outside its directory, runaway processes)",
                     "benchmark scripts must not reach the network or write outside the job "
                     "directory at launch time; download in the launcher", area=A)
STATIC_ONLY = rule("PO304", N, "multi-node recipe read as submitted, not traced (its servers "
                   "run on the cluster)", "the launcher is traced up to `srtctl apply`; the "
                   "recipe it submits (after its edits and the runner's injection) is read as "
                   "srtctl reads it; recipes of external srt-slurm refs cannot be read",
                   area=A)
SANDBOX_WEAK = rule("PO305", E, "no sandbox: the recipes were traced without isolation "
                    "(--allow-unsandboxed), so no verdict of this run can be trusted",
                    "run the check where unprivileged user namespaces are allowed "
                    "(unshare -rmnp) or bubblewrap (bwrap) can run", area=A)
RECIPE_DUPLICATE = rule("PO306", W, "recipe YAML repeats a key: its consumer (srtctl, PyYAML "
                        "safe_load) silently keeps the last value",
                        "remove the earlier key, or merge the two values", area=A)
RECIPE_LIMIT = rule("PO307", E, "recipe YAML beyond the parsing bounds (aliases, expanded "
                    "size, nesting, recursive aliases) or not YAML: not checked",
                    "simplify the recipe (fewer anchors/aliases, no recursion)", area=A)
NOT_CHECKED = rule("PO308", W, "a spec-decoding config key got no verdict (not checked), "
                   "with the reason", "make the key's rows traceable (launcher, script or "
                   "vendored recipe) or check it by hand", area=A)
LAUNCHER_UNTRACED = rule("PO309", N, "the launcher could not be traced to its job step or "
                         "submission; its action was read statically instead",
                         "make the launcher run to its srun/docker step under the trace "
                         "stubs (the note names the last traced line)", area=A)
SANDBOX_STOPPED = rule("PO310", E, "the sandbox stopped the trace (time, memory, processes, "
                       "disk or output limit) or refused its ledger (tampered with, over a "
                       "cap, a record cut off): not checked",
                       "a recipe must stay within the trace's limits and leave the stubs' "
                       "bookkeeping alone; the message says which limit or what was wrong",
                       area=A)
BUILTIN_ENVIRONMENT = rule("PO311", W, "rows judged with ixtool's built-in job environment, "
                           "not the one the repository's workflows give the job",
                           "make a workflow under .github/workflows dispatch the rows' matrix "
                           "bucket to a template whose run step starts runners/launch_*.sh; "
                           "until then the verdicts of these rows rest on ixtool's stand-in "
                           "variables", area=A)

# --- the policy (G-01 .. G-12) ----------------------------------------------------------
NOT_FORCED = rule("PO401", E, "agentic spec-decoding throughput run does not force synthetic "
                  "acceptance (G-01)",
                  "pin the golden AL: vLLM rejection_sample_method synthetic + "
                  "synthetic_acceptance_length; SGLang SGLANG_SIMULATE_ACC_LEN; TRT "
                  "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=AL-1; ATOM "
                  "--spec-decode-acceptance-length", area=A)
EVAL_SYNTHETIC = rule("PO402", E, "synthetic acceptance reaches the server in an eval run "
                      "(EVAL_ONLY=true) (G-12)",
                      "branch on EVAL_ONLY and drop every synthetic knob for evals", area=A)
AL_MISMATCH = rule("PO403", E, "pinned AL differs from the golden curve (G-09)",
                   "use the value printed by 'ixtool policy golden'", area=A)
AL_RANGE = rule("PO404", E, "pinned AL outside [1, K+1] (G-10)",
                "an AL counts the bonus token: 1 <= AL <= K+1", area=A)
NO_CURVE = rule("PO405", E, "no golden curve for this model / method / draft head (G-04)",
                "add a registry row and curve from a speedbench-al.yml run, or do not run "
                "this draft in AgentX", area=A)
CURVE_MIXING = rule("PO406", E, "pinned AL comes from a sibling curve of another draft head "
                    "(G-05)", "take the AL from the curve of the draft actually launched",
                    area=A)
WRONG_K = rule("PO407", E, "pinned AL is the golden value of another K (G-05, G-08)",
               "take the row of the K actually launched (num_speculative_tokens)", area=A)
WRONG_MODE = rule("PO408", E, "pinned AL is the value of the other thinking mode (G-07)",
                  "take the row of the thinking mode the server really serves", area=A)
ENCODING = rule("PO409", E, "AL encoded in the wrong unit for the engine (G-11)",
                "TRT forces AL-1 draft tokens; ATOM takes AL or the rate (AL-1)/K; vLLM and "
                "SGLang take AL", area=A)
INCOMPLETE_KNOBS = rule("PO410", E, "synthetic acceptance configured incompletely or "
                        "inconsistently (G-11)",
                        "vLLM needs rejection_sample_method synthetic with the length; SGLang "
                        "needs METHOD=match-expected and TOKEN_MODE=real-draft-token; ATOM "
                        "takes one of length/rate and not with the DSpark confidence schedule",
                        area=A)
MODE_UNDETERMINED = rule("PO411", W, "thinking mode of the served traffic undetermined (G-07)",
                         "pass the mode explicitly (vLLM --default-chat-template-kwargs, "
                         "SGLANG_DEFAULT_THINKING, or the client's per-request flag)", area=A)
NO_DRAFT = rule("PO412", E, "spec-decoding is set in the config but the launch has no "
                "speculative config (G-03)",
                "launch the drafter, or set spec-decoding: none for these points", area=A)
FIXED_SYNTHETIC = rule("PO413", E, "synthetic acceptance on a non-agentic config (G-02)",
                       "remove the synthetic knobs, or record a sanctioned exception under "
                       "synthetic-exceptions in the registry", area=A)
BAD_K = rule("PO414", E, "draft length K missing or outside 1..8 (G-08)",
             "set num_speculative_tokens (or the engine's spelling) to 1..8", area=A)
UNLABELLED_DRAFT = rule("PO415", W, "the launch drafts but the config says spec-decoding none "
                        "(G-01)", "label the points spec-decoding: mtp", area=A)
SAMPLING_UNOBSERVABLE = rule(
    "PO416", W, "pinned AL matches a curve that differs from the matched one only in draft "
    "sampling, and the launch does not show its sampling mode (G-04, G-05)",
    "confirm the engine drafts with that curve's sampling mode (e.g. a comment citing the "
    "engine's default), or pin the value of the curve it really uses", area=A)

# --- serve shape vs siblings (ixtool review; logic in review/shape.py) -----------------
SHAPE_MEMORY = rule("PO501", W, "spec-decoding recipe runs a memory fraction above every "
                    "proven spec-decoding recipe on its GPU (or inherits its non-spec "
                    "sibling's)",
                    "lower --gpu-memory-utilization (SGLang --mem-fraction-static) to the "
                    "proven value: the drafter's weights, KV cache and 1+K-token CUDA graphs "
                    "need the headroom (#2423: OOM 96 MiB short)", area=A)
SHAPE_DELTA = rule("PO502", N, "serve shape differs from a sibling recipe beyond the "
                   "spec-decode delta (speculative flags, memory fraction, CUDA-graph capture "
                   "size, max sequences)",
                   "keep sibling recipes in step, or say in the PR why this recipe differs",
                   area=A)
