"""The one shell front end (``inferencex_tools/shellsyntax.py``): what it parses, what it
refuses, and the real tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferencex_tools import shellsyntax as S


@pytest.mark.parametrize("text", [
    "until (exec 3<>\"/dev/tcp/$h/$p\") 2>/dev/null; do sleep 1; done\n",  # the grammar's gap
    "cat <<-EOF\n\t$(golden_al)\n\tEOF\n",  # a <<- body whose expansion follows a tab
    "echo `echo \\`golden_al\\``\n",  # nested backquotes
    "f() {\n  echo\n",  # unterminated
])
def test_a_parse_the_tree_cannot_account_for_is_refused(text: str) -> None:
    assert S.parse(text).problem is not None


@pytest.mark.parametrize("text", [
    "cat <<'EOF'\n$(not_run)\nEOF\n",  # a quoted here-document expands nothing
    "echo '$(literal)' \"$$\" ${X:-$$}\n",
    "x=$(( (A + 2) * B ))\n",
])
def test_ordinary_text_parses(text: str) -> None:
    assert S.parse(text).ok


def test_functions_statements_and_here_documents_come_from_the_tree() -> None:
    text = ("f() {\n  echo a\n}; GOLDEN_AL=3.60\n_u() { :; }; X=1; _v() { :; }\n"
            'g() {\n  echo "x <<END y"\n}\nY=2\n')
    syn = S.parse(text)
    assert syn.ok and set(S.functions(syn)) == {"f", "_u", "_v", "g"}
    top = S.without_comments(syn.root, cut=("function_definition",))
    assert "GOLDEN_AL=3.60" in top and "X=1" in top and "Y=2" in top
    assert "echo" not in top
    assert S.skeleton(S.parse("a  # c\nb\n").root) == S.skeleton(S.parse("a\nb  # d\n").root)
    assert S.skeleton(S.parse("cat <<E\n#al=1\nE\n").root) != \
        S.skeleton(S.parse("cat <<E\n#al=2\nE\n").root)


@pytest.mark.parametrize(("word", "env", "pattern"), [
    ('"${0%.sh}.al"', {}, "*.al"),
    ('"${0%.sh}.al"', {"0": "b/x.sh"}, "b/x.al"),
    ('"$(dirname "$0")/al.txt"', {}, "*/al.txt"),
    ('conf.d/*.env', {}, "conf.d/*.env"),
    ('"conf.d/*.env"', {}, "conf.d/[*].env"),
    ('"$X"', {"X": "a.yaml"}, "a.yaml"),
])
def test_a_word_as_a_pattern_keeps_its_literal_parts(word: str, env: dict[str, str],
                                                      pattern: str) -> None:
    syn = S.parse(f"cat {word}\n")
    cmd = next(S.commands(syn.root))
    assert S.pattern(S.command_words(cmd)[1], env) == pattern


def test_parses_are_cached_by_content() -> None:
    assert S.parse("echo a\n") is S.parse(b"echo a\n")


def test_the_real_tree_parses(real_tree: Path) -> None:
    """262 of the real tree's 263 shell files parse; the one the grammar cannot parse is
    refused (it then reaches everything)."""
    files = sorted(p for p in real_tree.rglob("*") if p.suffix in (".sh", ".bash")
                   and ".git" not in p.parts)
    refused = [p.relative_to(real_tree).as_posix() for p in files
               if not S.parse(p.read_bytes()).ok]
    assert len(files) == 263
    assert refused == ["benchmarks/multi_node/tilert_utils/run_node.sh"]
