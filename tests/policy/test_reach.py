"""What a launch can read (``policy/reach.py``): names from the syntax tree, globs, the
words reading commands get, Python imports, symbolic links (the static half of the
``--base`` selection)."""

from __future__ import annotations

import pytest

from inferencex_tools import shellsyntax
from inferencex_tools.policy.effective import Analyzer
from inferencex_tools.policy.reach import python_reads, shell_reads, suffix_match, tail


@pytest.mark.parametrize(("pattern", "expected"), [
    ("\x00.al", "*.al"),  # "${0%.sh}.al" without $0
    ("\x00/al.txt", "al.txt"),
    ("/github/workspace/data/tuned.yaml", "github/workspace/data/tuned.yaml"),
    ("\x00/conf.d/*.env", "conf.d/*.env"),
    ("\x00/../../benchmark_lib.sh", "benchmark_lib.sh"),
    ("\x00", None),  # a word computed whole: anything
    ("a/\x00", None),
    ("..", None),
    ("", ""),  # the empty word names no file
])
def test_the_tail_a_path_is_sure_to_have(pattern: str, expected: str | None) -> None:
    assert tail(pattern) == expected


@pytest.mark.parametrize(("name", "path", "hit"), [
    ("al.txt", "benchmarks/x/al.txt", True),
    ("*.al", "benchmarks/x/recipe.al", True),
    ("conf.d/*.env", "benchmarks/x/conf.d/al.env", True),
    ("conf.d/*.env", "benchmarks/x/other/al.env", False),
    ("recipes/vllm/kimi-k3/agentic", "benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k3/"
     "agentic/a.yaml", False),  # a directory copied, not every directory of its name
    ("srt-slurm-recipes/vllm/kimi-k3/agentic",
     "benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k3/agentic/a.yaml", True),
    ("github/workspace/benchmarks/x.sh", "benchmarks/x.sh", True),
])
def test_a_name_matches_a_path_by_its_end_or_a_directory_above(name: str, path: str,
                                                                hit: bool) -> None:
    assert suffix_match(name, path) is hit


def test_python_reads_its_imports_and_string_constants() -> None:
    r = python_reads("import sys\nfrom al_values import VALUE\nopen(name + '.al')\n"
                     "open('data/x.json')\n")
    assert {"al_values.py", "*.al", "x.json"} <= r.names and r.unbounded is None
    assert python_reads("import importlib\nimportlib.import_module(name)\n").unbounded


@pytest.mark.parametrize(("text", "name"), [
    ('open("a" + "l.dat")', "al.dat"),
    ('n = "al"\ne = "dat"\nopen(f"{here}/{n}.{e}")', "al.dat"),  # names bound to constants
    ('import os\nn = "al"\nos.path.join(here, "vals", n + ".dat")', "al.dat"),
    ('from pathlib import Path\nPath(here) / "vals" / ("a" + "l.x")', "al.x"),
    ("for n in names:\n    open(n + '.q')\nn = 'z'", "*.q"),  # n is not only 'z'
    ('open(here + "/" + ("a" if x else "b") + "_al.txt")', "*_al.txt"),
    ("f = stem + '_al.txt'", "*_al.txt"),
    ("f = 'al'\nf += '_v2.txt'", "*_v2.txt"),
    ('open(f"{here}/{model}_al.txt")', "*_al.txt"),
    ("open('%s_al.txt' % model)", "*_al.txt"),
    ("open('{}/al_{}.yaml'.format(d, m))", "*.yaml"),
])
def test_python_reads_a_name_built_at_run_time_by_its_sure_end(text: str, name: str) -> None:
    """A string Python builds is evaluated with the names bound only to string constants,
    and a part still unknown leaves the text after it as the sure end of the name
    (held-out variants: a helper opened ``'a' + 'l.dat'``, ``f"{here}/{n}.{e}"``, names
    no constant spells, and a PR that changed only that file passed the gate)."""
    r = python_reads(text)
    assert name in r.names and r.unbounded is None, r.names
    words = python_reads('print(f"error: {e}")\nprint(f"{t:.1f}s", n + "ms")').names
    assert not {"*s", "*ms"} & words, words  # text after a value that names no file


