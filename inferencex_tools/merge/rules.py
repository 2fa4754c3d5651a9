"""The merge-with-reuse rule catalog (ids MR1xx preflight: repository and PR,
MR2xx labels, MR3xx reuse source, MR4xx changelog, MR5xx execution)."""

from __future__ import annotations

from inferencex_tools.report.findings import Severity, rule

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE
A = "merge"

# --- repository and PR (spec §7 steps 2–3) -----------------------------------
DIRTY_TREE = rule("MR101", E, "the working tree is not clean",
                  "commit or stash your changes first (git status)", area=A)
PR_NOT_OPEN = rule("MR102", E, "the pull request is not open",
                   "only open pull requests can be merged", area=A)
PR_FORK = rule("MR103", E, "the pull request comes from a fork",
               "sweep reuse needs a same-repository branch; merge fork PRs normally", area=A)
PR_ALREADY_MERGED = rule("MR104", N, "the pull request is already merged",
                         "nothing to do", area=A)
BASE_BRANCH = rule("MR105", E, "the pull request does not target the default merge branch",
                   "sweep reuse runs on PRs to main only; retarget the PR", area=A)
NO_GIT_IDENTITY = rule("MR106", E, "git has no configured identity for ixtool's commit",
                       "set user.name and user.email in your git configuration "
                       "(git config --global user.email you@example.com)", area=A)
CANNOT_PUSH = rule("MR107", E, "git cannot push to the pull request's branch",
                   "make `git push` to the PR branch work from this clone (a credential "
                   "helper such as `gh auth setup-git`, or an SSH remote), then re-run",
                   area=A)

# --- labels (spec §9) -------------------------------------------------------
SWEEP_LABEL_COUNT = rule("MR201", E, "the PR must carry exactly one primary sweep label",
                         "keep exactly one of the five sweep labels", area=A)
NOT_FULL_SWEEP = rule("MR202", E, "the PR's sweep label is not a full-sweep label",
                      "reuse needs full-sweep-enabled, non-canary-full-sweep-enabled, "
                      "full-sweep-fail-fast or full-sweep-fail-fast-no-canary", area=A)
INCOMPATIBLE_LABEL = rule("MR203", E, "the PR carries a label that makes reuse impossible",
                          "remove evals-only / agentx-fast and run a full sweep first", area=A)

# --- reuse source (spec §8) --------------------------------------------------
NO_ELIGIBLE_RUN = rule("MR301", E, "no eligible successful run-sweep.yml run",
                       "run a full sweep on the PR (or pin a run with --run-id)", area=A)
PINNED_RUN_INVALID = rule("MR302", E, "the pinned run cannot be reused",
                          "pin a completed, successful pull_request run of run-sweep.yml "
                          "on a commit of this PR with unexpired result artifacts (a run "
                          "that failed or was cancelled with complete results: "
                          "--allow-failed-run)", area=A)
RUN_NOT_AT_HEAD = rule("MR303", E, "the PR head changes more than the benchmarked commit did",
                       "re-run the full sweep on the PR's head, or pass "
                       "--allow-unbenchmarked if the changes cannot change results (the "
                       "commits are then named in the squash commit)", area=A)
AUTHORIZATION_CONFLICT = rule("MR304", N, "an existing /reuse-sweep-run comment pins another run",
                              "ixtool posts a new comment pinned to the chosen run", area=A)
NOT_AUTHORIZED = rule("MR305", E, "the token's user cannot authorize reuse or merge",
                      "a /reuse-sweep-run comment counts only from a user with write or "
                      "admin permission; use such a user's token or ask a maintainer",
                      area=A)
AL_NOT_SERVED = rule("MR330", E, "the reused run's throughput jobs did not serve the "
                     "acceptance length their launches forced",
                     "their throughput is not comparable: fix the launch and re-run the "
                     "sweep (`ixtool al audit RUN_ID` shows each job), or pass "
                     "--allow-al-mismatch to merge anyway (named in the squash commit)",
                     area=A)
AL_MISMATCH_ALLOWED = rule("MR331", W, "throughput jobs that did not serve their forced AL "
                           "are merged (--allow-al-mismatch)",
                           "the squash commit names them; re-run the sweep if in doubt",
                           area=A)
UNBENCHMARKED_ALLOWED = rule("MR306", W, "changes after the benchmarked commit are merged "
                             "(--allow-unbenchmarked)",
                             "the squash commit names them; re-run the sweep if in doubt",
                             area=A)
FAILED_RUN_REUSED = rule("MR307", W, "a pinned run that failed or was cancelled is reused "
                         "(--allow-failed-run)",
                         "the squash commit says so; make sure its results are complete",
                         area=A)

# --- changelog (spec §3, §6, G1) --------------------------------------------
CHANGELOG_GATE = rule("MR401", E, "the PR's changelog change fails the PR-mode gate",
                      "fix perf-changelog.yaml on the PR branch "
                      "(ixtool changelog validate --pr N --base origin/main)", area=A)
CHANGELOG_UNMERGEABLE = rule("MR402", E, "the PR's changelog cannot be merged with main safely",
                             "merge main into the PR by hand and fix perf-changelog.yaml", area=A)
UNEXPECTED_CONFLICT = rule("MR403", E, "merging main conflicts outside perf-changelog.yaml",
                           "merge main into the PR branch by hand and resolve the conflicts",
                           area=A)
NO_CHANGELOG_CHANGE = rule("MR404", E, "the PR does not change perf-changelog.yaml",
                           "sweep reuse is only for benchmark PRs that append a changelog entry",
                           area=A)

# --- execution (spec §7 steps 10–15) ----------------------------------------
HEAD_MOVED = rule("MR501", E, "the PR head changed while ixtool was working",
                  "someone pushed to the PR; re-run ixtool merge-with-reuse", area=A)
CHECK_FAILED = rule("MR502", E, "a check of the prepared head failed",
                    "inspect the failed check, fix, and re-run", area=A)
CHECK_TIMEOUT = rule("MR503", E, "checks did not finish before --timeout",
                     "re-run later (the command resumes) or raise --timeout", area=A)
BODY_LINT = rule("MR504", E, "the squash commit message contains a control token",
                 "ixtool refuses to merge a message that would skip ingest on main", area=A)
PUSH_REJECTED = rule("MR505", E, "pushing the prepared head was rejected",
                     "the PR branch moved; re-run ixtool merge-with-reuse", area=A)
MERGE_REFUSED = rule("MR506", E, "GitHub refused the squash merge",
                     "check branch protection and mergeability, then re-run", area=A)
