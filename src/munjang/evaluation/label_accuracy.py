"""LabelAccuracyEvaluator: accuracy of a classifier head (the SoftmaxLoss head) on encoded sentence pairs."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from ..data.checks import check_same_length
from ..data.example import Example
from ..data.nli import NLIData
from .base import Evaluator, SupportsEncode

logger = logging.getLogger(__name__)

Classifier = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def macro_f1(predicted: Sequence[int] | np.ndarray, gold: Sequence[int] | np.ndarray) -> float:
    """Unweighted mean over classes of F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c).

    The classes are those occurring in `gold` or `predicted`, as in scikit-learn's
    ``f1_score(average="macro")``; a class that is predicted but never right scores 0.
    """
    p = np.asarray(predicted)
    g = np.asarray(gold)
    scores = []
    for c in np.union1d(p, g):
        tp = np.sum((p == c) & (g == c))
        wrong = np.sum((p == c) != (g == c))
        scores.append(2 * tp / (2 * tp + wrong))
    return float(np.mean(scores))


class LabelAccuracyEvaluator(Evaluator):
    """How often a classifier over pair embeddings picks the gold label (e.g. NLI with a softmax head).

    Each pair (a_i, b_i) is encoded to u_i = E(a_i), v_i = E(b_i); `classifier(u, v)` maps (batch, dim)
    tensors to (batch, num_labels) logits, as the SoftmaxLoss head does (a linear layer over
    (u, v, |u - v|)). With predictions y^_i = argmax_k logits_ik and gold labels y_i,

        accuracy = (1/n) sum_i [y^_i == y_i]                   (the primary metric)
        macro_f1 = mean over classes c of 2 TP_c / (2 TP_c + FP_c + FN_c)

    Embeddings come from ``encoder.encode(..., convert_to_tensor=True)`` and everything runs under
    `torch.no_grad`; a classifier that is an `nn.Module` is put in eval mode for the call (its mode is
    restored afterwards) and gets its inputs on its own device and dtype. Any other callable (e.g.
    ``lambda u, v: loss.classifier(loss.classifier_input(u, v))``) gets them on `device`, by default
    the encoder's device, where a loss built on that encoder keeps its head. Each distinct sentence
    is encoded once. Key names are not prefixed with `name`.
    """

    def __init__(
        self,
        sentence_pairs: Sequence[tuple[str, str]],
        labels: Sequence[int],
        classifier: Classifier,
        name: str = "",
        batch_size: int = 32,
        prompt_name: str | None = None,
        prompt: str | None = None,
        show_progress_bar: bool | None = None,
        device: str | torch.device | None = None,
    ) -> None:
        check_same_length(sentence_pairs=sentence_pairs, labels=labels)
        if not labels:
            raise ValueError("no sentence pairs to evaluate")
        for i, pair in enumerate(sentence_pairs):
            if len(pair) != 2:
                raise ValueError(f"sentence_pairs[{i}] has {len(pair)} texts, a pair needs 2")
        bad = next(
            (x for x in labels if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0), None
        )
        if bad is not None:
            raise ValueError(f"labels must be class indices (0 or more), got {bad!r}")
        if not callable(classifier):
            raise TypeError("classifier must be callable as classifier(u, v) -> logits")
        super().__init__(name, batch_size, prompt_name, prompt, show_progress_bar, "accuracy")
        self.sentences1 = [a for a, _ in sentence_pairs]
        self.sentences2 = [b for _, b in sentence_pairs]
        self.labels = [int(x) for x in labels]
        self.classifier = classifier
        self.device = device

    @classmethod
    def from_examples(
        cls, examples: Sequence[Example], classifier: Classifier, **kwargs: Any
    ) -> LabelAccuracyEvaluator:
        """An evaluator over ((a, b), class index) Examples, e.g. from `nli_pair_examples`."""
        pairs = []
        for i, example in enumerate(examples):
            if len(example.texts) != 2:
                raise ValueError(f"examples[{i}] has {len(example.texts)} texts, a pair needs 2")
            pairs.append((example.texts[0], example.texts[1]))
        labels = [e.label for e in examples]
        return cls(pairs, labels, classifier, **kwargs)  # type: ignore[arg-type]

    @classmethod
    def from_nli(cls, data: NLIData, classifier: Classifier, **kwargs: Any) -> LabelAccuracyEvaluator:
        """An evaluator over NLI premise/hypothesis pairs (e.g. from `read_nli`)."""
        return cls(list(zip(data.premises, data.hypotheses, strict=True)), data.labels, classifier, **kwargs)

    def __len__(self) -> int:
        return len(self.labels)

    def predict(self, encoder: SupportsEncode) -> np.ndarray:
        """The classifier's predicted class index for every pair."""
        unique = list(dict.fromkeys([*self.sentences1, *self.sentences2]))
        options = self.encode_options()
        target = self.device if self.device is not None else getattr(encoder, "device", None)
        module = self.classifier if isinstance(self.classifier, torch.nn.Module) else None
        parameter = next(iter(module.parameters()), None) if module is not None else None
        was_training = module.training if module is not None else False
        if module is not None:
            module.eval()
        try:
            with torch.no_grad():
                vectors = torch.as_tensor(encoder.encode(unique, convert_to_tensor=True, **options))
                if vectors.dim() != 2 or vectors.shape[0] != len(unique):
                    raise ValueError(
                        f"encoder returned shape {tuple(vectors.shape)} for {len(unique)} sentences, "
                        f"expected ({len(unique)}, dim)"
                    )
                if parameter is not None:
                    vectors = vectors.to(device=parameter.device, dtype=parameter.dtype)
                elif isinstance(target, (str, torch.device)):
                    vectors = vectors.to(target)
                row = {text: i for i, text in enumerate(unique)}
                index1 = torch.tensor([row[t] for t in self.sentences1], device=vectors.device)
                index2 = torch.tensor([row[t] for t in self.sentences2], device=vectors.device)
                predicted: list[torch.Tensor] = []
                for start in range(0, len(self.labels), self.batch_size):
                    u = vectors[index1[start : start + self.batch_size]]
                    v = vectors[index2[start : start + self.batch_size]]
                    logits = self.classifier(u, v)
                    if logits.dim() != 2 or logits.shape[0] != u.shape[0]:
                        raise ValueError(
                            f"classifier returned shape {tuple(logits.shape)} for {u.shape[0]} pairs, "
                            f"expected ({u.shape[0]}, num_labels)"
                        )
                    if logits.shape[1] <= max(self.labels):
                        raise ValueError(
                            f"classifier gives {logits.shape[1]} logits, "
                            f"but the labels go up to {max(self.labels)}"
                        )
                    predicted.append(logits.argmax(dim=1).cpu())
        finally:
            if module is not None:
                module.train(was_training)
        return torch.cat(predicted).numpy()

    def __call__(self, encoder: SupportsEncode) -> dict[str, float]:
        """Encode the pairs, classify them and return ``accuracy`` and ``macro_f1``."""
        predicted = self.predict(encoder)
        gold = np.asarray(self.labels)
        accuracy = float(np.mean(predicted == gold))
        f1 = macro_f1(predicted, gold)
        logger.info("Label accuracy %s: %.4f (macro F1 %.4f)", self.name or "evaluation", accuracy, f1)
        return {"accuracy": accuracy, "macro_f1": f1}
