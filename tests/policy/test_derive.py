"""The registry derived from the repository (no registry.yaml): the real curves, and
what stays ambiguous."""

from __future__ import annotations

from pathlib import Path

from inferencex_tools.policy.derive import derive_registry
from inferencex_tools.policy.store import derivation_inputs, open_store

HEADER = "# Source GitHub Actions run: https://github.com/o/r/actions/runs/1\n"


def curve(key: str, measured: str, extra: str = "") -> bytes:
    return (HEADER + extra + f"# Measured on {key} ({measured}), per num_speculative_tokens.\n"
            f"{key}:\n  thinking_on:\n    1: 1.80\n    2: 2.40\n").encode()


def test_real_tree_derives_the_hand_kept_registry(real_tree: Path) -> None:
    store = open_store(None, None, root=real_tree)
    assert store.source == "derived" and store.findings == []
    got = {(e.model_prefix, e.method, e.draft, e.draft_sample_method, e.curve, e.model_key,
            e.draft_any) for e in store.registry.entries}
    assert got == {
        ("dsv4", "mtp", None, None, "dsv4_mtp.yaml", "deepseek-v4-pro", False),
        ("dsv4", "dspark", None, "probabilistic", "dsv4-pro-0813-dspark.yaml",
         "deepseek-v4-pro-0813", True),
        ("qwen3.5", "mtp", None, None, "qwen3.5_mtp.yaml", "qwen3.5-397b-a17b-nvfp4", False),
        ("glm5.2", "mtp", None, None, "glm5.2_mtp.yaml", "glm-5.2-fp8", False),
        ("minimaxm3", "eagle3", "Inferact/MiniMax-M3-EAGLE3", None, "minimaxm3_eagle3.yaml",
         "minimax-m3", False),
        ("minimaxm3", "eagle3", "Inferact/MiniMax-M3-EAGLE3-GQA", None,
         "minimaxm3_eagle3_gqa.yaml", "minimax-m3", False),
        ("kimik3", "dspark", "Inferact/Kimi-K3-DSpark", None, "kimik3_dspark.yaml", "kimi-k3",
         False),
        ("kimik3", "dspark", "Inferact/Kimi-K3-DSpark", "probabilistic",
         "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method.yaml",
         "kimi-k3", False),
        ("kimik2.5", "eagle3", None, None, "kimik2.5_eagle3.yaml", "kimi-k2.5-nvfp4", True),
    }
    prefixes, texts = derivation_inputs(real_tree)
    assert "minimaxm3" in prefixes and texts


def test_variants_need_the_recipes_to_tell_drafts_apart() -> None:
    curves = {"m_eagle3.yaml": curve("m-1", "B300, vLLM EAGLE3"),
              "m_eagle3_gqa.yaml": curve("m-1", "B300, vLLM EAGLE3")}
    recipes = ['SPEC=\'{"model": "Org/M-1-EAGLE3"}\'', "DRAFT=Org/M-1-EAGLE3-GQA"]
    d = derive_registry(curves, readme=None, prefixes=["m"], recipe_texts=recipes,
                        registry_file="r")
    assert {(e.curve, e.draft) for e in d.registry.entries} == {
        ("m_eagle3.yaml", "Org/M-1-EAGLE3"), ("m_eagle3_gqa.yaml", "Org/M-1-EAGLE3-GQA")}
    # without recipes naming the drafts: ambiguous, reported, not guessed
    d2 = derive_registry(curves, readme=None, prefixes=["m"], recipe_texts=[],
                         registry_file="r")
    assert d2.registry.entries == [] and [f.rule for f in d2.findings] == ["PO108"]
    assert d2.ambiguous == {("m", "eagle3", None): ["m_eagle3.yaml", "m_eagle3_gqa.yaml"]}


def test_header_fields_and_yaml_round_trip(tmp_path: Path) -> None:
    curves = {"k3_dspark.yaml": curve("kimi-k3", "B300, vLLM DSpark, draft: O/K3-DSpark"),
              "k3_dspark_prob.yaml": curve(
                  "kimi-k3", "B300, vLLM DSpark, draft: O/K3-DSpark",
                  "# speculative-config: draft_sample_method=probabilistic\n"),
              "q_mtp.yaml": curve("q-1", "B300, vLLM MTP")}
    d = derive_registry(curves, readme=None, prefixes=["k3", "q"], recipe_texts=[],
                        registry_file="r")
    rows = {e.curve: e for e in d.registry.entries}
    assert rows["k3_dspark_prob.yaml"].draft_sample_method == "probabilistic"
    assert rows["k3_dspark.yaml"].draft == "O/K3-DSpark"
    assert rows["q_mtp.yaml"].draft is None and not rows["q_mtp.yaml"].draft_any
    (tmp_path / "golden_al_distribution").mkdir()
    for name, body in curves.items():
        (tmp_path / "golden_al_distribution" / name).write_bytes(body)
    (tmp_path / "golden_al_distribution" / "registry.yaml").write_text(d.to_yaml())
    explicit = open_store(None, None, root=tmp_path)
    assert explicit.source == "registry" and explicit.findings == []
    assert {e.curve for e in explicit.registry.entries} == set(curves)


def test_prefix_lookup_derives_what_the_prefix_set_derives(real_tree: Path) -> None:
    """The registry derived with the model prefixes looked up block by block (the gate's
    scoped check) equals the one derived from every prefix of the parsed configs."""
    from inferencex_tools.io.layout import master_files
    from inferencex_tools.sweep.blocks import FieldValues

    cdir = real_tree / "golden_al_distribution"
    curves = {p.name: p.read_bytes() for p in sorted(cdir.glob("*.yaml"))}
    prefixes, texts = derivation_inputs(real_tree)
    lookup = FieldValues([(p.name, p.read_bytes()) for p in master_files(real_tree)],
                         "model-prefix")
    a = derive_registry(curves, readme=None, prefixes=prefixes, recipe_texts=texts,
                        registry_file="r")
    b = derive_registry(curves, readme=None, prefixes=lookup, recipe_texts=texts,
                        registry_file="r")
    assert a.registry.entries == b.registry.entries and a.registry.entries
    assert a.findings == b.findings and a.ambiguous == b.ambiguous
    # a prefix that is also a longer curve-name start wins over a shorter one
    d = derive_registry({"k3-x_mtp.yaml": curve("m", "B300, vLLM MTP")}, readme=None,
                        prefixes=FieldValues([("f", b"a:\n  model-prefix: k3\n"
                                                    b"b:\n  model-prefix: k3-x\n")],
                                             "model-prefix"),
                        recipe_texts=[], registry_file="r")
    assert [e.model_prefix for e in d.registry.entries] == ["k3-x"]
