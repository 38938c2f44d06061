"""From documents to passages: windows cut into passages, each passage read by BM25 with its window,
titles carried, older collections keeping what their settings meant."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from munjang.search.collection.chunking import token_counter
from munjang.search.collection.passages import CHUNKING_DEFAULTS, ChunkingConfig, PassagePlanner
from tests.helpers.documents import SENTENCES, numbered


@pytest.fixture(scope="module")
def e5(e5_path: Path) -> Any:
    """What the planner reads of an encoder: e5-small's tokenizer and its 512-token window."""
    from transformers import AutoTokenizer

    return SimpleNamespace(tokenizer=AutoTokenizer.from_pretrained(e5_path), max_seq_length=512)


def planner(e5: Any, **settings: Any) -> PassagePlanner:
    return PassagePlanner(e5, ChunkingConfig.from_mapping(settings), prompt="passage: ")


def test_long_documents_become_small_passages_that_bm25_reads_with_their_window(e5: Any) -> None:
    count = token_counter(e5.tokenizer)
    page = numbered(40)  # about 4,000 tokens: several windows of e5-small
    plan = planner(e5)
    passages = plan.plan([page], [None])[0]
    assert plan.budget == 128 and plan.window == 510 - count(["passage: "])[0]
    assert max(count([p.encoded for p in passages])) <= 128
    assert max(count([p.lexical for p in passages])) <= plan.window
    contexts = list(dict.fromkeys(p.context for p in passages))
    assert 4 <= len(contexts) < len(passages)  # several windows, each holding several passages
    for i, p in enumerate(passages):
        assert p.chunk == i and p.text == page[p.start : p.end] and p.text in p.context
    # Passages tile the page: every non-space character is in one of them.
    covered = set().union(*(range(p.start, p.end) for p in passages))
    assert {i for i, c in enumerate(page) if not c.isspace()} <= covered
    # Windows tile it too: the contexts, in order, reach from the page's start to its end.
    assert page.startswith(contexts[0]) and page.endswith(contexts[-1])


def test_a_document_within_the_window_is_one_context_for_all_its_passages(e5: Any) -> None:
    text = " ".join(SENTENCES * 4)  # about 300 tokens
    passages = planner(e5).plan([text], ["여행 안내서"])[0]
    assert len(passages) >= 3
    assert {p.context for p in passages} == {f"여행 안내서\n{text}"}
    assert all(p.encoded.startswith("여행 안내서\n") for p in passages)


def test_bm25_over_the_passage_alone_and_short_documents(e5: Any) -> None:
    text = " ".join(SENTENCES * 4)
    alone = planner(e5, lexical_context="passage").plan([text, SENTENCES[0]], [None, None])
    assert len(alone[0]) >= 3 and all(p.lexical == p.encoded == p.text for p in alone[0])
    short = planner(e5).plan([SENTENCES[0]], [None])[0]
    assert len(short) == 1 and short[0].lexical == SENTENCES[0] and short[0].end == len(SENTENCES[0])


def test_a_stored_configuration_keeps_what_it_meant_when_written(e5: Any) -> None:
    # Written before passages had a budget of their own: the window was the passage, BM25 read it.
    old = {"enabled": True, "max_tokens": None, "overlap_tokens": 32, "title_field": "title", "late": False}
    config = ChunkingConfig.from_stored(old)
    assert config.max_tokens is None and config.lexical_context == "passage"
    assert ChunkingConfig.from_stored(None) == config
    # What a new collection writes reads back unchanged.
    assert ChunkingConfig.from_stored(ChunkingConfig().to_dict()) == ChunkingConfig()
    assert ChunkingConfig.from_mapping({}).to_dict() == CHUNKING_DEFAULTS
    page = numbered(40)
    passages = PassagePlanner(e5, config, prompt="passage: ").plan([page], [None])[0]
    count = token_counter(e5.tokenizer)
    assert len(passages) >= 4 and max(count([p.encoded for p in passages])) > 256
    assert all(p.lexical == p.text for p in passages)


def test_bad_lexical_context_is_refused() -> None:
    with pytest.raises(ValueError, match="lexical_context must be one of window, passage"):
        ChunkingConfig.from_mapping({"lexical_context": "page"})
