"""A misspelled model name is answered with the closest known name."""

from __future__ import annotations

from munjang.models.catalog import did_you_mean, unknown


def test_a_misspelled_name_gets_the_closest_known_name():
    assert did_you_mean("multilingual-e5-smal", []) == " (did you mean 'multilingual-e5-small'?)"
    assert did_you_mean("ALL-MiniLM-L6-v3", []) == " (did you mean 'all-MiniLM-L6-v2'?)"
    assert did_you_mean("my-model-2", ["my-model-1"]) == " (did you mean 'my-model-1'?)"
    assert did_you_mean("bert-base-uncased", []) == ""  # nothing close: no guess
    assert "did you mean 'munjang-ko-small'" in str(unknown("munjang-ko-smal", []))