@pytest.mark.parametrize(("path", "hit"), [
    ("benchmarks/x/al/v", True), ("al/v", True), ("benchmarks/x/al/sub/v", False),
    ("benchmarks/x/v", False), (".github/workflows/t.yml", False), ("v", False)])
def test_a_glob_alone_ends_a_name_under_its_directory(path: str, hit: bool) -> None:
    """``cat "$D"/al/*`` reads the files of a directory ``al`` (a held-out variant read a
    value through it while the gate traced nothing), and only those: a path shorter than
    the name (a workspace prefix) does not match ``*`` alone (``/mnt/*`` in a launcher
    named every file of the tree)."""
    from inferencex_tools.policy.reach import FILE

    name = tail(shellsyntax.UNKNOWN + "/al/*")
    assert name == "al/*"
    assert suffix_match(FILE + name, path) is hit


FILES = {
    "run.sh": 'SYNTHETIC=$(cat "${0%.sh}.al")\nfor f in "$(dirname "$0")"/conf.d/*.env; do\n'
              '  source "$f"\ndone\nX=$(python3 "$(dirname "$0")/helper.py")\n'
              'Y=$(envsubst < "$(dirname "$0")/al-template")\nZ=$(cat "$(dirname "$0")/al.txt")\n',
    "run.al": "2.78\n",
    "conf.d/a.env": "A=1\n",
    "helper.py": "from al_values import VALUE\nprint(VALUE)\n",
    "al_values.py": "VALUE = 1\n",
    "al-template": "$AL\n",
    "al.txt": "@link data/value",
    "data/value": "2.78\n",
    "unrelated.txt": "x\n",
}


def _analyzer() -> Analyzer:
    by_name: dict[str, list[str]] = {}
    for f in FILES:
        by_name.setdefault(f.rsplit("/", 1)[-1], []).append(f)

    def link(path: str) -> str | None:
        t = FILES.get(path, "")
        return "../" * path.count("/") + t[6:] if t.startswith("@link ") else None

    return Analyzer(FILES.get, by_name, link=link)


def test_a_launch_reaches_what_it_reads_however_it_names_it() -> None:
    """The two-step reads of issue 32: a computed data-file name, a glob-sourced env
    file, a Python module a helper imports, an envsubst template, a symlinked data
    file (its target) — and not a file it never reads."""
    an = _analyzer()
    runs = an.reachable_files("run.sh", {})
    assert runs is not None
    assert {"run.al", "conf.d/a.env", "helper.py", "al_values.py", "al-template", "al.txt",
            "data/value"} <= runs
    assert "unrelated.txt" not in runs


@pytest.mark.parametrize(("text", "reads", "not_reads"), [
    # a copy's destination is written: not a name; a source without -r is a file
    ('cp "$W/srt/configs/$S" "configs/$S"', {"\x01/srt/configs"}, {"configs"}),
    ('cp -rT "$W/srt/recipes" recipes/x', {"srt/recipes"}, {"recipes/x"}),
    ("cp -t out a.yaml b.yaml", {"\x01/a.yaml", "\x01/b.yaml"}, set()),
    ("rsync -av src/ dst/", {"src"}, {"dst"}),
    ('cat "$W/configs"', {"\x01/configs"}, set()),
    ("grep -r x data", {"data"}, set()),
    ("ls configs", {"configs"}, set()),
])
def test_a_command_reads_a_directory_only_when_it_can(text: str, reads: set[str],
                                                      not_reads: set[str]) -> None:
    from inferencex_tools.policy.reach import shell_reads

    names = shell_reads(f"S=\nW=/w\n{text}\n", {"S": ("",)}, frozenset()).names
    assert reads <= names and not (not_reads & names), names


