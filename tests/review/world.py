"""A review world: this repository's seed recipe as a pull request against a base that
has only its non-MTP sibling; a bare ``origin``, the fake GitHub, the reviewer's clone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import GIT_ENV, ROOT, git
from tests.forge import PRN, SLUG, ForgeWorld, init_origin
from tests.merge.fake_github import PR

MTP_KEY = "minimaxm3-fp8-h200-vllm-agentic-mtp"
SIBLING_KEY = "minimaxm3-fp8-h200-vllm-agentic"
MTP_SCRIPT = "benchmarks/single_node/agentic/minimaxm3_fp8_h200_mtp.sh"
SIBLING_SCRIPT = "benchmarks/single_node/agentic/minimaxm3_fp8_h200.sh"
COMMON = ("configs/runners.yaml", "runners/launch_h200-dgxc-slurm.sh",
          ".github/workflows/sweep-shard.yml",  # the jobs' environment: `ixtool ci row`
          "benchmarks/benchmark_lib.sh", SIBLING_SCRIPT,
          "golden_al_distribution/registry.yaml", "golden_al_distribution/minimaxm3_eagle3.yaml",
          "golden_al_distribution/minimaxm3_eagle3_gqa.yaml")


def _entries(text: str) -> dict[str, str]:
    """This repository's changelog entries by their first config key."""
    out = {}
    for block in re.split(r"\n(?=- config-keys:)", text.strip("\n")):
        key = re.search(r"config-keys:\n\s+- (\S+)", block)
        assert key is not None
        out[key.group(1)] = block.strip("\n") + "\n"
    return out


def seed_files() -> tuple[dict[str, str], dict[str, str]]:
    """(base files, files the PR adds or changes) built from this repository's own."""
    base = {p: (ROOT / p).read_text() for p in COMMON}
    master = (ROOT / "configs/nvidia-master.yaml").read_text()
    cut = master.index(f"\n{MTP_KEY}:\n") + 1
    base["configs/nvidia-master.yaml"] = master[:cut]
    entries = _entries((ROOT / "perf-changelog.yaml").read_text())
    base["perf-changelog.yaml"] = entries[SIBLING_KEY]
    seed = re.sub(r"(?m)^  pr-link: .*$", "  pr-link: TBD", entries[MTP_KEY])
    pr = {"configs/nvidia-master.yaml": master[:cut] + master[cut:],
          MTP_SCRIPT: (ROOT / MTP_SCRIPT).read_text(),
          "perf-changelog.yaml": base["perf-changelog.yaml"] + "\n" + seed}
    return base, pr


@dataclass
class World(ForgeWorld):
    def write(self, files: dict[str, str]) -> None:
        for rel, text in files.items():
            p = self.seed / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            if rel.endswith(".sh"):
                p.chmod(0o755)

    def commit_push(self, branch: str, files: dict[str, str], message: str) -> str:
        self.write(files)
        git(self.seed, "add", "-A")
        git(self.seed, "commit", "-q", "-m", message)
        git(self.seed, "push", "-q", "origin", f"HEAD:refs/heads/{branch}")
        return git(self.seed, "rev-parse", "HEAD").strip()

    def checkout_pr(self) -> str:
        git(self.user, "fetch", "-q", "origin")
        git(self.user, "checkout", "-q", "-B", "feat", "origin/feat")
        return git(self.user, "rev-parse", "HEAD").strip()

    def review(self, *args: str, post: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**GIT_ENV, "GITHUB_TOKEN": self.fake.token, "GITHUB_API_URL": self.fake.url}
        for k in ("GH_TOKEN", "GITHUB_EVENT_PATH", "GITHUB_EVENT_NAME", "GITHUB_REPOSITORY",
                  "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
            env.pop(k, None)
        argv = [sys.executable, "-m", "inferencex_tools", "review", "--base", "origin/main",
                "--pr", str(PRN), "--repo", SLUG, *(["--post"] if post else []), *args]
        return subprocess.run(argv, cwd=self.user, env=env, capture_output=True, text=True,
                              timeout=300)


def make_world(tmp: Path, pr_files: dict[str, str] | None = None, *, body: str = "",
               labels: tuple[str, ...] = (), base_files: dict[str, str] | None = None
               ) -> World:
    base, pr = seed_files()
    base.update(base_files or {})
    if pr_files is not None:
        pr = {**pr, **pr_files}
    bare, seed = init_origin(tmp, GIT_ENV)
    w = World.serve(tmp, bare, seed, GIT_ENV)
    w.commit_push("main", base, "base: the non-MTP sibling")
    git(seed, "checkout", "-q", "-b", "feat")
    w.commit_push("feat", pr, "Add the MiniMax-M3 EAGLE3 (MTP) H200 vLLM agentic recipe")
    w.fake.add_pr(PR(PRN, "feat", "Add minimaxm3-fp8-h200-vllm-agentic-mtp", list(labels),
                     body=body))
    w.clone_user()
    w.checkout_pr()
    os.environ.pop("IXTOOL_TRACEBACK", None)
    return w
