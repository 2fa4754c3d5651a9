"""Benchmark: ``ixtool review --base main`` on the real tree vs its own largest part.

The real InferenceX tree (``inferencex-tree-843c6254f.tar.xz``) is committed into a
temporary repository; a branch changes one real MTP recipe's pinned AL and appends its
changelog entry (as ``tests/review/test_real_tree.py``).  Measured as whole processes, best
of N, wall and CPU (children included):

* baseline: ``ixtool policy check --config-keys KEY`` — the policy check of the touched
  recipe, which the review runs anyway (the traces dominate);
* ``ixtool review --base main`` — everything: changelog gate and its fixes, config gate,
  matrix, policy check, launch renders, siblings.

Prints both and the ratio (the review's overhead on top of the check it cannot avoid).

    python benchmarks/review_real_tree.py [--repeat N] [--shared DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SHARED = Path(os.environ.get("IXTOOL_SHARED", ROOT.parent / "shared"))
SCRIPT = "benchmarks/single_node/agentic/qwen3.5_fp8_b300_sglang_mtp.sh"
KEY = "qwen3.5-fp8-b300-sglang-agentic-mtp"
ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
       "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@b"}
for k in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_EVENT_PATH", "GITHUB_STEP_SUMMARY"):
    ENV.pop(k, None)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True)


def make_tree(shared: Path, tmp: Path) -> Path:
    with tarfile.open(shared / "corpus" / "inferencex-tree-843c6254f.tar.xz") as tar:
        tar.extractall(tmp, filter="data")
    root = tmp / "inferencex"
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "tree")
    git(root, "checkout", "-q", "-b", "al-change")
    p = root / SCRIPT
    p.write_text(p.read_text().replace("SGLANG_SIMULATE_ACC_LEN=3.39",
                                       "SGLANG_SIMULATE_ACC_LEN=3.45"))
    with (root / "perf-changelog.yaml").open("a") as fh:
        fh.write(f"\n- config-keys:\n    - {KEY}\n  description:\n    - \"AL 3.45\"\n"
                 "  pr-link: TBD\n")
    git(root, "commit", "-q", "-am", "AL 3.45")
    return root


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, check=False)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    a = ap.parse_args()
    ix = [sys.executable, "-m", "inferencex_tools"]
    with tempfile.TemporaryDirectory(prefix="ixtool-review-bench-") as tmp:
        root = make_tree(a.shared, Path(tmp))
        base = [timed([*ix, "policy", "check", "--config-keys", KEY], root)
                for _ in range(a.repeat)]
        rev = [timed([*ix, "review", "--base", "main"], root) for _ in range(a.repeat)]
    bw, bc = min(w for w, _ in base), min(c for _, c in base)
    rw, rc = min(w for w, _ in rev), min(c for _, c in rev)
    print(f"policy check {KEY}: {bw:.2f} s wall, {bc:.2f} s CPU (best of {a.repeat})")
    print(f"review --base main:  {rw:.2f} s wall, {rc:.2f} s CPU (best of {a.repeat})")
    print(f"ratio review / policy check: {rw / bw:.2f}x wall, {rc / bc:.2f}x CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
