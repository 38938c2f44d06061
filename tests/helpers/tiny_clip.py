"""A tiny randomly initialised CLIP (text and vision towers of hidden 32, 2 layers, 32x32 images) with
its processor, built offline: a byte-level BPE vocabulary of letters written here, no download."""

from __future__ import annotations

import json
import string
from pathlib import Path

import numpy as np
import torch

PROJECTION_DIM = 16


def write_tokenizer_files(folder: Path) -> tuple[Path, Path]:
    """vocab.json and merges.txt of a CLIP BPE over lowercase letters, digits and a few merges."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab: dict[str, int] = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for ch in string.ascii_lowercase + string.digits:
        vocab[ch] = len(vocab)
        vocab[ch + "</w>"] = len(vocab)
    merges = ["t h", "th e</w>", "c a", "ca t</w>", "d o", "do g</w>"]
    for merge in merges:
        vocab.setdefault(merge.replace(" ", ""), len(vocab))
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    return folder / "vocab.json", folder / "merges.txt"


def tiny_clip(work: Path, seed: int = 0) -> tuple[object, object]:
    """A random transformers `CLIPModel` and its `CLIPProcessor`."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizerFast

    vocab, merges = write_tokenizer_files(work / "bpe")
    tokenizer = CLIPTokenizerFast(str(vocab), str(merges), model_max_length=24)
    small = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}
    config = CLIPConfig(
        text_config={**small, "vocab_size": len(tokenizer), "max_position_embeddings": 24,
                     "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1},
        vision_config={**small, "image_size": 32, "patch_size": 8},
        projection_dim=PROJECTION_DIM,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = CLIPModel(config).eval()
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    return model, CLIPProcessor(image_processor=images, tokenizer=tokenizer)


def save_hf_clip(folder: Path, seed: int = 0) -> Path:
    """A plain Hugging Face CLIP checkpoint folder (config, safetensors weights, processor)."""
    model, processor = tiny_clip(folder.parent / f"{folder.name}-bpe", seed)
    model.save_pretrained(str(folder))  # type: ignore[attr-defined]
    processor.save_pretrained(str(folder))  # type: ignore[attr-defined]
    return folder


def save_st_clip(folder: Path, seed: int = 0) -> Path:
    """The tiny CLIP wrapped in sentence-transformers' CLIPModel module and saved by it."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import CLIPModel as STCLIPModel

    hf = save_hf_clip(folder.parent / f"{folder.name}-hf", seed)
    SentenceTransformer(modules=[STCLIPModel(str(hf))], device="cpu").save(str(folder))
    return folder


def random_image(seed: int, size: tuple[int, int] = (40, 48)):  # type: ignore[no-untyped-def]
    """A PIL RGB image of random pixels (not square, so the processor resizes and crops)."""
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


def write_images(folder: Path, count: int, suffix: str = ".png") -> list[Path]:
    """`count` random images saved as files in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = folder / f"image{i}{suffix}"
        random_image(100 + i).save(path)
        paths.append(path)
    return paths


def image_collection(folder: Path, encoder: object, count: int = 6) -> tuple[Path, list[Path]]:
    """A collection folder of `count` random images (ids image0.png, ...) encoded by a CLIP `encoder`."""
    from munjang.search import Collection

    files = write_images(folder.parent / f"{folder.name}-pictures", count)
    with Collection.create(folder, encoder.model_folder, encoder=encoder) as col:  # type: ignore[attr-defined]
        col.add_images(files)
    return folder, files
