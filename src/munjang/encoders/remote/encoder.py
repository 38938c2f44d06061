"""RemoteEncoder: sentence vectors from an OpenAI-compatible embeddings API, usable wherever a local
`SentenceEncoder` is (evaluators, collections, the CLI), by name: `load_embedder("openai:...")`.

`encode` sends only what the disk cache lacks, each distinct text once, in requests that stay within
the API's limits: at most `max_inputs_per_request` inputs and `max_request_tokens` tokens each. Tokens
are bounded from above by UTF-8 bytes (a byte-level BPE or WordPiece token covers at least one byte)
plus two special tokens per input, so no request goes over without a tokenizer at hand. Requests run
`concurrency` at a time and each is retried on 429/5xx (`transport.py`); `usage` counts what was spent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ... import similarity as sim
from ..settings import prompt_text, side_prompt_name
from .cache import EmbeddingCache
from .names import RemoteSpec, parse_remote_name
from .transport import EmbeddingsAPI, RetryPolicy
from .usage import RemoteUsage, price_per_million

# (inputs per request, tokens per request) by scheme: OpenAI's documented limits (2,048 inputs,
# 300,000 tokens); TEI's default --max-client-batch-size of 32; a munjang server's 2,048 inputs.
REQUEST_LIMITS = {"openai": (2048, 300_000), "tei": (32, 250_000), "remote": (2048, 300_000)}
# Vector lengths of OpenAI's models, so asking costs no request (others are probed once, then cached).
OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
PROBE_TEXT = "munjang: the dimension of this model"
PROGRESS_BAR_MIN_SENTENCES = 1024


def token_bound(text: str) -> int:
    """An upper bound on the tokens an API's tokenizer makes of `text` (see the module docstring)."""
    return len(text.encode("utf-8")) + 2


def request_batches(texts: Sequence[str], max_inputs: int, max_tokens: int) -> Iterator[list[int]]:
    """Positions of `texts` grouped into requests of at most `max_inputs` inputs and `max_tokens`
    bounded tokens (a single text over the budget goes alone: the API decides whether it fits)."""
    batch: list[int] = []
    tokens = 0
    for i, text in enumerate(texts):
        size = token_bound(text)
        if batch and (len(batch) >= max_inputs or tokens + size > max_tokens):
            yield batch
            batch, tokens = [], 0
        batch.append(i)
        tokens += size
    if batch:
        yield batch


