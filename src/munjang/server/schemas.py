"""Request and response bodies of OpenAI's embeddings API, plus munjang's extras.

- `input`: a string, a list of strings, a list of token ids, or a list of token-id lists. Token ids
  are decoded with the model's tokenizer (`skip_special_tokens=True`) and the text is encoded as
  usual, so they give the vectors of the text they spell in *this* model's vocabulary.
- `encoding_format="base64"`: each vector as little-endian float32 bytes, base64-encoded (as OpenAI).
- `dimensions`: keep the first N dimensions (Matryoshka), then re-normalize to unit length when the
  model itself normalizes, so cosine and dot product stay equal.
- munjang extras: `truncate` (False: an input over the model's token limit is an error instead of
  being cut), `prompt_name` (one of the model's prompts, e.g. e5's "query" / "passage") and
  `instruction` (text read before each input, sentence-transformers' `prompt=`: a decoder embedder's
  task, e.g. Qwen3-Embedding's "Instruct: ...\nQuery: "; counted in `usage`, bounded as inputs are).
- `model` may be left out: the server's default (first) model answers.

Every text a route reads (`Text`) is put in Unicode's composed form (NFC), as collections store it:
the same Hangul sent decomposed (NFD, as macOS file names and some editors write it) would otherwise
embed and match as other characters.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr


def composed(text: str) -> str:
    """`text` in Unicode's composed form (NFC)."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


Text = Annotated[StrictStr, AfterValidator(composed)]
EmbeddingInput = Text | list[Text] | list[StrictInt] | list[list[StrictInt]]


class EmbeddingRequest(BaseModel):
    """POST /v1/embeddings body."""

    model_config = ConfigDict(extra="ignore")

    input: EmbeddingInput = Field(description="Text, texts, token ids, or lists of token ids.")
    model: StrictStr | None = Field(default=None, description="A served model (default: the first).")
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: StrictInt | None = Field(default=None, description="Keep the first N dimensions.")
    user: StrictStr | None = None
    truncate: StrictBool = Field(default=True, description="Cut inputs at the model's token limit.")
    prompt_name: StrictStr | None = Field(default=None, description="One of the model's prompts.")
    instruction: Text | None = Field(
        default=None, description="Text read before each input (in place of a prompt_name)."
    )


class Embedding(BaseModel):
    """One vector, in input order."""

    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str


class Usage(BaseModel):
    """Tokens the model read (after decoding token-id inputs, prompt and special tokens included)."""

    prompt_tokens: int
    total_tokens: int


class EmbeddingResponse(BaseModel):
    """POST /v1/embeddings answer."""

    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: Usage


class ModelCard(BaseModel):
    """One entry of GET /v1/models."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "munjang"
    backend: str | None = None  # what it runs on, e.g. "openvino bf16 (auto, read from the cache)"


class ModelList(BaseModel):
    """GET /v1/models answer."""

    object: Literal["list"] = "list"
    data: list[ModelCard]


class ErrorDetail(BaseModel):
    """The `error` member of every error answer."""

    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorResponse(BaseModel):
    """Every error answer: `{"error": {...}}`, as OpenAI sends."""

    error: ErrorDetail
