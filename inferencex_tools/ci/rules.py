"""The ci/labels rule catalog (ids CI1xx labels, CI2xx events, CI3xx reuse, CI4xx
dispatch, CI5xx the gate, CI6xx what judges a change: the base's settings)."""

from __future__ import annotations

from inferencex_tools.report.findings import Severity, rule

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE
A = "ci"

# --- label set (spec §9) -------------------------------------------------------
PRIMARY_CONFLICT = rule(
    "CI101", E, "more than one primary sweep label",
    "keep exactly one of the five primary sweep labels; remove the others", area=A)
MODIFIER_WITHOUT_PRIMARY = rule(
    "CI102", W, "sweep modifier label without a primary sweep label",
    "add one primary sweep label (e.g. sweep-enabled) or remove the modifier", area=A)
NEAR_MISS = rule(
    "CI103", W, "label looks like a sweep/policy label but is not one",
    "use the exact label name (see `ixtool labels explain`)", area=A)
NOT_REUSABLE = rule(
    "CI104", N, "the sweep these labels start cannot be reused at merge time",
    "drop evals-only/agentx-fast (or use a full-sweep label) if main should reuse this run",
    area=A)
FORK_NO_SWEEP = rule(
    "CI105", W, "fork PR: the labeled sweep runs only through the trusted path",
    "a maintainer reviews the head and dispatches sweep.yml for that SHA (`gh workflow run "
    "sweep.yml -f pr=N -f sha=SHA`); the self-hosted jobs then wait for the environment's "
    "approval", area=A)
DRAFT_NO_SWEEP = rule(
    "CI106", N, "draft PR: the labeled sweep waits for 'ready for review'",
    "mark the PR ready for review to start the sweep", area=A)
SKIP_SWEEP_TAG = rule(
    "CI107", N, "[skip-sweep] on a merge-with-reuse preparation commit: the PR sweep is "
    "skipped",
    "push a commit without [skip-sweep] to sweep again", area=A)
INEFFECTIVE_MODIFIER = rule(
    "CI108", W, "modifier label has no effect in this combination",
    "remove the modifier that has no effect", area=A)
WAIVER_WITHOUT_PATCHWORK = rule(
    "CI109", W, "ci-patchwork-waived without ci-patchwork or engine-patch",
    "remove ci-patchwork-waived, or add the patchwork label it waives", area=A)
SKIP_SWEEP_IGNORED = rule(
    "CI110", W, "[skip-sweep] ignored: the head is not a merge-with-reuse preparation commit "
    "pushed on the previous head",
    "[skip-sweep] skips only the push of a preparation commit (main merged into the "
    "previous head and the changelog's links canonicalized, nothing else); to skip the "
    "sweep of content already benchmarked, a maintainer comments /reuse-sweep-run after "
    "the push", area=A)

# --- event payload ---------------------------------------------------------------
HEAD_UNAVAILABLE = rule(
    "CI201", W, "head commit not available locally: [skip-sweep] and the changelog diff "
    "were not checked",
    "check out with full history (actions/checkout fetch-depth: 0) before `ixtool ci plan`",
    area=A)

# --- reuse authorization (spec §8.1) -----------------------------------------------
REUSE_AUTHORIZED = rule(
    "CI301", N, "sweep reuse authorized: the PR sweep is skipped",
    "a newer bare or pinned /reuse-sweep-run comment by a maintainer changes the choice",
    area=A)
REUSE_NOT_FOR_HEAD = rule(
    "CI302", N, "a reuse authorization is in force, but not for this head: the PR sweep runs",
    "an authorization skips only the sweep of the head it was given for: the preparation "
    "commit ixtool records (ixtool merge-with-reuse), or any head pushed before the "
    "comment (comment again, then re-run the workflow)", area=A)
REUSE_SELF = rule(
    "CI303", N, "a reuse authorization by someone who pushed or wrote what it would cover "
    "(the PR's author, the pusher of the head, an author or committer of a PR commit): the "
    "PR sweep runs",
    "another maintainer, who pushed and wrote none of the PR's commits, comments "
    "/reuse-sweep-run (then re-run the workflow); or use ixtool merge-with-reuse", area=A)

# --- sweep dispatch (job-matrix shards) ------------------------------------------------
TOO_MANY_JOBS = rule(
    "CI401", E, "the sweep has more jobs than the workflow's shards can run",
    "narrow the sweep or add shard jobs (and raise --max-shards)", area=A)
RUNNER_NOT_ALLOWED = rule(
    "CI402", E, "a sweep row names a runner label that is not on the trusted allow-list",
    "add the label to configs/runners.yaml in a separate, reviewed change to the default "
    "branch first; PR data never chooses where jobs run", area=A)
OUTPUT_LIMIT = rule(
    "CI403", E, "the job's outputs exceed GitHub's 1 MB per job",
    "pass rows as an artifact (ci gate --matrix-out) and only handles through outputs",
    area=A)

# --- ci gate ------------------------------------------------------------------------
GATE_STAGE = rule(
    "CI501", E, "a ci gate stage could not run on its input",
    "fix the input named in the message; the other stages still report their findings",
    area=A)

NO_CHANGELOG = rule(
    "CI502", W, "the repository has no changelog at the base or the head: nothing to judge, "
    "no entry decides a sweep",
    "pass --changelog with the path the repository keeps it at; a repository adopting the "
    "changelog adds perf-changelog.yaml in a PR of its own", area=A)

# --- trust: what judges a change comes from its base (docs/security.md) -----------------
SETTINGS_CHANGED = rule(
    "CI601", W, "the change edits ixtool's settings or baseline: this check applied the "
    "base revision's",
    "the new settings take effect after merge; a reviewer approves them like code (land "
    "them in their own PR to see their effect on main)", area=A)
BASE_SETTINGS_UNREADABLE = rule(
    "CI602", W, "PR context without a readable base revision: no settings or baseline "
    "applied (the checkout's never are)",
    "fetch the base (actions/checkout with fetch-depth: 0) so its settings apply", area=A)
LAYOUT_MOVED = rule(
    "CI603", W, "the change's own workflows or settings would read the master configs or "
    "runners.yaml from other files: the base's located them",
    "the new location takes effect after merge; move configs in their own reviewed PR",
    area=A)