class RemoteEncoder:
    """An encoder behind an OpenAI-compatible `POST /embeddings` (OpenAI, TEI, a munjang server).

    `name` is a remote name (`remote/names.py`: `openai:<model>`, `tei:<url>`,
    `remote:<base_url>#<model>`); the key comes from the environment unless `api_key` is given, and
    is never stored. `cache`: True for the shared disk cache, False for none, or a path or an
    `EmbeddingCache`. `prompts` maps prompt names to literal prefixes (an API has none of its own).
    """

    def __init__(
        self,
        name: str | RemoteSpec,
        *,
        api_key: str | None = None,
        cache: bool | str | Path | EmbeddingCache = True,
        max_inputs_per_request: int | None = None,
        max_request_tokens: int | None = None,
        concurrency: int = 4,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        prompts: dict[str, str] | None = None,
        default_prompt_name: str | None = None,
        similarity_fn_name: str = "cosine",
        http: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.spec = name if isinstance(name, RemoteSpec) else parse_remote_name(name)
        inputs, tokens = REQUEST_LIMITS[self.spec.scheme]
        self.max_inputs_per_request = max_inputs_per_request or inputs
        self.max_request_tokens = max_request_tokens or tokens
        if self.max_inputs_per_request < 1 or self.max_request_tokens < 1 or concurrency < 1:
            raise ValueError("max_inputs_per_request, max_request_tokens and concurrency must be at least 1")
        if similarity_fn_name not in sim.SIMILARITY_NAMES:
            raise ValueError(f"unknown similarity function {similarity_fn_name!r}")
        self.prompts: dict[str, str] = dict(prompts or {})
        if default_prompt_name is not None and default_prompt_name not in self.prompts:
            raise ValueError(f"default_prompt_name {default_prompt_name!r} is not among the prompts")
        self.default_prompt_name = default_prompt_name
        self.similarity_fn_name = similarity_fn_name
        self.concurrency = concurrency
        self.usage = RemoteUsage(price_per_million(self.spec.scheme, self.spec.model))
        self.api = EmbeddingsAPI(
            self.spec.base_url,
            api_key if api_key is not None else self.spec.api_key(),
            timeout=timeout,
            retry=retry,
            usage=self.usage,
            key_hint=f"the key comes from ${self.spec.key_variable}",
            http=http,
            sleep=sleep,
        )
        if cache is True:
            self.cache: EmbeddingCache | None = EmbeddingCache()
        elif cache is False:
            self.cache = None
        else:
            self.cache = cache if isinstance(cache, EmbeddingCache) else EmbeddingCache(cache)
        self._dimension: int | None = self.spec.dimensions or (
            OPENAI_DIMENSIONS.get(self.spec.model) if self.spec.scheme == "openai" else None
        )

    @property
    def name(self) -> str:
        """The remote name this encoder answers to (what a collection records; no key in it)."""
        return self.spec.name

    def __repr__(self) -> str:
        return f"RemoteEncoder({self.name!r})"

    # -- what the evaluators, collections and the CLI ask ---------------------------------------------
    def get_embedding_dimension(self) -> int:
        """Length of the vectors (known for OpenAI's models and with `dimensions`; else one probe)."""
        if self._dimension is None:
            probe = self._vectors([PROBE_TEXT], self.max_inputs_per_request, self.max_request_tokens, False)
            self._dimension = int(probe.shape[1])
        return self._dimension

    def similarity(self, a: Any, b: Any) -> Any:
        """Similarity matrix between two sets of embeddings, with this encoder's similarity function."""
        return sim.similarity(a, b, self.similarity_fn_name)

    def similarity_pairwise(self, a: Any, b: Any) -> Any:
        """Row-by-row similarity of two equally long sets of embeddings."""
        return sim.pairwise_similarity(a, b, self.similarity_fn_name)

    def describe(self) -> dict[str, Any]:
        """What `munjang info` prints: where the model is, its limits, prompts and what it has spent."""
        return {
            "architecture": "remote",
            "name": self.name,
            "base_url": self.spec.base_url,
            "model": self.spec.model,
            "embedding_dimension": self.get_embedding_dimension(),
            "dimensions": self.spec.dimensions,
            "max_inputs_per_request": self.max_inputs_per_request,
            "max_request_tokens": self.max_request_tokens,
            "prompts": self.prompts,
            "default_prompt_name": self.default_prompt_name,
            "similarity_fn_name": self.similarity_fn_name,
            "cache": str(self.cache.path) if self.cache is not None else None,
            "usage": self.usage.as_dict(),
        }

    def encode(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int | None = None,
        max_tokens: int | None = None,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
    ) -> Any:
        """Encode one sentence (-> 1-D vector) or a list (-> 2-D float32 array, rows in input order).

        `batch_size` caps the inputs per request (at most `max_inputs_per_request`) and `max_tokens`
        the bounded tokens per request; `prompt_name` / `prompt` put a prefix before every input (it
        is part of the text sent and cached); `truncate_dim` keeps the first N dimensions before
        `normalize_embeddings`. Returns numpy by default, torch with `convert_to_tensor=True`.
        """
        single = isinstance(sentences, str)
        texts: list[str] = [sentences] if single else list(sentences)  # type: ignore[list-item]
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"sentences[{i}] is {type(text).__name__}, not str")
            if not text:
                raise ValueError(f"sentences[{i}] is empty: embeddings APIs refuse empty inputs")
        for option, value in (
            ("batch_size", batch_size),
            ("max_tokens", max_tokens),
            ("truncate_dim", truncate_dim),
        ):
            if value is not None and value < 1:
                raise ValueError(f"{option} must be at least 1, not {value}")
        prefix = self._prompt_text(prompt_name, prompt)
        inputs = [prefix + t for t in texts]
        progress = (
            len(texts) >= PROGRESS_BAR_MIN_SENTENCES if show_progress_bar is None else show_progress_bar
        )
        max_inputs = min(batch_size or self.max_inputs_per_request, self.max_inputs_per_request)
        budget = max_tokens or self.max_request_tokens
        vectors = (
            self._vectors(inputs, max_inputs, budget, progress)
            if inputs
            else np.zeros((0, self._dimension or 0), dtype=np.float32)
        )
        if truncate_dim is not None:
            vectors = vectors[:, :truncate_dim]
        if normalize_embeddings:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.maximum(norms, 1e-12)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if convert_to_tensor or not convert_to_numpy:
            import torch

            return torch.from_numpy(vectors)[0 if single else slice(None)]
        return vectors[0] if single else vectors

    def encode_query(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`encode` with the "query" prompt, when this encoder was given one and the caller names none
        (the prefix is part of the text sent, as with a local model's prompt)."""
        name = side_prompt_name(self.prompts, "query", prompt_name, prompt)
        return self.encode(sentences, prompt_name=name, prompt=prompt, **kwargs)

    def encode_document(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`encode` with the "document" (else "passage", "corpus") prompt, when this encoder was given
        one and the caller names none."""
        name = side_prompt_name(self.prompts, "document", prompt_name, prompt)
        return self.encode(sentences, prompt_name=name, prompt=prompt, **kwargs)

    def close(self) -> None:
        """Close the HTTP connections and the cache."""
        self.api.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> RemoteEncoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------------
    def _prompt_text(self, prompt_name: str | None, prompt: str | None) -> str:
        return prompt_text(self.prompts, self.default_prompt_name, prompt_name, prompt)

    def _vectors(self, inputs: list[str], max_inputs: int, max_tokens: int, progress: bool) -> np.ndarray:
        """The vectors of `inputs` (texts as sent): from the cache, else from the API, each distinct once."""
        spec = self.spec
        unique = list(dict.fromkeys(inputs))
        found = self.cache.get(spec.base_url, spec.model, spec.dimensions, unique) if self.cache else {}
        missing = [t for t in unique if t not in found]
        self.usage.add(cache_hits=len(unique) - len(missing), cache_misses=len(missing))
        if missing:
            found.update(self._fetch(missing, max_inputs, max_tokens, progress))
        dims = {len(v) for v in found.values()}
        if len(dims) > 1:
            raise ValueError(f"{self.name} gave vectors of different lengths {sorted(dims)}: clear its cache")
        if self._dimension is None and dims:
            self._dimension = dims.pop()
        return np.stack([found[t] for t in inputs]).astype(np.float32, copy=False)

    def _fetch(
        self, texts: list[str], max_inputs: int, max_tokens: int, progress: bool
    ) -> dict[str, np.ndarray]:
        """Ask the API for `texts` (none cached), `concurrency` requests at a time, caching each answer."""
        spec = self.spec

        def request(batch: list[str]) -> dict[str, np.ndarray]:
            vectors, tokens = self.api.embed(spec.model, batch, spec.dimensions)
            self.usage.add(input_tokens=tokens)
            if self.cache is not None:
                self.cache.put(spec.base_url, spec.model, spec.dimensions, batch, vectors)
            return dict(zip(batch, vectors, strict=True))

        batches = [[texts[i] for i in b] for b in request_batches(texts, max_inputs, max_tokens)]
        out: dict[str, np.ndarray] = {}
        with tqdm(
            total=len(texts), desc=f"encoding with {spec.model}", unit="text", disable=not progress
        ) as bar:
            if len(batches) == 1 or self.concurrency == 1:
                for batch in batches:
                    out.update(request(batch))
                    bar.update(len(batch))
                return out
            with ThreadPoolExecutor(min(self.concurrency, len(batches))) as pool:
                futures = [pool.submit(request, b) for b in batches]
                try:
                    for future, batch in zip(futures, batches, strict=True):
                        out.update(future.result())
                        bar.update(len(batch))
                except BaseException:
                    for pending in futures:
                        pending.cancel()
                    raise
        return out
