"""`Collection.create`'s extra retrievers as one spec (`RetrieverModels`): the older keywords
(`sparse_model`, `sparse_encoder`, ...) map onto it, and a collection made either way is the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from munjang.search.collection.collection import Collection
from munjang.search.collection.retrievers import Model, RetrieverModels
from tests.helpers.sparse import munjang_splade


def test_the_keywords_and_the_mapping_give_the_same_spec() -> None:
    loaded = object()
    by_keywords = RetrieverModels.of(
        None, sparse_model="s", multi_vector_model="c", multi_vector_encoder=loaded
    )
    by_mapping = RetrieverModels.of({"sparse": "s", "multi_vector": Model("c", loaded)})
    assert by_keywords == by_mapping == RetrieverModels(Model("s"), Model("c", loaded))
    assert RetrieverModels.of(by_mapping) == by_mapping
    assert RetrieverModels.of(None, m3_encoder=loaded) == RetrieverModels(m3=Model(None, loaded))
    assert RetrieverModels.of(None, sparse_model=None) == RetrieverModels()
    assert by_mapping.named("sparse") == ("s", None) and by_mapping.named("m3") == (None, None)


def test_a_kind_given_twice_or_unknown_is_refused() -> None:
    with pytest.raises(ValueError, match="given twice"):
        RetrieverModels.of({"sparse": "a"}, sparse_model="b")
    with pytest.raises(ValueError, match="unknown retriever 'colbert'"):
        RetrieverModels.of({"colbert": "a"})
    with pytest.raises(TypeError, match="unexpected keyword argument 'sparse_modle'"):
        RetrieverModels.of(None, sparse_modle="a")


def test_a_collection_made_with_the_spec_equals_one_made_with_the_keywords(tmp_path: Path, encoder) -> None:
    splade = munjang_splade(tmp_path / "splade")
    texts = ["the cat sat on the mat", "rain on the road", "a dog in the sun"]
    results = []
    for name, options in [
        ("spec", {"retrievers": {"sparse": splade}}),
        ("keywords", {"sparse_model": splade}),
    ]:
        with Collection.create(tmp_path / name, encoder=encoder, tokenizer="word", **options) as col:
            col.add(["a", "b", "c"], texts)
            assert col.retrievers("hybrid") == ["dense", "lexical", "sparse"]
            results.append(
                ([(h.id, h.score) for h in col.search("cat mat", 3, mode="sparse")], col.config["sparse"])
            )
    assert results[0] == results[1]
    with pytest.raises(TypeError, match="unexpected keyword argument 'sparse'"):
        Collection.create(tmp_path / "bad", encoder=encoder, sparse=splade)  # type: ignore[arg-type]