@pytest.mark.parametrize(("name", "path", "hit"), [
    ("\x01/srt/configs", "configs/amd-master.yaml", False),  # cp dir fails: no file
    ("srt/configs", "configs/amd-master.yaml", True),  # a listing of a mounted workspace
    ("\x01/github/workspace/configs/a.yaml", "configs/a.yaml", True),
    ("\x01/configs", "configs", True),
])
def test_a_file_name_matches_no_directory_above(name: str, path: str, hit: bool) -> None:
    assert suffix_match(name, path) is hit


# ------------------------------------------------------ work shared between the jobs


def test_a_word_is_read_with_its_own_values_and_shared_across_the_others() -> None:
    """A reading word is evaluated once per values of the variables it holds: jobs that
    differ in another variable share it; a job that differs in its own reads its own
    file (a cache keyed too coarsely would hand the second job the first one's)."""
    from inferencex_tools.policy.reach import _steps, shell_reads

    text = 'source "cfg/${MODEL}.env"\npython3 serve.py --conc "$CONC"\n'
    a = shell_reads(text, {"MODEL": ("dsr1",), "CONC": ("4",)}, frozenset()).names
    b = shell_reads(text, {"MODEL": ("dsr1",), "CONC": ("64",)}, frozenset()).names
    c = shell_reads(text, {"MODEL": ("glm5",), "CONC": ("4",)}, frozenset()).names
    assert "\x01/cfg/dsr1.env" in a and "\x01/cfg/dsr1.env" in b
    assert "\x01/cfg/glm5.env" in c and "\x01/cfg/dsr1.env" not in c
    assert "4" in a and "64" in b and "64" not in a  # python3's operands are read
    _syntax, steps = _steps(text, frozenset())
    source = next(s for s in steps if getattr(s, "names", None) == ("MODEL",))
    assert len(source.seen) == 2  # dsr1 and glm5: the CONC values did not count


@pytest.mark.parametrize(("text", "env", "exact", "expected"), [
    # built from a variable the job sets, through a copy
    ('A="$M"\nB="cfg/${A}_x"\n', {"M": "dsr1"}, False, {"A": ("dsr1",), "B": ("cfg/dsr1_x",)}),
    # every branch counts, and the job's own value of a variable the text assigns
    ('if [ -n "$Z" ]; then K=a; else K=b; fi\n', {"K": "c"}, False, {"K": ("a", "b", "c")}),
    # a variable nothing sets: missing, or empty when the environment is all there is
    ('B="x${N}"\n', {}, False, {"B": None, "N": None}),
    ('B="x${N}"\n', {}, True, {"B": ("x",), "N": ("",)}),
    # built from a command's output or from itself: not known
    ('C=$(date)\nD="${D}/x"\n', {}, False, {"C": None, "D": None}),
])
def test_a_variable_is_known_when_asked_as_the_whole_text_knows_it(
        text: str, env: dict[str, str], exact: bool,
        expected: dict[str, tuple[str, ...] | None]) -> None:
    from inferencex_tools.policy.effective import _known

    known = _known([text], env, exact)
    assert {v: known.get(v) for v in expected} == expected
    assert all((v in known) is (val is not None) for v, val in expected.items())


def test_jobs_that_read_the_same_names_share_the_reachable_files() -> None:
    """reachable_files is computed once per entry and read names: a second job that
    differs only in a variable no read names gets the same answer, one that changes a
    read name gets its own."""
    an = _analyzer()
    one = an.reachable_files("run.sh", {"CONC": "4"})
    two = an.reachable_files("run.sh", {"CONC": "64"})
    assert one is two and one is not None
    assert len(an._reachable) == 1



