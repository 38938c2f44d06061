"""`check_count`: the size check every list of request texts gets (embeddings and the text endpoints)."""

from __future__ import annotations

import pytest

from munjang.server.errors import APIError
from munjang.server.inputs import check_count


def test_a_list_within_the_limit_passes() -> None:
    check_count(["a", "b"], "input", 2)


@pytest.mark.parametrize(
    ("items", "message", "code"),
    [
        ([], "'input' must not be empty", "empty_input"),
        (["a", "b", "c"], "'input' has 3 items, over the limit of 2", "too_many_inputs"),
    ],
)
def test_an_empty_or_long_list_is_a_400_naming_the_field(items: list[str], message: str, code: str) -> None:
    with pytest.raises(APIError) as caught:
        check_count(items, "input", 2)
    assert (caught.value.status, caught.value.message, caught.value.param, caught.value.code) == (
        400,
        message,
        "input",
        code,
    )
