"""Benchmark: ``sweep.recipes.learn`` on the real tree's launchers, this version against an
earlier one of ``inferencex_tools/sweep/recipes.py`` (issue 35: a pattern per variable
name cost the gate's configs stage 0.17 CPU-s, 40 % of it).

The gate calls ``learn`` once per process, so each round runs it in a fresh interpreter
(re's pattern cache empty) for both versions, in alternating order, and reads the CPU
time of the first call (cold) and of a second call in the same process (warm).  The
figure is the median of the per-round ratios.  The earlier version is the file at
``--baseline REV`` (default: the parent of the last commit that changed it); both are
loaded as standalone modules (the file imports only the standard library).

    python benchmarks/recipes_learn.py [--rounds N] [--baseline REV]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("IXTOOL_SHARED", ROOT.parent / "shared"))
TREE = SHARED / "corpus" / "inferencex-tree-843c6254f.tar.xz"
MODULE = "inferencex_tools/sweep/recipes.py"

CHILD = r"""
import importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location("recipes_under_test", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = mod  # dataclasses look their module up
spec.loader.exec_module(mod)
scripts = json.load(open(sys.argv[2]))
t0 = time.process_time(); a = mod.learn(scripts); t1 = time.process_time()
mod.learn(scripts); t2 = time.process_time()
print(json.dumps({"cold": t1 - t0, "warm": t2 - t1, "folders": len(a.folders),
                  "overlays": len(a.overlays), "clones": sum(map(len, a.clones.values()))}))
"""


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout


def _default_baseline() -> str:
    """HEAD's file when the checkout changes it, else the file before its last commit."""
    if subprocess.run(["git", "diff", "--quiet", "HEAD", "--", MODULE], cwd=ROOT).returncode:
        return "HEAD"
    return _git("log", "-1", "--format=%H", "--", MODULE).strip() + "^"


def scripts_of_tree(tmp: Path) -> dict[str, str]:
    sys.path.insert(0, str(ROOT))
    from inferencex_tools.sweep.recipes import is_launch_script

    with tarfile.open(TREE) as tar:
        tar.extractall(tmp, filter="data")
    root = tmp / "inferencex"
    return {str(p.relative_to(root)): p.read_text(errors="replace")
            for p in sorted(root.rglob("*.sh")) if is_launch_script(str(p.relative_to(root)))}


def once(module: Path, scripts: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(module), str(scripts)],
                         check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--baseline", help="git revision of the earlier recipes.py")
    args = ap.parse_args()
    rev = args.baseline or _default_baseline()
    with tempfile.TemporaryDirectory(prefix="ixtool-bench-learn-") as tmp_:
        tmp = Path(tmp_)
        scripts = tmp / "scripts.json"
        tree = scripts_of_tree(tmp)
        n_scripts = len(tree)
        scripts.write_text(json.dumps(tree))
        old = tmp / "recipes_old.py"
        old.write_text(_git("show", f"{rev}:{MODULE}"))
        new = ROOT / MODULE
        rows: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
        for r in range(args.rounds):
            for name in (("old", "new") if r % 2 else ("new", "old")):
                rows[name].append(once(old if name == "old" else new, scripts))
    same = {k: v for k, v in rows["old"][0].items() if k not in ("cold", "warm")} == \
        {k: v for k, v in rows["new"][0].items() if k not in ("cold", "warm")}
    print(f"learn on the real tree's {n_scripts} launch scripts, {args.rounds} rounds; "
          f"baseline {rev}; load {os.getloadavg()[0]:.1f}; same counts: {same}")
    for phase in ("cold", "warm"):
        o = statistics.median(x[phase] for x in rows["old"])
        n = statistics.median(x[phase] for x in rows["new"])
        ratio = statistics.median(b[phase] / a[phase]
                                  for a, b in zip(rows["old"], rows["new"], strict=True))
        print(f"{phase:5} old {o * 1000:7.1f} ms  new {n * 1000:7.1f} ms  "
              f"new/old {ratio:.2f}× (paired median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
