"""CLIPModel: the input module of an image + text encoder (OpenAI CLIP and its descendants). Texts go
through CLIP's text tower and images through its vision tower; both end in the same projection
space, so a caption and a picture of it land near each other.

Saved as sentence-transformers saves CLIP, at the model root: the Hugging Face `CLIPModel` weights
(`config.json`, `model.safetensors`), its processor (tokenizer + image processor files) and
`sentence_bert_config.json` naming the text and image methods. Folders that sentence-transformers
typed `CLIPModel` (any generation) or its generic `Transformer` (v5.4+) load, and so does a plain
Hugging Face CLIP checkpoint (`config.json` with `model_type` "clip").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch

from .._util.extras import require
from ..errors import ModelLoadError
from .base import Features, Module, read_json, write_json
from .transformer import _quiet_transformers

# What sentence-transformers (v5.4+) writes into sentence_bert_config.json for a CLIP model.
ST_CONFIG = {
    "transformer_task": "feature-extraction",
    "modality_config": {
        "text": {"method": "get_text_features", "method_output_name": "pooler_output"},
        "image": {"method": "get_image_features", "method_output_name": "pooler_output"},
    },
    "module_output_name": "sentence_embedding",
}


def is_clip_folder(path: str | Path) -> bool:
    """Whether `path` holds a Hugging Face CLIP checkpoint (its config.json says model_type "clip")."""
    config = Path(path) / "config.json"
    if not config.exists():
        return False
    data = read_json(config)
    return isinstance(data, dict) and data.get("model_type") == "clip"


class CLIPModel(Module):
    """Text and image embeddings from one CLIP model.

    `tokenize(texts)` gives the text features and `preprocess_images(images)` the image features;
    `forward` runs the tower the features belong to and writes `sentence_embedding` (the projected
    vector, not normalized, as sentence-transformers returns it).
    """

    st_type: ClassVar[str] = "sentence_transformers.models.CLIPModel"
    folder_name: ClassVar[str] = ""

    def __init__(self, model: Any, processor: Any) -> None:
        super().__init__()
        self.model = model
        self.processor = processor

    @property
    def tokenizer(self) -> Any:
        return self.processor.tokenizer

    @property
    def output_dimension(self) -> int:
        return int(self.model.config.projection_dim)

    @property
    def max_seq_length(self) -> int:
        """Tokens kept per text: the tokenizer's limit, never past the text tower's positions."""
        positions = int(self.model.config.text_config.max_position_embeddings)
        return min(int(self.tokenizer.model_max_length), positions)

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        positions = int(self.model.config.text_config.max_position_embeddings)
        if not 1 <= value <= positions:
            raise ValueError(f"max_seq_length must be between 1 and the model limit {positions}, not {value}")
        self.tokenizer.model_max_length = value

    def describe(self) -> dict[str, Any]:
        """The architecture part of `SentenceEncoder.describe` (what `munjang info` prints)."""
        config = self.model.config
        return {
            "architecture": "CLIPModel",
            "model_type": "clip",
            "vocab_size": int(config.text_config.vocab_size),
            "image_size": int(config.vision_config.image_size),
        }

    def tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Padded `input_ids` and `attention_mask` for `texts`, cut at `max_seq_length` tokens."""
        encoded = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_seq_length, return_tensors="pt"
        )
        return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}

    def preprocess_images(self, images: Sequence[Any]) -> dict[str, torch.Tensor]:
        """`pixel_values` for PIL images (resized, cropped and normalized by the model's processor)."""
        rgb = [image.convert("RGB") for image in images]
        pixels = self.processor.image_processor(rgb, return_tensors="pt")
        return {"pixel_values": pixels["pixel_values"]}

    def forward(self, features: Features) -> Features:
        if "pixel_values" in features:
            out = self.model.get_image_features(pixel_values=features["pixel_values"])
        else:
            out = self.model.get_text_features(
                input_ids=features["input_ids"], attention_mask=features["attention_mask"]
            )
        features["sentence_embedding"] = out if isinstance(out, torch.Tensor) else out.pooler_output
        return features

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(path))
        self.processor.save_pretrained(str(path))
        write_json(path / "sentence_bert_config.json", ST_CONFIG)

    @classmethod
    def load(
        cls,
        path: str | Path,
        dtype: str | torch.dtype = torch.float32,
        max_seq_length: int | None = None,
        **kwargs: Any,
    ) -> CLIPModel:
        """Read a CLIP checkpoint and its processor from `path` (safetensors weights, or else
        `pytorch_model.bin` through the weights-only unpickler)."""
        require("PIL")
        from transformers import CLIPModel as HFCLIPModel
        from transformers import CLIPProcessor

        path = Path(path)
        if not is_clip_folder(path):
            raise ModelLoadError(f"{path}: config.json does not describe a CLIP model (model_type 'clip')")
        safetensors = any(path.glob("*.safetensors"))
        if not safetensors and not any(path.glob("pytorch_model*.bin")):
            raise ModelLoadError(f"{path}: no weights (model.safetensors) in the CLIP model folder")
        _quiet_transformers()
        try:  # a pytorch_model.bin is read by torch's weights-only unpickler: tensors, no code
            model = HFCLIPModel.from_pretrained(str(path), dtype=dtype, use_safetensors=safetensors)
            processor = CLIPProcessor.from_pretrained(str(path))
        except (OSError, ValueError, TypeError) as e:
            raise ModelLoadError(f"{path}: cannot load the CLIP model or its processor ({e})") from e
        module = cls(model.eval(), processor)
        if max_seq_length is not None:
            module.max_seq_length = max_seq_length
        return module

    def extra_repr(self) -> str:
        return f"dim={self.output_dimension}, image_size={self.model.config.vision_config.image_size}"
