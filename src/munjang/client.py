"""`munjang.Client`: a thin Python client for a munjang server (`munjang serve`).

    client = munjang.Client("http://127.0.0.1:8000", api_key="secret")
    vectors = client.embed(["서울 날씨", "Seoul weather"])          # numpy (n, dim)
    client.rerank("query", ["doc a", "doc b"], top_n=1)
    client.add("news", [{"id": "1", "text": "..."}]); client.search("news", "query", mode="hybrid")
    client.search_image("photos", "cat.jpg"); client.image("photos", "cat.jpg", thumbnail=128)

Errors come back as `ServerError` carrying the HTTP status and the field the server named.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from ._util.extras import require
from .errors import MunjangError


class ServerError(MunjangError):
    """The server refused a request: `status`, `message`, and `param` (the field at fault)."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(f"{status}: {message}" + (f" (param: {param})" if param else ""))
        self.status, self.message, self.param = status, message, param


class Client:
    """Calls a munjang server over HTTP (httpx). `http` may pass a ready `httpx.Client` (tests)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        api_key: str | None = None,
        timeout: float = 60.0,
        http: Any = None,
    ) -> None:
        httpx = require("httpx")

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        if http is None:
            http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)
        http.headers.update(headers)
        self.http = http

    def _post(self, path: str, body: Mapping[str, Any]) -> Any:
        return self._answer(self.http.post(path, json=dict(body)))

    def _get(self, path: str) -> Any:
        return self._answer(self.http.get(path))

    @staticmethod
    def _answer(response: Any) -> Any:
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
                raise ServerError(response.status_code, error.get("message", ""), error.get("param"))
            except (ValueError, KeyError, TypeError):
                raise ServerError(response.status_code, response.text) from None
        return response.json()

    # -- embeddings ------------------------------------------------------------------------------
    def embed(
        self,
        texts: str | Sequence[str],
        *,
        model: str | None = None,
        dimensions: int | None = None,
        prompt_name: str | None = None,
        truncate: bool = True,
        instruction: str | None = None,
    ) -> np.ndarray:
        """Vectors of `texts` (a 1-D vector for one string), sent as base64 float32 to save bandwidth;
        `instruction` is text read before each input (a decoder embedder's task)."""
        single = isinstance(texts, str)
        body: dict[str, Any] = {
            "input": texts if single else list(texts),
            "encoding_format": "base64",
            "truncate": truncate,
        }
        options = {
            "model": model,
            "dimensions": dimensions,
            "prompt_name": prompt_name,
            "instruction": instruction,
        }
        for key, value in options.items():
            if value is not None:
                body[key] = value
        data = sorted(self._post("/v1/embeddings", body)["data"], key=lambda d: d["index"])
        vectors = np.stack([np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4") for d in data])
        return vectors[0] if single else vectors

    def similarity(self, source: str, sentences: Sequence[str], model: str | None = None) -> list[float]:
        """The model's similarity of `source` to each sentence."""
        body: dict[str, Any] = {"inputs": {"source_sentence": source, "sentences": list(sentences)}}
        if model is not None:
            body["model"] = model
        scores: list[float] = self._post("/v1/similarity", body)
        return scores

    def rerank(
        self,
        query: str,
        documents: Sequence[str],
        *,
        top_n: int | None = None,
        model: str | None = None,
        instruction: str | None = None,
    ) -> list[dict[str, Any]]:
        """`[{"index", "relevance_score"}]`, best first, from the server's cross-encoder (`instruction`:
        its task, which an LLM reranker reads as its system prompt)."""
        body: dict[str, Any] = {"query": query, "documents": list(documents)}
        if instruction is not None:
            body["instruction"] = instruction
        if top_n is not None:
            body["top_n"] = top_n
        if model is not None:
            body["model"] = model
        results: list[dict[str, Any]] = self._post("/v1/rerank", body)["results"]
        return results

    def models(self) -> list[str]:
        return [m["id"] for m in self._get("/v1/models")["data"]]

    # -- collections -----------------------------------------------------------------------------
    def create_collection(
        self, name: str, *, model: str | None = None, index: str = "exact"
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "index": index}
        if model is not None:
            body["model"] = model
        info: dict[str, Any] = self._post("/v1/collections", body)
        return info

    def collections(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._get("/v1/collections")["data"]
        return found

    def collection_info(self, name: str) -> dict[str, Any]:
        info: dict[str, Any] = self._get(f"/v1/collections/{name}")
        return info

    def drop_collection(self, name: str) -> None:
        """Delete a served collection and everything it holds (DELETE /v1/collections/{name})."""
        json_body = {"Content-Type": "application/json"}  # the server's rule for every write to /v1/
        self._answer(self.http.delete(f"/v1/collections/{name}", headers=json_body))

    def add(
        self, name: str, documents: Sequence[Mapping[str, Any]], on_conflict: str = "error"
    ) -> dict[str, int]:
        """Add `{"id", "text", "metadata"?}` documents to a served collection."""
        body = {"documents": [dict(d) for d in documents], "on_conflict": on_conflict}
        counts: dict[str, int] = self._post(f"/v1/collections/{name}/documents", body)
        return counts

    def delete(self, name: str, ids: Sequence[str]) -> int:
        deleted: int = self._post(f"/v1/collections/{name}/delete", {"ids": list(ids)})["deleted"]
        return deleted

    def search(self, name: str, query: str, top_k: int = 10, **options: Any) -> list[dict[str, Any]]:
        """Hits `{"id", "text", "metadata", "score", "scores"}`; options: mode, filter, fusion,
        weights, rerank, rerank_k."""
        hits: list[dict[str, Any]] = self._post(
            f"/v1/collections/{name}/search", {"query": query, "top_k": top_k, **options}
        )["data"]
        return hits

    def search_image(
        self, name: str, image: bytes | str | os.PathLike[str], top_k: int = 10, **options: Any
    ) -> list[dict[str, Any]]:
        """Hits for an image query (the image file's path, or its bytes) in a served CLIP collection."""
        data = image if isinstance(image, bytes) else Path(image).read_bytes()
        body = {"image": base64.b64encode(data).decode("ascii"), "top_k": top_k, **options}
        hits: list[dict[str, Any]] = self._post(f"/v1/collections/{name}/search", body)["data"]
        return hits

    def image(self, name: str, doc_id: str, thumbnail: int | None = None) -> bytes:
        """The stored image of an image document (a PNG at most `thumbnail` pixels on a side)."""
        params = {} if thumbnail is None else {"thumbnail": thumbnail}
        response = self.http.get(f"/v1/collections/{name}/images/{quote(doc_id, safe='')}", params=params)
        if response.status_code >= 400:
            self._answer(response)
        content: bytes = response.content
        return content

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
