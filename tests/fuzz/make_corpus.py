#!/usr/bin/env python3
"""Regenerate the committed seed corpus ``tests/fuzz/corpus/``.

    python -m tests.fuzz.make_corpus

Seeds are small (≤ 4 KiB) and never verbatim copies of the shared corpus: each is
either synthetic (hostile shapes: alias bombs, deep nesting, odd roots, encodings,
conflict markers …) or a fragment of the real files under ``../shared`` with
deterministic mutations applied.  The fuzz harnesses add fresh unmutated fragments
of the shared corpus at run time.
"""

from __future__ import annotations

import random
from pathlib import Path

from tests.fuzz.harness import CORPUS_DIR, mutate, shared_seeds

MAX_SEED = 4096

SYNTHETIC: dict[str, bytes] = {
    "root-int.yaml": b"42\n",
    "root-string.yaml": b"just a string\n",
    "root-mapping.yaml": b"config-keys:\n- a\ndescription:\n- b\npr-link: XXX\n",
    "root-null.yaml": b"~\n",
    "empty.yaml": b"",
    "latin1.yaml": b"- config-keys:\n  - a\n  description:\n  - caf\xe9\n  pr-link: XXX\n",
    "nul.yaml": b"- config-keys:\n  - a\n  description:\n  - a\x00b\n  pr-link: XXX\n",
    "bom-crlf.yaml": b"\xef\xbb\xbf- config-keys:\r\n  - a\r\n  description:\r\n  - b\r\n"
                     b"  pr-link: XXX\r\n",
    "tab.yaml": b"- config-keys:\n  - a\n  description:\n  - \"a\tb\"\n  pr-link: XXX\n",
    "plusplus.yaml": b"- config-keys:\n  - a\n  description:\n  - ++ not a diff header\n"
                     b"  - -- nor this\n  pr-link: XXX\n",
    "conflict.yaml": b"- config-keys:\n  - a\n  description:\n  - b\n<<<<<<< HEAD\n"
                     b"  pr-link: XXX\n=======\n  pr-link: TBD\n>>>>>>> main\n",
    "dup-key.yaml": b"- config-keys:\n  - a\n  description:\n  - b\n  pr-link: XXX\n"
                    b"  pr-link: TBD\n",
    "folded-link.yaml": b"- config-keys:\n  - a\n  description:\n  - b\n  pr-link:\n"
                        b"    https://github.com/SemiAnalysisAI/InferenceX/pull/1701\n",
    "field-name.yaml": b"- config-keys:\n  - a\n  description:\n  - b\n  pr_link: XXX\n",
    "tags.yaml": b"- config-keys: !!set {a, b}\n  description: !!binary aGVsbG8=\n"
                 b"  pr-link: !!timestamp 2001-12-14\n  evals-only: !!bool yes\n",
    "bad-tags.yaml": b"- !!bool x\n- !!int ''\n- !!omap 5\n- !foo bar\n",
    "alias-bomb.yaml": b"a: &a [x, x, x, x, x, x, x, x, x]\n"
                       + b"".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n".encode()
                                  for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
    "alias-cycle.yaml": b"- &a [*a]\n",
    "merge-keys.yaml": b"- &base {config-keys: [a], description: [b]}\n- <<: *base\n"
                       b"  pr-link: XXX\n",
    "deep-flow.yaml": b"[" * 300 + b"]" * 300 + b"\n",
    "deep-block.yaml": b"- " * 300 + b"x\n",
    "complex-key.yaml": b"? [a, b]\n: c\n? {x: y}\n: d\n",
    "multi-doc.yaml": b"- a\n---\n- b\n",
    "directives.yaml": b"%YAML 1.1\n%TAG ! tag:example.com,2000:\n---\n- !x y\n",
    "big-int.yaml": b"- " + b"9" * 5000 + b"\n",
    "master-string-isl.yaml": b"dsr1-fp8-b200-sglang:\n  image: lmsysorg/sglang:v0.5\n"
                              b"  model: deepseek-ai/DeepSeek-R1\n  model-prefix: dsr1\n"
                              b"  runner: b200\n  precision: fp8\n  framework: sglang\n"
                              b"  multinode: false\n  seq-len-configs:\n  - isl: '1024'\n"
                              b"    osl: 1024\n    search-space:\n    - {tp: 8, conc-start: 4, "
                              b"conc-end: 64}\n",
    "mixed-key-types.yaml": b"- config-keys: [a]\n  ~: x\n  1: y\n  ? [p, q]\n  : z\n"
                            b"  pr-link: XXX\n",
    "dup-key-bomb.yaml": b"a: &a [x, x, x, x, x, x, x, x, x]\n"
                         + b"".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n".encode()
                                    for p, c in zip("abcdefg", "bcdefgh", strict=True))
                         + b"j: *h\nj: *h\n",
    "timestamp-bomb.yaml": b"a: &a [x, x, x, x, x, x, x, x, x]\n"
                           + b"".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n".encode()
                                      for p, c in zip("abcdef", "bcdefg", strict=True))
                           + b"z: !!timestamp [*g, *g]\n",
    "cyclic-entry.yaml": b"- config-keys: [a]\n  description: &d [x, *d]\n  pr-link: XXX\n",
    "master-quoted-false.yaml": b"k-fp8-b200-sglang:\n  image: a/b:c\n  model: m/n\n"
                                b"  model-prefix: k\n  runner: b200\n  precision: fp8\n"
                                b"  framework: sglang\n  multinode: 'false'\n  scenarios:\n"
                                b"    fixed-seq-len:\n    - {isl: 1024, osl: 1024, search-space: "
                                b"[{tp: 8, conc-start: 4, conc-end: 8}]}\n",
    "event-payload.json": b'{"pull_request": {"number": 12, "labels": [{"name": 5}], '
                          b'"base": {"sha": "--upload-pack=x"}, "head": null}}\n',
}


def build(out: Path = CORPUS_DIR) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, data in SYNTHETIC.items():
        p = out / name
        p.write_bytes(data[:MAX_SEED])
        written.append(p)
    rng = random.Random(20261129)
    fragments = shared_seeds()
    for i, frag in enumerate(fragments):
        for j in range(2):
            ops = [(rng.randrange(10), rng.randrange(1 << 20), rng.randrange(1 << 16),
                    rng.randrange(256)) for _ in range(2 + j)]
            data = mutate(frag[:MAX_SEED], ops, fragments)
            cut = data.rfind(b"\n", 0, MAX_SEED)
            data = data[: cut + 1] if len(data) > MAX_SEED and cut > 0 else data[:MAX_SEED]
            if data in fragments or any(data == f[: len(data)] for f in fragments):
                continue  # never store an unmutated fragment
            p = out / f"mutated-{i:02d}-{j}.yaml"
            p.write_bytes(data)
            written.append(p)
    return written


if __name__ == "__main__":
    for p in build():
        print(p.relative_to(CORPUS_DIR.parent.parent.parent), p.stat().st_size)
