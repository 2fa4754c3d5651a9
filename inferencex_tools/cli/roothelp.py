"""The root help text (``ixtool --help``) as click renders it at 80 columns, for the
fast entry (:mod:`.entry`): a generated file, like docs/rules.md.

Regenerate after changing the root help or a command's one-line help:
``python -m inferencex_tools.cli.roothelp`` (``tests/test_cli_promises.py::
test_fast_help_is_the_cli_help`` fails while it differs from what the CLI renders).
"""

from __future__ import annotations

import os

TEXT = (
    'Usage: ixtool [OPTIONS] COMMAND [ARGS]...\n'
    '\n'
    '  CI and PR toolkit for InferenceX-style LLM inference benchmark repositories.\n'
    '\n'
    '  Exit codes: 0 clean, 1 findings, 2 usage or input error.\n'
    '\n'
    '  Examples:\n'
    '    ixtool changelog validate --base origin/main\n'
    '    ixtool sweep explain minimaxm3-fp8-h200-vllm-agentic-mtp\n'
    '    ixtool rules --area sweep\n'
    '\n'
    'Options:\n'
    '  --traceback           Show a Python traceback for errors (for bug reports);\n'
    '                        accepted anywhere.\n'
    '  -q, --quiet           No progress or informational lines on stderr (errors\n'
    '                        and results only); accepted anywhere on the line.\n'
    '  -V, --version         Print the version and exit.\n'
    '  --install-completion  Install completion for the current shell.\n'
    '  --show-completion     Show completion for the current shell, to copy it or\n'
    '                        customize the installation.\n'
    '  -h, --help            Show this message and exit.\n'
    '\n'
    'Commands:\n'
    '  rules             List every rule (or the ids given): id, severity,...\n'
    '  merge-with-reuse  Merge a benchmark PR by reusing its finished full...\n'
    '  review            One deterministic review of a recipe change: inline...\n'
    '  changelog         Check and maintain perf-changelog.yaml.\n'
    '  ci                GitHub Actions integration: decide what a workflow...\n'
    '  labels            The PR label policy (primary sweep labels, modifiers,...\n'
    '  policy            Check speculative-decoding recipes against the golden...\n'
    '  sweep             Generate the benchmark sweep matrix (GitHub Actions...\n'
    '  config            Check the master configs (configs/*-master.yaml) and...\n'
    '  launch            From matrix row to launched job: render, submit to...\n'
    '  al                Audit the acceptance length a finished sweep really...\n'
    "  hook              Run one of ixtool's pre-commit hooks on the files...\n"
)


def render() -> str:
    """The root help as the full CLI prints it (80 columns)."""
    import io
    from contextlib import redirect_stdout

    from inferencex_tools.cli.main import run

    out = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        with redirect_stdout(out):
            run(["--help"])
    except SystemExit:
        pass
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue()


def write() -> str:
    """Rewrite this file with the current help; returns its path."""
    path = os.path.abspath(__file__)
    with open(path, encoding="utf-8") as fh:
        src = fh.read()
    head = src[:src.index("TEXT = ")]
    tail = src[src.index("\n\n\ndef render()"):]
    lines = "".join(f"    {line!r}\n" for line in render().splitlines(keepends=True))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{head}TEXT = (\n{lines}){tail}")
    return path


if __name__ == "__main__":
    print(f"wrote {write()}")
