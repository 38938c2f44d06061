"""MaskedLanguageModelingLoss: continued masked-language-model pretraining of an encoder's backbone.

Columns: (text,). Each batch is masked afresh (dynamic masking, as in RoBERTa): of the tokens that
are neither special nor padding, each is chosen with probability p (0.15); a chosen token becomes
the mask token with probability 0.8, a random vocabulary token with 0.1, and stays as it is with
0.1. The loss is the cross-entropy of the LM head's prediction of the original token at the chosen
positions only:

    loss = mean over chosen positions t of −log p(x_t | x̃)

The head is scored only at the chosen positions, which spares a multilingual model's vocabulary-wide
projection on the other ~85% of tokens. The head is the checkpoint's own where the encoder's folder
kept it (`head_weights` names the tensors read), else a new one whose output projection is the word
embedding matrix (see `lm_head`). Only the encoder is saved after training.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..encoders.dense.encoder import SentenceEncoder
from .base import SentenceLoss
from .lm_head import backbone_folder, head_children, load_head_weights

IGNORE = -100

DEVLIN_CITATION = """@inproceedings{devlin-2019-bert,
    title = "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
    author = "Devlin, Jacob and Chang, Ming-Wei and Lee, Kenton and Toutanova, Kristina",
    booktitle = "Proceedings of NAACL-HLT 2019",
    year = "2019",
    url = "https://arxiv.org/abs/1810.04805",
}"""


def mask_tokens(
    input_ids: Tensor,
    attention_mask: Tensor,
    special_ids: Sequence[int],
    mask_id: int,
    vocab_size: int,
    probability: float = 0.15,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """(masked input ids, labels): BERT's 80/10/10 masking; labels are IGNORE where nothing is asked.

    At least one maskable token per batch is chosen, so a batch of short texts still has a target.
    """
    special = torch.isin(input_ids, torch.tensor(list(special_ids), device=input_ids.device))
    candidates = attention_mask.bool() & ~special
    draws = torch.rand(input_ids.shape, generator=generator, device=input_ids.device)
    chosen = (draws < probability) & candidates
    if not chosen.any() and candidates.any():
        flat = candidates.flatten().nonzero().flatten()
        pick = flat[torch.randint(len(flat), (1,), generator=generator, device=input_ids.device)]
        chosen.view(-1)[pick] = True
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    action = torch.rand(input_ids.shape, generator=generator, device=input_ids.device)
    masked = input_ids.clone()
    masked[chosen & (action < 0.8)] = mask_id
    randomised = chosen & (action >= 0.8) & (action < 0.9)
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator, device=input_ids.device)
    masked[randomised] = random_ids[randomised]
    return masked, labels


class MaskedLanguageModelingLoss(SentenceLoss):
    """Predict masked tokens with the backbone and an LM head; trains the encoder's transformer only
    (pooling and the rest of the pipeline are kept as they are)."""

    min_columns = 1
    max_columns = 1
    label_kind = None
    citation = DEVLIN_CITATION

    def __init__(self, model: SentenceEncoder, mask_probability: float = 0.15) -> None:
        super().__init__(model)
        from transformers import AutoModelForMaskedLM

        if model.static is not None:
            raise ValueError("masked-language-model training needs a transformer encoder, not a static model")
        if not 0 < mask_probability < 1:
            raise ValueError(f"mask_probability must be in (0, 1), not {mask_probability}")
        tokenizer = model.transformer.tokenizer
        if tokenizer.mask_token_id is None:
            raise ValueError("the model's tokenizer has no mask token, so it cannot be trained by masking")
        backbone = model.transformer.auto_model
        try:
            lm_model = AutoModelForMaskedLM.from_config(copy.deepcopy(backbone.config))
        except ValueError as e:
            raise ValueError(f"a {backbone.config.model_type!r} model has no masked-LM head ({e})") from None
        setattr(lm_model, lm_model.base_model_prefix, backbone)  # the head reads the encoder's backbone
        lm_model.tie_weights()
        self.head_weights = load_head_weights(lm_model, backbone_folder(backbone))
        names = head_children(lm_model)
        if len(names) != 1:
            raise ValueError(f"expected one masked-LM head module, found {names}")
        self.head = getattr(lm_model, names[0])
        self.mask_probability = mask_probability
        self.mask_id = int(tokenizer.mask_token_id)
        self.special_ids = sorted(set(tokenizer.all_special_ids))
        self.vocab_size = int(backbone.config.vocab_size)

    def forward(self, sentence_features: Sequence[dict[str, Any]], labels: Tensor | None) -> Tensor:
        self.check_columns(len(sentence_features))
        device = self.model.device
        features = {k: v.to(device) for k, v in sentence_features[0].items() if isinstance(v, Tensor)}
        masked, targets = mask_tokens(
            features["input_ids"],
            features["attention_mask"],
            self.special_ids,
            self.mask_id,
            self.vocab_size,
            self.mask_probability,
        )
        inputs = {k: v for k, v in features.items() if k in ("attention_mask", "token_type_ids")}
        hidden = self.model.transformer.auto_model(input_ids=masked, **inputs).last_hidden_state
        chosen = targets != IGNORE
        logits = self.head(hidden[chosen])
        return F.cross_entropy(logits, targets[chosen])

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        raise ValueError("masked-language-model training predicts tokens; it has no sentence-vector form")

    def get_config_dict(self) -> dict[str, Any]:
        return {"mask_probability": self.mask_probability, "head_from_checkpoint": bool(self.head_weights)}
