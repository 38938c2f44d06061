"""DenoisingAutoEncoderLoss (TSDAE; Wang, Reimers and Gurevych, 2021): unsupervised sentence vectors.

Columns: (damaged, original), as `data.denoising.DenoisingDataset` builds them. The encoder turns
the damaged sentence into one vector s; a transformer decoder, cross-attending to s alone (a memory
of length one), must write the original sentence back, token by token:

    loss = mean over non-padding target positions t of −log p(x_t | x_<t, s)

The decoder is the encoder's own architecture built with `is_decoder=True, add_cross_attention=True`
(a causal self-attention plus a cross-attention in every layer) and, as in sentence-transformers,
tied to the encoder: its embeddings and layers are the encoder's parameters, only the
cross-attention and the LM head are its own, and the LM head's output projection is the word
embedding matrix. The encoder is what is kept after training; the decoder is thrown away.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch.nn.functional as F
from torch import Tensor

from ..encoders.dense.encoder import SentenceEncoder
from .base import SentenceLoss
from .lm_head import backbone_folder, load_head_weights, share_backbone

TSDAE_CITATION = """@inproceedings{wang-2021-TSDAE,
    title = "TSDAE: Using Transformer-based Sequential Denoising Auto-Encoder for Unsupervised Sentence
        Embedding Learning",
    author = "Wang, Kexin and Reimers, Nils and Gurevych, Iryna",
    booktitle = "Findings of the Association for Computational Linguistics: EMNLP 2021",
    year = "2021",
    pages = "671--688",
    url = "https://arxiv.org/abs/2104.06979",
}"""


class DenoisingAutoEncoderLoss(SentenceLoss):
    """Reconstruct each original sentence from the encoder's vector of its damaged copy.

    `tie_encoder_decoder=False` gives the decoder its own copy of the encoder's weights instead of
    sharing them (more memory, the paper's weaker setting). `head_weights` lists the LM-head tensors
    read from the encoder's checkpoint ([] when the head was initialised afresh).
    """

    min_columns = 2
    max_columns = 2
    label_kind = None
    citation = TSDAE_CITATION

    def __init__(self, model: SentenceEncoder, tie_encoder_decoder: bool = True) -> None:
        super().__init__(model)
        from transformers import AutoModelForCausalLM

        if model.static is not None:
            raise ValueError("TSDAE needs a transformer encoder; a static embedding model has no decoder")
        backbone = model.transformer.auto_model
        config = copy.deepcopy(backbone.config)
        config.is_decoder = True
        config.add_cross_attention = True
        try:
            decoder = AutoModelForCausalLM.from_config(config)
        except ValueError as e:
            raise ValueError(
                f"TSDAE: a {config.model_type!r} model cannot be built as a decoder with a language-model "
                f"head ({e})"
            ) from None
        base = getattr(decoder, decoder.base_model_prefix)
        if tie_encoder_decoder:
            if share_backbone(backbone, base) == 0:
                raise ValueError("TSDAE: no encoder weight matched the decoder's; are they the same model?")
        else:
            base.load_state_dict(backbone.state_dict(), strict=False)
        decoder.tie_weights()  # the output projection follows the (now shared) word embeddings
        self.head_weights = load_head_weights(decoder, backbone_folder(backbone))
        self.decoder = decoder
        self.tie_encoder_decoder = tie_encoder_decoder
        self.pad_token_id = model.transformer.pad_token_id

    def forward(self, sentence_features: Sequence[dict[str, Any]], labels: Tensor | None) -> Tensor:
        self.check_columns(len(sentence_features))
        device = self.model.device
        source, target = (
            {k: v.to(device) if isinstance(v, Tensor) else v for k, v in f.items()} for f in sentence_features
        )
        vectors = self.model(source)["sentence_embedding"]
        ids = target["input_ids"]
        logits = self.decoder(
            input_ids=ids[:, :-1],
            encoder_hidden_states=vectors[:, None],
            encoder_attention_mask=source["attention_mask"][:, 0:1],
            use_cache=False,
        ).logits
        return F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), ignore_index=self.pad_token_id
        )

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        raise ValueError("TSDAE decodes token ids, so it cannot be computed from embeddings alone")

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "tie_encoder_decoder": self.tie_encoder_decoder,
            "head_from_checkpoint": bool(self.head_weights),
        }
