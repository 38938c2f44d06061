"""SequentialEvaluator: run several evaluators as one, e.g. STS and triplet accuracy during training."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .base import SupportsEncode


class NamedEvaluator(Protocol):
    """What SequentialEvaluator needs: a `name`, a `primary_metric` and ``__call__(encoder) -> metrics``."""

    @property
    def name(self) -> str: ...

    @property
    def primary_metric(self) -> str | None: ...

    def __call__(self, encoder: SupportsEncode, /) -> dict[str, float]: ...


class SequentialEvaluator:
    """Runs evaluators one after another and merges their metrics.

    Each evaluator's keys are prefixed with its name, ``"{name}_{key}"`` (unnamed evaluators' keys
    are kept as they are); two evaluators producing the same key is an error. The primary metric is the
    last evaluator's primary metric (prefixed). With a `main_score_function`, it is instead

        sequential_score = main_score_function([primary score of each evaluator, in order])

    added to the results under ``sequential_score`` (e.g. `statistics.mean` to average them).
    An evaluator's primary metric is its `primary_metric` after the call, else its first key.
    """

    def __init__(
        self,
        evaluators: Sequence[NamedEvaluator],
        main_score_function: Callable[[list[float]], float] | None = None,
        name: str = "",
    ) -> None:
        self.evaluators = list(evaluators)
        if not self.evaluators:
            raise ValueError("no evaluators given")
        repeated = [n for n, count in Counter(e.name for e in self.evaluators if e.name).items() if count > 1]
        if repeated:
            raise ValueError(f"evaluator names must differ, so their metric keys do: {repeated} repeat")
        self.main_score_function = main_score_function
        self.name = name
        self.primary_metric: str | None = "sequential_score" if main_score_function is not None else None

    def __len__(self) -> int:
        return len(self.evaluators)

    def __call__(self, encoder: SupportsEncode) -> dict[str, float]:
        """Run every evaluator on `encoder`; return all their metrics, prefixed with their names."""
        results: dict[str, float] = {}
        origin: dict[str, str] = {}
        primary_keys: list[str] = []
        primary_scores: list[float] = []
        for evaluator in self.evaluators:
            metrics = evaluator(encoder)
            if not metrics:
                raise ValueError(f"{evaluator!r} returned no metrics")
            prefix = f"{evaluator.name}_" if evaluator.name else ""
            for key, value in metrics.items():
                full = prefix + key
                if full in results:
                    raise ValueError(
                        f"{evaluator!r} and {origin[full]} both report {full!r}; give the evaluators names"
                    )
                results[full] = float(value)
                origin[full] = repr(evaluator)
            own = evaluator.primary_metric if evaluator.primary_metric in metrics else next(iter(metrics))
            primary_keys.append(prefix + str(own))
            primary_scores.append(float(metrics[str(own)]))
        if self.main_score_function is not None:
            results["sequential_score"] = float(self.main_score_function(primary_scores))
            self.primary_metric = "sequential_score"
        else:
            self.primary_metric = primary_keys[-1]
        return results

    def get_config_dict(self) -> dict[str, Any]:
        """Each evaluator's type, name and settings (when it has `get_config_dict`)."""
        configs = []
        for evaluator in self.evaluators:
            config: dict[str, Any] = {"type": type(evaluator).__name__}
            if evaluator.name:
                config["name"] = evaluator.name
            get_config = getattr(evaluator, "get_config_dict", None)
            if callable(get_config):
                config.update(get_config())
            configs.append(config)
        return {"evaluators": configs}

    def __repr__(self) -> str:
        name = f"{self.name!r}, " if self.name else ""
        inner = ", ".join(repr(e) for e in self.evaluators)
        return f"SequentialEvaluator({name}[{inner}])"
