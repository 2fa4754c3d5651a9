"""The values a review is made of (pure data; :mod:`.render` turns them into Markdown/JSON)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from inferencex_tools.report.findings import Finding, Result
from inferencex_tools.report.inert import fence

REVIEW_MARKER = "<!-- ixtool-review sha={sha} -->"
SUMMARY_MARKER = "<!-- ixtool-review-summary -->"
CHECKLIST_PHRASE = "As a PR reviewer and CODEOWNER, I have reviewed this and have"


@dataclass
class LineComment:
    """One review comment on the head side of the diff; with ``suggestion`` GitHub shows
    a one-click fix replacing lines ``start_line``..``line`` by it."""

    path: str
    line: int
    body: str
    start_line: int | None = None
    suggestion: str | None = None
    rules: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        out = self.body
        if self.suggestion is not None:
            out += "\n\n" + fence(self.suggestion, "suggestion")
        return out

    def api(self) -> dict[str, Any]:
        """The comment in the shape of GitHub's create-review ``comments`` items."""
        d: dict[str, Any] = {"path": self.path, "line": self.line, "side": "RIGHT",
                             "body": self.markdown()}
        if self.start_line is not None and self.start_line < self.line:
            d["start_line"] = self.start_line
            d["start_side"] = "RIGHT"
        return d

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "start_line": self.start_line,
                "rules": self.rules, "body": self.body, "suggestion": self.suggestion}


@dataclass
class GoldenRow:
    """One line of the golden-AL table of a spec-decoding recipe."""

    key: str
    mode: str  # throughput | eval
    arms: list[str]
    rows: int  # verdict rows of the policy check
    engine: str
    method: str | None
    draft: str | None
    k: int | None
    thinking: str | None
    curve: str | None
    golden: float | None  # in the engine's unit
    setting: str | None  # the knob the golden value goes into
    golden_al: float | None  # the AL itself (bonus token included)
    seen: str | None  # the knob as the trace saw it (None: real verification)
    verdict: str
    by_mode: dict[str, float] = field(default_factory=dict)  # mode undetermined: each one
    # the jobs of these arms in the matrix at a glance and their arms (None: no matrix)
    jobs: int | None = None
    job_arms: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DeltaItem:
    kind: str  # arg | env
    name: str
    ours: str | None
    theirs: str | None
    category: str  # spec | memory | capture | seqs | other

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ShapeDelta:
    """The serve-shape difference between a recipe and one sibling (one arm)."""

    key: str
    sibling: str
    sibling_spec: bool
    arm: str
    ours_script: str | None
    theirs_script: str | None
    items: list[DeltaItem] = field(default_factory=list)

    @property
    def unexpected(self) -> list[DeltaItem]:
        return [i for i in self.items if i.category == "other"]

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "sibling": self.sibling, "sibling-spec": self.sibling_spec,
                "arm": self.arm, "script": self.ours_script,
                "sibling-script": self.theirs_script,
                "items": [i.to_dict() for i in self.items]}


@dataclass
class ArmLine:
    key: str
    arm: str
    mode: str  # throughput | eval
    concs: list[int]
    jobs: int
    gpus: int | None
    gpu_hours: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LabelAdvice:
    labels: list[str]
    primary: list[str]
    advice: str
    checklist_present: bool | None  # None: PR body unknown (no --pr)
    checklist_where: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Review:
    repo: str
    pr: int | None
    pr_url: str | None
    base: str
    merge_base: str
    head_sha: str
    verdict: str  # pass | fail
    stages: dict[str, str] = field(default_factory=dict)
    comments: list[LineComment] = field(default_factory=list)
    other_findings: list[Finding] = field(default_factory=list)  # not on a diff line
    findings: list[Finding] = field(default_factory=list)  # everything, for the JSON/exit
    golden: list[GoldenRow] = field(default_factory=list)
    deltas: list[ShapeDelta] = field(default_factory=list)
    arms: list[ArmLine] = field(default_factory=list)
    matrix_error: str | None = None
    labels: LabelAdvice | None = None
    touched: list[str] = field(default_factory=list)
    seconds: float = 0.0
    gate: Result | None = None  # the gate's result for this pair, as the repository adopts it
    preexisting: list[Finding] = field(default_factory=list)  # the base has them too
    al_audit: str | None = None  # the measured-AL section of a finished sweep

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo, "pr": self.pr, "pr-url": self.pr_url, "base": self.base,
            "merge-base": self.merge_base, "head-sha": self.head_sha,
            "verdict": self.verdict, "stages": self.stages, "touched-keys": self.touched,
            "comments": [c.to_dict() for c in self.comments],
            "other-findings": [f.to_dict() for f in self.other_findings],
            "findings": [f.to_dict() for f in self.findings],
            "golden-al": [g.to_dict() for g in self.golden],
            "serve-shape": [d.to_dict() for d in self.deltas],
            "matrix": [a.to_dict() for a in self.arms], "matrix-error": self.matrix_error,
            "al-audit": self.al_audit,
            "labels": self.labels.to_dict() if self.labels else None,
            "gate": None if self.gate is None else {
                "exit-code": self.gate.exit_code(),
                "stages": self.gate.info.get("stages", {}),
                "findings": [f.to_dict() for f in self.gate.sorted()]},
            "preexisting-findings": [f.to_dict() for f in self.preexisting],
        }
