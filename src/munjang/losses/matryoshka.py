"""MatryoshkaLoss (Kusupati et al., 2022): train embeddings whose prefixes are embeddings too.

The wrapped loss L is applied to the first m dimensions of every embedding, for each m in
`matryoshka_dims`, and the results are weighted and summed:

    loss = Σ_m w_m · L(e[:, :m] for each column)

The embeddings are computed once per batch; each dimension reuses them, truncated. Cosine-based
losses (CoSENT, cosine similarity, MNRL with cosine, cosine distances) renormalize implicitly,
since cosine similarity ignores vector length; no extra normalization is applied, so for the full
dimension the term equals the wrapped loss exactly. Teacher-embedding labels (MSELoss) are
truncated alongside. SoftmaxLoss cannot be wrapped: its classifier expects full-size input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from ..encoders.dense.encoder import SentenceEncoder
from .base import SentenceLoss
from .softmax import SoftmaxLoss

MATRYOSHKA_CITATION = """@misc{kusupati2024matryoshka,
    title={Matryoshka Representation Learning},
    author={Aditya Kusupati and Gantavya Bhatt and Aniket Rege and Matthew Wallingford
        and Aditya Sinha and Vivek Ramanujan and William Howard-Snyder and Kaifeng Chen
        and Sham Kakade and Prateek Jain and Ali Farhadi},
    year={2024},
    eprint={2205.13147},
    archivePrefix={arXiv},
    primaryClass={cs.LG}
}"""


class MatryoshkaLoss(SentenceLoss):
    """Weighted sum of `loss` over embeddings truncated to each of `matryoshka_dims`."""

    citation = MATRYOSHKA_CITATION

    def __init__(
        self,
        model: SentenceEncoder,
        loss: SentenceLoss,
        matryoshka_dims: Sequence[int],
        matryoshka_weights: Sequence[float] | None = None,
    ) -> None:
        super().__init__(model)
        if not isinstance(loss, SentenceLoss) or isinstance(loss, (SoftmaxLoss, MatryoshkaLoss)):
            raise ValueError(
                f"MatryoshkaLoss cannot wrap {type(loss).__name__}: it needs a munjang embedding loss "
                "(not SoftmaxLoss, whose classifier expects full-size embeddings, nor another MatryoshkaLoss)"
            )
        if type(loss).forward is not SentenceLoss.forward:  # embeds its own way (cached, guided, decoder)
            raise ValueError(
                f"MatryoshkaLoss cannot wrap {type(loss).__name__}: it embeds the batch its own way, "
                "so its loss cannot be recomputed on truncated embeddings"
            )
        if loss.model is not model:
            raise ValueError("MatryoshkaLoss and the loss it wraps must train the same model")
        if not matryoshka_dims:
            raise ValueError("matryoshka_dims must name at least one dimension")
        full = model.get_embedding_dimension()
        bad = [d for d in matryoshka_dims if not 1 <= d <= full]
        if bad:
            raise ValueError(f"matryoshka_dims must lie between 1 and the embedding dimension {full}: {bad}")
        if len(set(matryoshka_dims)) != len(matryoshka_dims):
            raise ValueError(f"matryoshka_dims has repeated dimensions: {list(matryoshka_dims)}")
        weights = [1.0] * len(matryoshka_dims) if matryoshka_weights is None else list(matryoshka_weights)
        if len(weights) != len(matryoshka_dims):
            raise ValueError(
                f"matryoshka_weights has {len(weights)} entries "
                f"but matryoshka_dims has {len(matryoshka_dims)}"
            )
        pairs = sorted(zip(matryoshka_dims, weights, strict=True), key=lambda pair: pair[0], reverse=True)
        self.loss = loss
        self.matryoshka_dims: tuple[int, ...] = tuple(int(d) for d, _ in pairs)
        self.matryoshka_weights: tuple[float, ...] = tuple(float(w) for _, w in pairs)
        self.min_columns = loss.min_columns
        self.max_columns = loss.max_columns
        self.label_kind = loss.label_kind

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        self.check_columns(len(embeddings))
        full = embeddings[0].shape[-1]
        teacher_labels = (
            labels is not None
            and labels.is_floating_point()
            and labels.dim() in (2, 3)
            and labels.shape[-1] == full
        )
        total: Tensor | None = None
        for dim, weight in zip(self.matryoshka_dims, self.matryoshka_weights, strict=True):
            truncated = [e[..., :dim] for e in embeddings]
            dim_labels = labels[..., :dim] if teacher_labels and labels is not None else labels
            term = weight * self.loss.compute_from_embeddings(truncated, dim_labels)
            total = term if total is None else total + term
        assert total is not None
        return total

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "loss": type(self.loss).__name__,
            "matryoshka_dims": list(self.matryoshka_dims),
            "matryoshka_weights": list(self.matryoshka_weights),
        }
