"""Build the shared test corpus (``../shared``) from a clone of the InferenceX repository.

The real-tree, history and parity tests (and the benchmarks) read the real InferenceX
repository from ``../shared`` (or ``$IXTOOL_SHARED``).  This script makes that directory
from a clone of https://github.com/SemiAnalysisAI/InferenceX, so anyone can run every
test:

    git clone https://github.com/SemiAnalysisAI/InferenceX ../InferenceX
    python scripts/make_shared.py --from ../InferenceX            # writes ../shared

What it writes (the layout ``tests/conftest.py`` reads; see the corpus README it writes):

* ``corpus/inferencex/`` — the data files at ``--commit`` (default 843c6254f):
  ``perf-changelog.yaml``, ``configs/{nvidia-master,amd-master,runners,ci-priority}.yaml``,
  ``golden_al_distribution/*.yaml``;
* ``corpus/inferencex-tree-<commit>.tar.xz`` — the repository tree at that commit as a
  maintainer adopting ixtool has it, under ``inferencex/``: ``benchmarks/``, ``runners/``,
  ``configs/``, ``golden_al_distribution/`` (without ``registry.yaml``),
  ``perf-changelog.yaml``, ``.github/``, ``AGENTS.md`` and three docs (the reference
  tooling in ``utils/`` left out);
* ``corpus/inferencex-history.bundle`` — branch ``main``: one commit per first-parent
  commit up to ``--commit`` that changed one of the data files, holding only those files,
  with the source commit's subject and author date and ``source-commit: <sha>`` in the
  body (author and committer ``corpus <data@example.invalid>``: the commit ids are the
  same on every machine);
* ``corpus/inferencex-full-history-<tip>.bundle`` — the whole history up to ``--full-tip``
  (default 9aeaa75d8, 2026-07-14) as branch ``main-upto-0715``;
* ``oracle/sweep/`` — only with ``--oracle-invocations TSV`` (a list of reference
  generator requests, ``name<TAB>rc<TAB>rows<TAB>argv`` as in ``invocations.tsv``): the
  reference ``utils/matrix_logic/generate_sweep_configs.py`` at ``--commit`` run on
  ``corpus/inferencex`` for each, its stdout as ``<name>.json.xz`` or its last error line
  as ``<name>.error`` (needs PyYAML and pydantic 2 in this interpreter).  Without it the
  parity tests skip.

Uses git and the standard library only.  Nothing is written into the clone (a temporary
bare repository borrows its objects).
"""

from __future__ import annotations

import argparse
import io
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

COMMIT = "843c6254f"
FULL_TIP = "9aeaa75d8"
FULL_BRANCH = "main-upto-0715"
CONFIGS = ("configs/nvidia-master.yaml", "configs/amd-master.yaml", "configs/runners.yaml",
           "configs/ci-priority.yaml")
CURVES = "golden_al_distribution"
# what the history bundle follows, and what the tree snapshot holds
HISTORY_PATHS = ("perf-changelog.yaml", *CONFIGS, CURVES)
TREE_PATHS = (".github", "AGENTS.md", "benchmarks", "configs", "docs/PR_REVIEW_CHECKLIST.md",
              "docs/ci-procedures.md", "docs/configuration-procedures.md", CURVES,
              "perf-changelog.yaml", "runners")
TREE_EXCLUDE = (f"{CURVES}/registry.yaml",)
CORPUS_IDENT = {"GIT_AUTHOR_NAME": "corpus", "GIT_AUTHOR_EMAIL": "data@example.invalid",
                "GIT_COMMITTER_NAME": "corpus", "GIT_COMMITTER_EMAIL": "data@example.invalid"}
GENERATOR = "utils/matrix_logic/generate_sweep_configs.py"


