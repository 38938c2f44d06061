"""AnglELoss (Li & Li, 2024): CoSENT's ranking objective over an angle similarity instead of the cosine.

The cosine's gradient vanishes near ±1, where STS pairs with high scores sit. AnglE splits each
normalized embedding into halves x = (a, b), reads it as the complex vector a + ib, and scores a
pair by the real and imaginary parts of their complex quotient; as in the authors' reference code
and sentence-transformers, with x = (a₁, b₁) and y = (a₂, b₂) normalized,

    s(x, y) = |cos(x, y) + (b₁·a₂ − a₁·b₂)|

and the loss is CoSENT's over these scores: log(1 + Σ_{y_i > y_j} exp(λ · (s_j − s_i))).
An odd dimension is padded with one zero. Models trained with it are still used with cosine.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .cosent import CoSENTLoss

ANGLE_CITATION = """@article{li2023angle,
    title={AnglE-optimized Text Embeddings},
    author={Li, Xianming and Li, Jing},
    journal={arXiv preprint arXiv:2309.12871},
    year={2023}
}"""


def pairwise_angle_similarity(u: Tensor, v: Tensor) -> Tensor:
    """`|cos(u_i, v_i) + sin-term|` row by row, the halves of each normalized row paired as in AnglE."""
    if u.shape[-1] % 2:
        u, v = F.pad(u, (0, 1)), F.pad(v, (0, 1))
    u, v = F.normalize(u, p=2, dim=-1), F.normalize(v, p=2, dim=-1)
    cosines = (u * v).sum(dim=-1)
    a1, b1 = torch.chunk(u, 2, dim=-1)
    a2, b2 = torch.chunk(v, 2, dim=-1)
    sines = (b1 * a2 - a1 * b2).sum(dim=-1)
    return torch.abs(cosines + sines)


class AnglELoss(CoSENTLoss):
    """CoSENT over `pairwise_angle_similarity`: `log(1 + Σ_{y_i > y_j} exp(scale · (s_j − s_i)))`."""

    citation = ANGLE_CITATION

    def pair_scores(self, u: Tensor, v: Tensor) -> Tensor:
        return pairwise_angle_similarity(u, v)
