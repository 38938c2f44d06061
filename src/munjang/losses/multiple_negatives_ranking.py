"""MultipleNegativesRankingLoss (Henderson et al., 2017; InfoNCE): in-batch negatives.

Columns: (anchor, positive[, hard negative 1, ..., hard negative k]). With s the similarity
(cosine by default) and scale λ (inverse temperature), each anchor a_i must pick its own positive
p_i out of every positive and hard negative of the batch (the candidates c):

    loss_{a→p} = mean_i −log( exp(λ·s(a_i, p_i)) / Σ_c exp(λ·s(a_i, c)) )

`symmetric=True` adds the other direction, each positive picking its anchor out of all anchors,
and averages the two (hard negatives take part only in the first direction):

    loss = ½ · (loss_{a→p} + loss_{p→a})

Only positive pairs are needed (e.g. NLI entailment pairs, question–answer pairs); a larger batch
means more negatives and usually a better model.

Several processes (DDP, `torchrun`): with `gather_across_devices=True` (the default) and a process
group of W > 1 processes, every column is all-gathered before scoring, so the candidates are those
of the global batch of N = Σ_r n_r examples (rank r holds n_r) and the anchor i of rank r has its
positive at column offset_r + i, offset_r = Σ_{s<r} n_s. Rank r returns

    loss_r = (W / N) · Σ_{i on rank r} ℓ_i        (the mean over its own anchors when n_r = N / W)

where ℓ_i is anchor i's term above (both directions when symmetric). DDP averages the gradients
of the ranks; the gather's backward sums, over the ranks, the gradients reaching each rank's rows
(see `distributed.all_gather_with_grad`), so rank r's backward gives the part of ∇(Σ_s loss_s)
that flows through its own embeddings, and the average is (1/W)·∇ Σ_s loss_s = ∇ (1/N) Σ_i ℓ_i:
the gradient of one process with the whole batch. With one process (or no process group) the
option changes nothing; `gather_across_devices=False` keeps each process to its own negatives.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from .. import similarity as sim
from ..encoders.dense.encoder import SentenceEncoder
from .base import SentenceLoss
from .distributed import all_gather_with_grad, rank_and_world

SIMILARITY_FUNCTIONS = ("cosine", "dot")

HENDERSON_CITATION = """@misc{henderson2017efficient,
    title={Efficient Natural Language Response Suggestion for Smart Reply},
    author={Matthew Henderson and Rami Al-Rfou and Brian Strope and Yun-hsuan Sung
        and Laszlo Lukacs and Ruiqi Guo and Sanjiv Kumar and Balint Miklos and Ray Kurzweil},
    year={2017},
    eprint={1705.00652},
    archivePrefix={arXiv},
    primaryClass={cs.CL}
}"""


class MultipleNegativesRankingLoss(SentenceLoss):
    """Cross-entropy of each anchor against its positive, with the other in-batch texts as negatives.

    Under DDP the batch is the global one: `gather_across_devices` (default True) gathers every
    process's embeddings, with gradients, so negatives span all processes (see the module docstring).
    """

    max_columns = None
    label_kind = None
    citation = HENDERSON_CITATION

    def __init__(
        self,
        model: SentenceEncoder,
        scale: float = 20.0,
        similarity_fct: str = "cosine",
        symmetric: bool = False,
        gather_across_devices: bool = True,
    ) -> None:
        super().__init__(model)
        if not scale > 0:
            raise ValueError(f"scale must be positive, not {scale}")
        if similarity_fct not in SIMILARITY_FUNCTIONS:
            raise ValueError(
                f"unknown similarity function {similarity_fct!r}; "
                f"choose from {', '.join(SIMILARITY_FUNCTIONS)}"
            )
        self.scale = scale
        self.similarity_fct = similarity_fct
        self.symmetric = symmetric
        self.gather_across_devices = gather_across_devices

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        self.check_columns(len(embeddings))
        columns, offset, weight = self._global_columns(embeddings)
        anchors, positives = embeddings[0], embeddings[1]
        scores, targets = self._anchor_logits(anchors, columns, offset)
        loss = F.cross_entropy(scores, targets)
        if self.symmetric:
            backward_scores = sim.similarity(positives, columns[0], self.similarity_fct) * self.scale
            loss = (loss + F.cross_entropy(backward_scores, targets)) / 2
        return loss if weight == 1 else loss * weight

    def logits(self, embeddings: list[Tensor]) -> tuple[Tensor, Tensor]:
        """Scaled similarities of this process's anchors to every candidate, and each anchor's target.

        Shape (local anchors, (columns − 1) · global batch): the positives, then each hard-negative
        column, each over the global batch in rank order (the local batch without gathering).
        Collective when gathering: every process must call it.
        """
        self.check_columns(len(embeddings))
        columns, offset, _ = self._global_columns(embeddings)
        return self._anchor_logits(embeddings[0], columns, offset)

    def _global_columns(self, embeddings: list[Tensor]) -> tuple[list[Tensor], int, float]:
        """Every column over the global batch, where this process's rows start in it, and the
        weight W·n_r/N of this process's mean loss (1 when the ranks hold equal shares)."""
        world = rank_and_world()[1]
        if not self.gather_across_devices or world == 1:
            return embeddings, 0, 1.0
        gathered = all_gather_with_grad(torch.stack(embeddings, dim=1))  # one collective for all columns
        weight = world * gathered.local / gathered.total
        return list(gathered.rows.unbind(dim=1)), gathered.offset, weight

    def _anchor_logits(self, anchors: Tensor, columns: list[Tensor], offset: int) -> tuple[Tensor, Tensor]:
        candidates = torch.cat(columns[1:], dim=0)
        targets = torch.arange(offset, offset + anchors.shape[0], device=anchors.device)
        return sim.similarity(anchors, candidates, self.similarity_fct) * self.scale, targets

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "similarity_fct": self.similarity_fct,
            "symmetric": self.symmetric,
            "gather_across_devices": self.gather_across_devices,
        }