class Git:
    """git in one repository, immune to the user's configuration."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                    "LC_ALL": "C"}

    def __call__(self, *args: str, env: dict[str, str] | None = None,
                 data: bytes | None = None) -> bytes:
        p = subprocess.run(["git", "-C", str(self.repo), *args], input=data,
                           capture_output=True, env={**self.env, **(env or {})}, check=False)
        if p.returncode != 0:
            raise SystemExit(f"make_shared: git {' '.join(args[:3])} failed: "
                             f"{p.stderr.decode(errors='replace').strip()}")
        return p.stdout

    def text(self, *args: str, env: dict[str, str] | None = None,
             data: bytes | None = None) -> str:
        return self(*args, env=env, data=data).decode().strip()


def is_data(path: str) -> bool:
    """A file of the history bundle's trees."""
    return path == "perf-changelog.yaml" or path in CONFIGS or (
        path.startswith(CURVES + "/") and path.endswith(".yaml") and path.count("/") == 1)


def write_data_files(git: Git, commit: str, dest: Path) -> list[str]:
    files = [p for p in git.text("ls-tree", "-r", "--name-only", commit, "--",
                                 *HISTORY_PATHS).splitlines() if is_data(p)]
    for rel in files:
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(git("show", f"{commit}:{rel}"))
    return files


def write_tree(git: Git, commit: str, dest: Path) -> int:
    """The selected paths at ``commit`` under ``inferencex/``, as .tar.xz (a path the
    commit does not have is left out)."""
    there = [p for p in TREE_PATHS if git.text("ls-tree", "--name-only", commit, "--", p)]
    raw = git("archive", "--format=tar", "--prefix=inferencex/", commit, "--", *there,
              *(f":(exclude){p}" for p in TREE_EXCLUDE))
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        count = sum(1 for m in tar.getmembers() if m.isfile())
    dest.write_bytes(lzma.compress(raw, preset=9))
    return count


def _tree(git: Git, entries: dict[str, tuple[str, str]]) -> str:
    """A tree object for ``path → (mode, blob)``, nested directories included."""
    here: list[str] = []
    subdirs: dict[str, dict[str, tuple[str, str]]] = {}
    for path, (mode, blob) in entries.items():
        head, _, rest = path.partition("/")
        if rest:
            subdirs.setdefault(head, {})[rest] = (mode, blob)
        else:
            here.append(f"{mode} blob {blob}\t{head}")
    for name, sub in subdirs.items():
        here.append(f"040000 tree {_tree(git, sub)}\t{name}")
    return git.text("mktree", data=("\n".join(here) + "\n").encode())


def write_history(git: Git, commit: str, dest: Path) -> int:
    """The data files' first-parent history up to ``commit`` as a bundle (branch main)."""
    sources = git.text("log", "--first-parent", "--reverse", "--format=%H", commit, "--",
                       *HISTORY_PATHS).splitlines()
    parent: str | None = None
    for sha in sources:
        meta = git.text("log", "-1", "--format=%ad%n%s", "--date=raw", sha).split("\n", 1)
        entries = {}
        for line in git.text("ls-tree", "-r", sha, "--", *HISTORY_PATHS).splitlines():
            info, path = line.split("\t", 1)
            mode, _, blob = info.split()
            if is_data(path):
                entries[path] = (mode, blob)
        tree = _tree(git, entries)
        message = f"{meta[1]}\n\nsource-commit: {sha}\n"
        env = {**CORPUS_IDENT, "GIT_AUTHOR_DATE": meta[0], "GIT_COMMITTER_DATE": meta[0]}
        args = ["commit-tree", tree, *(["-p", parent] if parent else [])]
        parent = git.text(*args, data=message.encode(), env=env)
    if parent is None:
        raise SystemExit(f"make_shared: no commit up to {commit} touches the data files")
    git("update-ref", "refs/heads/main", parent)
    git("symbolic-ref", "HEAD", "refs/heads/main")  # a clone of the bundle checks main out
    git("bundle", "create", str(dest), "HEAD", "main")
    return len(sources)


def write_full_history(git: Git, tip: str, branch: str, dest: Path) -> int:
    git("update-ref", f"refs/heads/{branch}", tip)
    git("bundle", "create", str(dest), branch)
    return int(git.text("rev-list", "--count", tip))


