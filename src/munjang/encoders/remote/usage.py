"""What a remote encoder has spent: requests, retries, cache hits, input tokens and an estimated cost."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

# OpenAI's list prices for embeddings, USD per million input tokens, as published in January 2025.
# Only an estimate: the provider's invoice (batch discounts, price changes) is what counts.
OPENAI_PRICES_PER_MILLION = {
    "text-embedding-3-small": 0.02,
    "text-embedding-3-large": 0.13,
    "text-embedding-ada-002": 0.10,
}


COUNTERS = ("requests", "retries", "cache_hits", "cache_misses", "input_tokens")


def price_per_million(scheme: str, model: str) -> float | None:
    """USD per million input tokens for a known OpenAI model, else None (unknown: no estimate)."""
    return OPENAI_PRICES_PER_MILLION.get(model) if scheme == "openai" else None


@dataclass
class RemoteUsage:
    """Counters of one remote encoder, updated as it works (thread-safe).

    `requests` counts HTTP attempts that got an answer or failed to connect, `retries` the attempts
    repeated after a 429/5xx or a connection error, `cache_hits` / `cache_misses` the texts found in
    and missing from the disk cache, `input_tokens` the tokens the API reported in `usage`.
    """

    price_per_million: float | None = None
    requests: int = 0
    retries: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    input_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    @property
    def estimated_cost_usd(self) -> float | None:
        """input_tokens at the model's list price, or None when the price is unknown."""
        if self.price_per_million is None:
            return None
        return self.input_tokens * self.price_per_million / 1_000_000

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            counts = {name: getattr(self, name) for name in COUNTERS}
        return {**counts, "estimated_cost_usd": self.estimated_cost_usd}

    def summary(self) -> str:
        """One line for people: requests (retries), cache hits, tokens and the estimated cost."""
        cost = self.estimated_cost_usd
        return (
            f"{self.requests} requests ({self.retries} retries), {self.cache_hits} cache hits, "
            f"{self.input_tokens:,} tokens" + (f", ~${cost:.4f} (estimate)" if cost is not None else "")
        )
