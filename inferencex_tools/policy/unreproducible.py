"""What the sandbox cannot reproduce: a trace that failed only because the output of a
stubbed tool is missing.

The sandbox has no network and no container runtime: ``git clone`` makes an empty
directory, ``curl``/``wget`` an empty file (or none), ``enroot import`` no image, a tool
of the container image (found nowhere on the trace's PATH) does nothing.  A later step
that reads what such a call would have written fails here and would not fail in the job
(a gist cloned and copied into the image, a squash file resolved with ``realpath``).
Such a failure says nothing about the recipe: the row is "not checked" (PO308) with the
reason, never PO301.  A step that fails on anything else — a repository file that is
really missing, a command that really fails — stays a failure.

Pure: records and the failure's text in, a reason out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

# how a missing input shows in a failing command's message
_MISSING = ("no such file", "cannot stat", "cannot access", "not found", "does not exist",
            "no such directory", "not a directory", "cannot open", "failed to open")
_GIT_VALUE = ("--branch", "-b", "--depth", "--origin", "-o", "--reference", "--config", "-c",
              "--separate-git-dir", "--template", "--jobs", "-j", "--filter")


class _Record(Protocol):
    @property
    def tool(self) -> str: ...
    @property
    def argv(self) -> tuple[str, ...]: ...
    @property
    def cwd(self) -> str: ...


class _Trace(Protocol):
    @property
    def records(self) -> Sequence[_Record]: ...
    @property
    def stderr_tail(self) -> str: ...
    @property
    def last_line(self) -> str | None: ...
    @property
    def timed_out(self) -> bool: ...


@dataclass(frozen=True)
class Output:
    """A path a stubbed call would have written in the job."""

    path: str  # as the call names it (relative to ``cwd`` or absolute)
    cwd: str
    call: str  # the call, shortened, for the reason

    def spellings(self) -> list[str]:
        p = os.path.normpath(self.path)
        full = p if p.startswith("/") else os.path.normpath(os.path.join(self.cwd, p))
        return list(dict.fromkeys(s for s in (p, full, self.path.rstrip("/"))
                                  if s not in ("", ".", "/")))


def _opt(args: Sequence[str], *names: str) -> str | None:
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return args[i + 1]
            if n.startswith("--") and a.startswith(n + "="):
                return a[len(n) + 1:]
    return None


def _clone(args: Sequence[str]) -> str | None:
    words: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in _GIT_VALUE:
            skip = True
        elif not a.startswith("-"):
            words.append(a)
    if not words:
        return None
    if len(words) > 1:
        return words[1]
    name = words[0].rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return name.removesuffix(".git") or None


def _url_name(args: Sequence[str]) -> str | None:
    urls = [a for a in args if "://" in a]
    if not urls:
        return None
    return urls[-1].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or None


def _enroot_image(args: Sequence[str]) -> str | None:
    """``enroot import``'s output: ``-o/--output``, else the name enroot derives from the
    image (``docker://[registry#]repo/name:tag`` → ``repo+name+tag.sqsh``)."""
    out = _opt(args, "-o", "--output")
    if out:
        return out
    uri = next((a for a in args if "://" in a), None)
    if uri is None:
        return None
    ref = uri.split("://", 1)[1].split("#", 1)[-1]
    return ref.replace("/", "+").replace(":", "+") + ".sqsh"


def _git(args: Sequence[str]) -> list[str]:
    i = next((n for n, a in enumerate(args) if a == "clone"), None)
    out = _clone(args[i + 1:]) if i is not None else None
    return [out] if out else []


def _curl(args: Sequence[str]) -> list[str]:
    out = _opt(args, "-o", "--output")
    if out is None and ("-O" in args or "--remote-name" in args):
        out = _url_name(args)
    if not out or out == "-":
        return []
    folder = _opt(args, "--output-dir")
    return [os.path.join(folder, out) if folder else out]


def _wget(args: Sequence[str]) -> list[str]:
    out = _opt(args, "-O", "--output-document") or _url_name(args)
    if not out or out == "-":
        return []
    folder = _opt(args, "-P", "--directory-prefix")
    return [os.path.join(folder, out) if folder else out]


def _enroot(args: Sequence[str]) -> list[str]:
    out = _enroot_image(args) if "import" in args else None
    return [out] if out else []


def _unsquashfs(args: Sequence[str]) -> list[str]:
    out = _opt(args, "-d", "-dest")
    return [out] if out else []


_OUTPUTS = {"git": _git, "curl": _curl, "wget": _wget, "enroot": _enroot,
            "unsquashfs": _unsquashfs}


def stub_outputs(records: Iterable[_Record]) -> list[Output]:
    """What the stubbed calls of a trace would have written (clones, downloads, images)."""
    out: list[Output] = []
    for r in records:
        args = list(r.argv[1:])
        outputs = _OUTPUTS.get(r.tool)
        for path in outputs(args) if outputs else ():
            if path and path != "-":
                call = " ".join(r.argv)
                out.append(Output(path, r.cwd, call if len(call) <= 160 else call[:157] + "…"))
    return out


def _mentions(text: str, spelling: str) -> bool:
    return re.search(r"(?<![\w.+-])" + re.escape(spelling) + r"(?![\w.+-])", text) is not None


def missing_stub_output(trace: _Trace) -> str | None:
    """Why a failed trace is "not checked": the failing step needed what a stubbed call
    would have written (None: the failure is the recipe's own, or unknown)."""
    if trace.timed_out:
        return None
    err = [ln.strip() for ln in trace.stderr_tail.splitlines()
           if ln.strip() and not ln.startswith("+")][-3:]
    said = " ".join(err)
    if not any(m in said.lower() for m in _MISSING):
        return None
    evidence = f"{trace.last_line or ''}\n{said}"
    for o in stub_outputs(trace.records):
        if any(_mentions(evidence, s) for s in o.spellings()):
            step = (trace.last_line or said)[:200]
            return (f"`{o.call}` is stubbed (the sandbox fetches nothing and runs no "
                    f"container runtime), and a later step needs what it would have "
                    f"written ({o.path}): {step}")
    return None
