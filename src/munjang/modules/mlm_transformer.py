"""MLMTransformer: a masked-language model whose MLM head gives one vocabulary-wide logit row per token,
the first step of a SPLADE sparse encoder.

It is the `Transformer` module with `task="fill-mask"`. munjang writes it under the name
sentence-transformers 5 gave it (`sparse_encoder.models.MLMTransformer`, with the classic
sentence_bert_config.json), which every SparseEncoder release reads; sentence-transformers 6 writes a
`Transformer` with `transformer_task: "fill-mask"` instead, and munjang reads both.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .transformer import Transformer


class MLMTransformer(Transformer):
    """A `*ForMaskedLM` backbone and its tokenizer; produces the MLM logits as `token_embeddings`."""

    st_type: ClassVar[str] = "sentence_transformers.sparse_encoder.models.MLMTransformer"
    default_task: ClassVar[str] = "fill-mask"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_seq_length: int | None = None,
        do_lower_case: bool = False,
        task: str = "fill-mask",
    ) -> None:
        if task != "fill-mask":
            raise ValueError(f"an MLMTransformer gives MLM logits (task 'fill-mask'), not {task!r}")
        super().__init__(model, tokenizer, max_seq_length, do_lower_case, task)

    @property
    def vocab_size(self) -> int:
        return self.output_dimension

    def get_config_dict(self) -> dict[str, Any]:
        return {"max_seq_length": self.max_seq_length, "do_lower_case": self.do_lower_case}