def test_python_imports_are_read_by_module_path() -> None:
    """An import names the module's path (under any ``sys.path`` entry), never every
    file of its last component's name: ``import huggingface_hub.constants`` does not
    read a repository's ``utils/constants.py``; ``import constants`` (a helper beside
    it) does, and so do a package's ``__init__.py``, ``from p import m``'s module and a
    module ``import_module`` / ``__import__`` name as a constant."""
    r = python_reads("import huggingface_hub.constants\nfrom pkg import mod\n"
                     "import importlib\nimportlib.import_module('plug.alvalue')\n"
                     "__import__('other')\n")
    paths = ["utils/constants.py", "site/huggingface_hub/constants.py", "b/pkg/mod.py",
             "b/mod.py", "b/pkg/__init__.py", "b/other/__init__.py", "b/plug/alvalue.py",
             "b/alvalue.py", "x/other.py"]
    by_name: dict[str, list[str]] = {}
    for f in paths:
        by_name.setdefault(f.rsplit("/", 1)[-1], []).append(f)
    an = Analyzer(dict.fromkeys(paths, "").get, by_name)
    assert an.matching(r.names) == {
        "site/huggingface_hub/constants.py", "b/pkg/mod.py", "b/pkg/__init__.py",
        "b/other/__init__.py", "b/plug/alvalue.py", "x/other.py"}
    assert r.unbounded is None
    assert "constants.py" in python_reads("import constants\n").names
    # a relative import does not say which package: every __init__.py may run
    assert "__init__.py" in python_reads("from . import sibling\n").names


def test_python_dash_m_reads_the_module_by_path() -> None:
    r = shell_reads("python3 -m tools.alhelp --x 1\n", {}, frozenset())
    assert {"tools/alhelp.py", "tools/__init__.py", "tools/alhelp/__main__.py"} <= r.names
    assert shell_reads('python3 -m "$MOD"\n', {}, frozenset()).unbounded


def test_a_benchmark_client_is_a_leaf() -> None:
    """The trace records a benchmark client (``sandbox.CLIENT_SCRIPTS``) instead of
    running it, so what the client would import or write is no launch's read: a change
    there reaches nothing (the repository's copy of vLLM's client names every
    ``*.json`` in an f-string)."""
    files = {
        "run.sh": "python3 utils/bench_serving/benchmark_serving.py --model m\n"
                  "python3 utils/helper.py\n",
        "utils/bench_serving/benchmark_serving.py":
            "import backend_request_func\nname = f'{x}.json'\n",
        "utils/bench_serving/backend_request_func.py": "X = 1\n",
        "utils/helper.py": "import al_values\n",
        "utils/al_values.py": "AL = 1\n",
        "experimental/configs/sweep.json": "{}\n",
    }
    by_name: dict[str, list[str]] = {}
    for f in files:
        by_name.setdefault(f.rsplit("/", 1)[-1], []).append(f)
    got = Analyzer(files.get, by_name).reachable_files("run.sh", {})
    assert got is not None
    assert "utils/al_values.py" in got  # a helper that runs is followed
    assert not {"utils/bench_serving/backend_request_func.py",
                "experimental/configs/sweep.json"} & got, got
    # a client whose code differs from the base's (itself or what it imports: PR mode)
    # runs in the trace: its closure is followed like any script's
    for edited in ("utils/bench_serving/backend_request_func.py",
                   "utils/bench_serving/benchmark_serving.py"):
        runs = Analyzer(files.get, by_name, changed={edited}).reachable_files("run.sh", {})
        assert runs is not None and "utils/bench_serving/backend_request_func.py" in runs
    # data it names is no code: a changed JSON leaves it a leaf
    runs = Analyzer(files.get, by_name, changed={"experimental/configs/sweep.json"}
                    ).reachable_files("run.sh", {})
    assert runs is not None and "experimental/configs/sweep.json" not in runs, runs
    # a file of a client's name that is not Python (bash runs it by path) is no client
    files["utils/bench_serving/benchmark_serving.py"] = "source al.env\n"
    files["utils/bench_serving/al.env"] = "AL=3\n"
    by_name.setdefault("al.env", []).append("utils/bench_serving/al.env")
    again = Analyzer(files.get, by_name).reachable_files("run.sh", {})
    assert again is None or "utils/bench_serving/al.env" in again, again
