"""The measured-AL audit's rule catalog (ids AL1xx artifacts, AL2xx verdicts, AL3xx
coverage, AL4xx curve import)."""

from __future__ import annotations

from inferencex_tools.report.findings import Severity, rule

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE
A = "al"

# --- artifacts ----------------------------------------------------------------------
ARTIFACT_REFUSED = rule(
    "AL101", W, "an artifact could not be read safely and was skipped",
    "the message names the limit it broke (size, entries, compression ratio, unsafe "
    "name, link); raise it with --max-artifact-mib / --max-file-mib only for an "
    "artifact you trust", area=A)
MEASUREMENT_INVALID = rule(
    "AL102", W, "a metrics export or server log is malformed, truncated or inconsistent; "
    "its numbers were not used",
    "re-download the artifact; a file that really looks like this was written by a "
    "server or client that did not finish", area=A)
UNMATCHED_ARTIFACT = rule(
    "AL103", N, "an artifact belongs to no row of the sweep at --root",
    "check that --root is the repository at the run's head commit", area=A)
AMBIGUOUS_ARTIFACT = rule(
    "AL105", N, "an artifact fits several jobs of the sweep and nothing else the run "
    "uploaded shows which job it is; it was not read",
    "the benchmark template uploads it under the same name for each of these jobs (a "
    "throughput job and the eval-only job of the same row and runner); keep the jobs' "
    "server-log artifacts, which the template names by mode", area=A)
ROOT_NOT_AT_HEAD = rule(
    "AL104", W, "--root is not at the audited run's head commit",
    "check out the run's head (git checkout SHA) so the rows, launches and curves are "
    "the ones the run used", area=A)

# --- verdicts -----------------------------------------------------------------------
FORCED_NOT_SERVED = rule(
    "AL201", E, "a throughput job with synthetic acceptance did not serve the forced AL",
    "the engine ignored or overrode the forced acceptance (unsupported knob in this "
    "image, a recipe or runner edit, real verification); the job's throughput is not "
    "comparable: fix the launch and re-run it", area=A)
OFF_GOLDEN = rule(
    "AL202", W, "a real-verification job accepts far from the golden curve (the likely "
    "cause is named)",
    "compare the served draft head, thinking mode and K with the curve's; a broken "
    "drafter accepts almost nothing", area=A)
OUTSIDE_BAND = rule(
    "AL203", N, "a real-verification job is outside the golden band, but not far",
    "widen --band for a workload other than the curve's (SPEED-Bench coding), or look "
    "at the job's drafter", area=A)

# --- coverage -----------------------------------------------------------------------
NOT_MEASURED = rule(
    "AL301", N, "a speculative-decoding job could not be measured (the reason is named)",
    "keep the job's server log and aiperf server_metrics_export.json in its artifacts",
    area=A)
NO_VERDICT = rule(
    "AL303", N, "a measured job has no verdict: real acceptance outside agentic coding "
    "(the golden curves are AgentX's)",
    "nothing to fix; the measurement is in the report (info.jobs)", area=A)
COARSE = rule(
    "AL304", N, "a job was measured without counts (a gauge's time average, or log "
    "ratios): its standard error is an estimate, and the note says which",
    "upload aiperf's server_metrics_export.json with the engine's acceptance counters "
    "(vLLM spec_decode_*, SGLang spec_verify_calls + generation_tokens)", area=A)
NO_GOLDEN = rule(
    "AL302", N, "a measured job has no golden curve to compare with",
    "the launch's draft has no registry row or curve (see `ixtool policy check`)", area=A)

# --- curve import -------------------------------------------------------------------
NO_COLLECTION = rule(
    "AL401", E, "the run has no usable SpeedBench AL collection artifact",
    "import a run of speedbench-al.yml; its artifact is "
    "speedbench-reference-al-<model-prefix>", area=A)
COLLECTION_INVALID = rule(
    "AL402", E, "the collected AL matrix is malformed or incomplete",
    "re-run the collection: every requested (thinking mode, K) cell needs a value", area=A)
CURVE_WOULD_CHANGE = rule(
    "AL403", E, "the imported curve would replace a different committed curve file",
    "pass --force to replace it, in the curve's own reviewed PR (never together with "
    "recipe changes: PO109)", area=A)