def write_oracle(git: Git, commit: str, corpus: Path, invocations: Path, dest: Path) -> int:
    """Run the reference generator at ``commit`` for each listed request."""
    dest.mkdir(parents=True, exist_ok=True)
    rows = [ln.split("\t") for ln in invocations.read_text().splitlines()[1:] if ln.strip()]
    out_lines = ["name\trc\tentries\targv"]
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=io.BytesIO(git("archive", "--format=tar", commit, "utils"))
                          ) as tar:
            tar.extractall(tmp, filter="data")
        for name, _rc, _n, argv in rows:
            p = subprocess.run([sys.executable, str(Path(tmp) / GENERATOR), *argv.split(" ")],
                               cwd=corpus, capture_output=True, check=False)
            if p.returncode == 0:
                (dest / f"{name}.json.xz").write_bytes(lzma.compress(p.stdout))
                import json

                n = str(len(json.loads(p.stdout)))
            else:
                err = p.stderr.decode(errors="replace").strip().splitlines()
                (dest / f"{name}.error").write_text((err[-1] if err else "") + "\n")
                n = "0"
            out_lines.append(f"{name}\t{p.returncode}\t{n}\t{argv}")
    (dest / "invocations.tsv").write_text("\n".join(out_lines) + "\n")
    return len(rows)


README = """# Real-world corpus (built by ixtool's scripts/make_shared.py)

From a clone of SemiAnalysisAI/InferenceX (Apache-2.0): the data files and the tree at
commit {commit}, the data files' history up to it, the whole history up to {tip}
(branch {branch}).  See the docstring of scripts/make_shared.py for each file; the tests
read them as ../shared/corpus/... (or $IXTOOL_SHARED/corpus/...).
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="clone", type=Path, required=True,
                    help="a full clone of https://github.com/SemiAnalysisAI/InferenceX")
    ap.add_argument("--to", type=Path,
                    default=Path(__file__).resolve().parents[1].parent / "shared",
                    help="where to build (default: ../shared, a sibling of this checkout)")
    ap.add_argument("--commit", default=COMMIT, help="the tree and data files' commit")
    ap.add_argument("--full-tip", default=FULL_TIP, help="the whole-history bundle's tip")
    ap.add_argument("--full-branch", default=FULL_BRANCH)
    ap.add_argument("--oracle-invocations", type=Path, default=None,
                    help="reference generator requests (invocations.tsv) to run")
    ap.add_argument("--force", action="store_true", help="replace an existing corpus/")
    args = ap.parse_args(argv)

    source = Git(args.clone)
    commit = source.text("rev-parse", "--verify", f"{args.commit}^{{commit}}")
    tip = source.text("rev-parse", "--verify", f"{args.full_tip}^{{commit}}")
    corpus = args.to / "corpus"
    if corpus.exists():
        if not args.force:
            raise SystemExit(f"make_shared: {corpus} exists (--force replaces it)")
        shutil.rmtree(corpus)
    (corpus / "inferencex").mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work.git"  # borrows the clone's objects, writes none into it
        subprocess.run(["git", "clone", "-q", "--bare", "--shared", "--no-tags",
                        str(args.clone.resolve()), str(work)], check=True, env=source.env)
        git = Git(work)
        files = write_data_files(git, commit, corpus / "inferencex")
        n_tree = write_tree(git, commit, corpus / f"inferencex-tree-{commit[:9]}.tar.xz")
        n_hist = write_history(git, commit, corpus / "inferencex-history.bundle")
        n_full = write_full_history(git, tip, args.full_branch,
                                    corpus / f"inferencex-full-history-{tip[:9]}.bundle")
        (corpus / "README.md").write_text(README.format(commit=commit[:9], tip=tip[:9],
                                                        branch=args.full_branch))
        print(f"corpus/inferencex: {len(files)} data files at {commit[:9]}")
        print(f"corpus/inferencex-tree-{commit[:9]}.tar.xz: {n_tree} files")
        print(f"corpus/inferencex-history.bundle: {n_hist} commits (branch main)")
        print(f"corpus/inferencex-full-history-{tip[:9]}.bundle: {n_full} commits "
              f"(branch {args.full_branch})")
        if args.oracle_invocations is not None:
            n = write_oracle(git, commit, corpus / "inferencex", args.oracle_invocations,
                             args.to / "oracle" / "sweep")
            print(f"oracle/sweep: {n} reference runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
