"""``--base`` traces a row when a change edits a library function the row can call without
spelling its name.

The shell-delta selection skips a row when a change edits only function bodies that the
text its launcher and script can run never names.  Two steps defeated it: a reviewed
recipe calls a library function through a name built at run time (its AL is 2.83,
golden); later a PR edits only that function's body to force 3.60.  No text the row runs
names the function, so ``--base`` traced nothing and the gate passed (``gate=pass``)
while the full check said PO403.  Such text now counts as reaching every function
(``policy/shellcalls.py``), and so does a pure ``"$X"`` command word whose value an
assignment builds (``X="${p}_al"``, ``read X``, ``for X in``…); one holding only literals
or the job's environment, and ordinary text, do not.
The PR adds no changelog entry (one naming the key would trace its rows anyway).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools.policy.effective import Analyzer
from tests.ci.test_gate_trust import _gate
from tests.conftest import ROOT
from tests.policy.test_check import SEED
from tests.security.test_selection_reads import _two_steps

LIB = "benchmarks/benchmark_lib.sh"
LIB_TEXT = (ROOT / LIB).read_text()
RECIPE = (ROOT / SEED).read_text()
FN = "golden_al() {\n    echo 2.83\n}\n"

# name → how the reviewed recipe sets its AL from the library's golden_al (never spelt
# whole); the PR then edits only golden_al's body to print 3.60
CALLS = {
    "a joined expansion": 'p=golden; GOLDEN_AL=$("${p}_al")',
    "two expansions": "a=golden_; b=al; GOLDEN_AL=$($a$b)",
    "eval": 'p=golden; eval "GOLDEN_AL=\\$(${p}_al)"',
    "an indirect expansion": 'AL_FN=golden; AL_FN+=_al; k=AL_FN; GOLDEN_AL=$("${!k}")',
    "the compgen function table":
        "GOLDEN_AL=$(for f in $(compgen -A function); do\n"
        '    if [[ $f == golden?al ]]; then "$f"; fi\ndone)',
    "the declare -F table":
        'while read -r _ _ f; do [[ $f == golden?al ]] && GOLDEN_AL=$("$f"); '
        "done < <(declare -F)",
    "a command substitution as the command": "GOLDEN_AL=$($(printf '%s_al' golden))",
    "quotes inside the name": "GOLDEN_AL=$(golden''_al)",
    "a brace expansion": "GOLDEN_AL=$(golden_a{l,})",
    "a bash -c string": 'p=golden; GOLDEN_AL=$(bash -c "source \\"$(dirname "$0")/../../'
                        'benchmark_lib.sh\\"; ${p}_al")',
    # a pure "$X" command word whose value the reached text builds elsewhere
    "a variable built from an expansion": 'p=golden; X="${p}_al"; GOLDEN_AL=$("$X")',
    "a variable from a command substitution":
        "X=$(printf '%s_al' golden); GOLDEN_AL=$(\"$X\")",
    "an appended variable": 'X=golden; X+=_al; GOLDEN_AL=$("$X")',
    "a variable read": 'read -r X <<< "golden""_al"; GOLDEN_AL=$("$X")',
    "a for variable": 'for X in "golden""_al"; do GOLDEN_AL=$("$X"); done',
    "printf -v": "printf -v X '%s_al' golden; GOLDEN_AL=$(\"$X\")",
    "mapfile": "mapfile -t X < <(printf '%s_al\\n' golden); GOLDEN_AL=$(\"${X[@]}\")",
    "declare with an expansion": 'p=golden; declare X="${p}_al"; GOLDEN_AL=$("$X")',
    "export with an expansion": 'p=golden; export X="${p}_al"; GOLDEN_AL=$("$X")',
    "an array whose first element is built":
        'p=golden; X=("${p}_al" --x); GOLDEN_AL=$("${X[@]}")',
    "a chain of copies to a built value":
        'p=golden; Z="${p}_al"; Y=$Z; X="$Y"; GOLDEN_AL=$("${X:-true}")',
    "the last argument": 'p=golden; : "${p}_al"; GOLDEN_AL=$("$_")',
    # not dynamic: the name is spelt whole, with the hyphen a function name may have
    "a hyphenated name": "GOLDEN_AL=$(golden-al)",
}


def _reviewed(call: str) -> dict[str, str]:
    fn = FN.replace("golden_al", "golden-al") if "golden-al" in call else FN
    return {LIB: LIB_TEXT + "\n" + fn, SEED: RECIPE.replace("GOLDEN_AL=2.83", call)}


def _pr(reviewed: dict[str, str]) -> dict[str, str]:
    return {LIB: reviewed[LIB].replace("    echo 2.83\n}", "    echo 3.60\n}")}


@pytest.mark.parametrize("case", list(CALLS))
def test_a_function_called_by_a_built_name_selects_its_rows(tmp_path: Path, corpus: Path,
                                                           case: str) -> None:
    reviewed = _reviewed(CALLS[case])
    path = tmp_path / "repo"
    main, head = _two_steps(path, corpus, reviewed, _pr(reviewed), entry=False)
    rc, outputs, doc = _gate(path, "base", main, head)
    assert rc == 1 and outputs["gate"] == "fail", doc["findings"]
    assert [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == ["PO403"]


@pytest.mark.parametrize("call", [
    'AL_CMD=echo; GOLDEN_AL=$("$AL_CMD" 2.83)',  # a pure "$VAR" command word
    "GOLDEN_AL=2.83",  # the recipe as reviewed
])
def test_a_function_no_row_calls_traces_nothing(tmp_path: Path, corpus: Path,
                                                call: str) -> None:
    """The selection stays: the same library edit, golden_al called by no row."""
    reviewed = _reviewed(call)
    path = tmp_path / "repo"
    main, head = _two_steps(path, corpus, reviewed, _pr(reviewed), entry=False)
    rc, outputs, doc = _gate(path, "base", main, head)
    assert rc == 0 and outputs["gate"] == "pass", doc["findings"]
    assert not doc["findings"] or all(f["severity"] != "error" for f in doc["findings"])


# the same question asked of the analyzer, for forms a gate run does not need to cover:
# text → does it reach every function (None) rather than the names it spells
TEXTS = {
    'trap "${p}_al" EXIT': True,
    'echo "${p}_al" | bash': True,
    'bash <<< "${p}_al"': True,
    'source <(echo "${p}_al")': True,
    "bash <<EOF\n${p}_al\nEOF": True,
    "cat <<EOF\n$(${p}_al)\nEOF": True,
    "X=( $(${p}_al) )": True,
    'X=(a)\n"${p}_al"': True,
    '((n++)); "${p}_al"': True,
    "echo $(( $(${p}_al) + 1 ))": True,
    'command "${p}_al"': True,
    'timeout -s KILL 10 "${p}_al"': True,
    "$'\\x67olden_al'": True,
    "golden_a?": True,
    "shopt -s expand_aliases; alias go=golden_al; go": True,
    "declare -fx golden_al; bash -c go": True,
    "mapfile -t -C golden_al -c 1 x < f": True,
    # ordinary text: selective
    'trap \'kill "$PID"\' EXIT': False,
    "cat <<'EOF'\n$(${p}_al)\nEOF": False,
    'if [[ "${X:-0}" == "1" ||\n      "$Y" == y ]]; then "${CMD[@]}" "$@"; fi': False,
    'case $K in\n  none) ;;\n  "$A"|b*) echo x ;;\n  *) exit 1 ;;\nesac': False,
    'X=(\n  --cfg "{\\"a\\":\\"$Y\\"}"\n)\n"${X[@]}" > "$LOG" 2>&1 &': False,
    '"$DIR/${NAME}.sh" --x; $(dirname "$0")/run.sh; ${PYTHON:-python3} -m x': False,
    "for ((i=0; i<n; i++)); do (( EP > 1 )) && echo; done": False,
    'x=1 && echo "${x}_al is an argument"': False,
    # a pure "$X" command word: dynamic when an assignment to X (or a copy's source)
    # can build a name; selective when X only ever holds literals or the environment
    'local X="${p}_al"\n"$X"': True,
    'X=$Y; Y=$X; Y=$(f)\n"$X"': True,
    ': "${X:=${p}_al}"\n"$X"': True,
    "X=golden''_al\n\"$X\"": True,
    "declare -n X=Y; Y=\"${p}_al\"\n\"$X\"": True,
    'n=X; declare "$n=${p}_al"\n"$X"': True,
    'getopts a: o; "$OPTARG"': True,
    '[[ $s =~ (.*) ]] && "${BASH_REMATCH[1]}"': True,
    'readarray -t X < f; "${X[0]}"': True,
    'X=(a); X[0]="${p}_al"; "${X[@]}"': True,
    'X=(); X+=("${p}_al"); "${X[@]}"': True,
    'select X in a b; do "$REPLY"; done': True,
    'for f in *.yaml; do $f; done': True,
    'for f in *.yaml; do "$f"; done': False,
    # run unquoted, the command is the first field: $DIR's own (a job's value: spelt), or
    # with no blank in it, a path
    'X="$DIR/x.sh"\n$X': False,
    'X="$DIR$NAME"\n$X': True,  # two values joined
    'X="${p}_al --flag"\n$X': True,  # a value joined to name characters
    'X="$CLI profile --x"\nX+=" --url $URL"\nX+=" $EXTRA"\n$X': False,
    'X+="$EXTRA"\n$X': True,  # appended without a blank: joins the old value's last name
    'X=" ${p}_al"\n$X': True,
    'V="${V:-${ROOT}/venv}"\nX="$V/bin/tool run"\n$X': False,
    'V="${V:-$a$b}"\nX="$V run"\n$X': True,
    'IFS=, read -r -a U <<< "$URLS"\nfor u in "${U[@]}"; do X+=" $u"; done\n$X': False,
    'IFS=o read -r -a U <<< "$URLS"\n"${U[@]}"': True,  # splits inside names
    'read -r -a U <<< "$A$B"\n"${U[@]}"': True,
    # a child shell fed a download runs what the download holds: only exported functions
    'curl -LsSf https://example.com/install.sh | sh': False,
    'export -f golden_al\ncurl -LsSf https://example.com/install.sh | sh': True,
    'cat install.sh | sh': True,
    'X=(a "${p}_al"); "${X[1]}"': True,
    'X=("${Y[@]}"); Y=(a "${p}_al"); "${X[1]}"': True,
    'command() { :; }; X=$(command -v python3); "$X"': True,
    'X=(a "${p}_al"); "${X[@]}"': False,
    'X=("${Y[@]}"); Y=(a "${p}_al"); "${X[@]}"': False,
    'X=$(command -v python3); Y=("$X" -m x); "${Y[@]}"': False,
    'X=vllm; "$X" serve': False,
    '"$SERVER_BIN" --port 8000': False,
    'X=$Y; Y=$X\n"$X"': False,
    'X=(vllm serve "$MODEL" --tp=$TP "${ARGS[@]}"); X+=(--x); "${X[@]}"': False,
    'X="$DIR/${NAME}.sh"; Y=$(dirname "$0")/run.sh\n"$X"; "$Y"': False,
    'X="${p}_al"; echo "$X"; "$Y"': False,
}


@pytest.mark.parametrize("text", list(TEXTS))
def test_text_that_calls_a_built_name_reaches_every_function(text: str) -> None:
    files = {"run.sh": f'source lib.sh\n{text}\n', "lib.sh": FN + "other() {\n    :\n}\n"}
    an = Analyzer(files.get, {"lib.sh": ["lib.sh"], "run.sh": ["run.sh"]})
    words = an.reachable_words("run.sh", {})
    assert (words is None) is TEXTS[text], words
    assert words is None or "other" not in words
