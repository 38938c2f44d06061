"""SentenceEncoder: an ordered pipeline of modules (Transformer -> Pooling -> [Dense] -> [Normalize],
or StaticEmbedding -> [Dense] -> [Normalize]) that turns sentences into fixed-size vectors, and the
loader that builds one from a folder or hub id."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from ... import similarity as sim
from ..._util.devices import resolve_device
from ...images import is_image_input
from ...inference.base import TokenBackend, map_token_embeddings
from ...inference.batching import Chunk, prepared_chunks, token_budget_batches
from ...inference.hardware import torch_threads
from ...inference.whole_inputs import encode_whole
from ...models.hub import resolve_model_path
from ...modules import Dense, Module, Normalize, Pooling, StaticEmbedding, Transformer
from ...modules.clip import CLIPModel
from ...modules.pipeline import replace_pooling
from ..formats import SIMILARITY_FUNCTIONS, EncoderSettings, read_encoder_folder, write_modules
from ..settings import prompt_text, side_prompt_name
from .backend_selection import BackendSelection, normalized

# Below this many sentences, encode() shows no progress bar unless asked.
PROGRESS_BAR_MIN_SENTENCES = 1024
# Default batching: padded tokens and rows per batch, and sentences tokenized per chunk.
DEFAULT_MAX_TOKENS = 2048
DEFAULT_MAX_ROWS = 256
TOKENIZE_CHUNK = 4096

OutputValue = Literal["sentence_embedding", "token_embeddings"]


# Token counts of distinct prompts remembered (a server sees one per request instruction).
PROMPT_LENGTHS_KEPT = 256


class SentenceEncoder(BackendSelection, nn.Sequential):
    """Transformer + pooling (+ dense, normalize): one vector per sentence. A static model
    (StaticEmbedding first, no pooling) encodes on torch only; transformer-only calls raise for it.

    Build one with `load_encoder(...)`, or from modules:
    `SentenceEncoder([Transformer.load(path), Pooling(384)])`.
    """

    def __init__(
        self,
        modules: Sequence[Module],
        prompts: dict[str, str] | None = None,
        default_prompt_name: str | None = None,
        similarity_fn_name: str = "cosine",
        device: str | torch.device | None = None,
    ) -> None:
        if not modules or not isinstance(modules[0], (Transformer, StaticEmbedding, CLIPModel)):
            raise ValueError("a SentenceEncoder starts with a Transformer, StaticEmbedding or CLIPModel")
        super().__init__(*modules)
        self.prompts: dict[str, str] = dict(prompts or {})
        if default_prompt_name is not None and default_prompt_name not in self.prompts:
            raise ValueError(
                f"default_prompt_name {default_prompt_name!r} is not one of {sorted(self.prompts)}"
            )
        self.default_prompt_name = default_prompt_name
        if similarity_fn_name not in SIMILARITY_FUNCTIONS:
            raise ValueError(f"similarity_fn_name must be one of {SIMILARITY_FUNCTIONS}")
        self.similarity_fn_name = similarity_fn_name
        self._device_lock = threading.Lock()
        self.model_folder: Path | None = None
        self._init_backends()
        self._prompt_lengths: dict[str, int] = {}
        self.to(resolve_device(device))
        self.eval()

    # -- introspection -------------------------------------------------------------------------
    @property
    def transformer(self) -> Transformer:
        module = self[0]
        if not isinstance(module, Transformer):
            kind = "a static embedding" if isinstance(module, StaticEmbedding) else "a CLIP (image + text)"
            raise TypeError(f"this is {kind} model: it has no transformer (encode it instead)")
        return module

    @property
    def static(self) -> StaticEmbedding | None:
        """The StaticEmbedding module of a static model, None for a transformer model."""
        module = self[0]
        return module if isinstance(module, StaticEmbedding) else None

    @property
    def clip(self) -> CLIPModel | None:
        """The CLIPModel module of an image + text model, None for a text-only model."""
        module = self[0]
        return module if isinstance(module, CLIPModel) else None

    @property
    def encodes_whole_texts(self) -> bool:
        """True for a model with no token-id path to batch (CLIP, static): it encodes whole texts
        (`encoders.whole_text.WholeTextEncoder`), as a server must serve it."""
        return not isinstance(self[0], Transformer)

    @property
    def input_module(self) -> Transformer | StaticEmbedding | CLIPModel:
        """The first module, which tokenizes: the Transformer, a static model's StaticEmbedding or CLIP."""
        module = self[0]
        assert isinstance(module, (Transformer, StaticEmbedding, CLIPModel))
        return module

    @property
    def tokenizer(self) -> Any:
        return self.input_module.tokenizer

    @property
    def max_seq_length(self) -> int:
        return self.input_module.max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        if self.static is not None:
            raise ValueError("a static model truncates as its tokenizer does; max_seq_length is fixed")
        if self.clip is not None:
            self.clip.max_seq_length = value
            return
        limit = self.transformer._model_limit()
        if not 1 <= value <= limit:
            raise ValueError(f"max_seq_length must be between 1 and the model's limit {limit}, not {value}")
        self.transformer.max_seq_length = value

    @property
    def device(self) -> torch.device:
        # nn.Module's own walk: freed weights (encoder_backend.py) are still on their device
        return next(nn.Module.named_parameters(self))[1].device

    # -- freed weights come back before anything reads them (encoder_backend.py) ----------------
    def named_parameters(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, nn.Parameter]]:
        self.restore_torch_weights()
        return super().named_parameters(*args, **kwargs)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        self.restore_torch_weights()
        return super().state_dict(*args, **kwargs)

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        weights = getattr(self, "torch_weights", None)  # nn.Module's own set-up moves before it exists
        if weights is not None and weights.is_released:
            self.restore_torch_weights()
        return super()._apply(fn, recurse)

    def forward(self, features: Any) -> Any:
        self.restore_torch_weights()
        return super().forward(features)

    @property
    def pooling(self) -> Pooling | None:
        return next((m for m in self if isinstance(m, Pooling)), None)

    @property
    def normalizes(self) -> bool:
        """True when the pipeline ends in a Normalize module (vectors have unit length)."""
        return isinstance(self[-1], Normalize)

    def get_embedding_dimension(self) -> int:
        """Length of the vectors `encode` returns (before any `truncate_dim`)."""
        dim = self.input_module.output_dimension
        for module in self:
            if isinstance(module, (Pooling, Dense)):
                dim = module.output_dimension
        return dim

    def describe(self) -> dict[str, Any]:
        """What `munjang info` prints: architecture, dimensions, limits, pooling, prompts."""
        pooling = self.pooling
        model = self.input_module.describe()
        return {
            **{k: v for k, v in model.items() if k != "vocab_size"},
            "embedding_dimension": self.get_embedding_dimension(),
            "max_seq_length": self.max_seq_length,
            "vocab_size": model["vocab_size"],
            "parameters": self._parameter_count(),
            "pooling": "+".join(pooling.modes) if pooling else None,
            "dense": [f"{m.in_features}->{m.out_features}" for m in self if isinstance(m, Dense)],
            "normalize": self.normalizes,
            "prompts": self.prompts,
            "default_prompt_name": self.default_prompt_name,
            "similarity_fn_name": self.similarity_fn_name,
            "device": str(self.device),
        }

    def _parameter_count(self) -> int:
        """How many weights the model has, counting freed ones (encoder_backend.py) at their shape."""
        held = sum(p.numel() for _, p in nn.Module.named_parameters(self))  # freed ones hold none
        return held + self.torch_weights.released_count()

    # -- encoding ------------------------------------------------------------------------------
    def tokenize(self, texts: Sequence[str], prompt: str = "") -> dict[str, Any]:
        """A padded batch for `forward` (training path): input ids, attention mask, prompt length.

        `encoder(encoder.tokenize(texts))["sentence_embedding"]` gives the embeddings with gradients.
        """
        inputs = [prompt + t for t in texts] if prompt else list(texts)
        if not isinstance(self[0], Transformer):
            return dict(self.input_module.tokenize(inputs))
        transformer = self.transformer
        encoded = transformer.tokenize(inputs)
        features: dict[str, Any] = dict(transformer.collate(encoded, range(len(inputs))))
        features["prompt_length"] = self._prompt_length(prompt)
        return features

    def token_ids(
        self,
        texts: Sequence[str],
        *,
        prompt_name: str | None = None,
        truncate: bool = True,
        prompt: str | None = None,
    ) -> tuple[dict[str, list[list[int]]], int]:
        """Unpadded ids of `texts` with the prompt (`prompt` as given, else the model's default one, or
        `prompt_name`) and the prompt's token count: what `encode_tokenized` takes. With
        `truncate=False`, an input over `max_seq_length` keeps all its ids (check it with
        `transformer.check_lengths`)."""
        prompt = self._prompt_text(prompt_name, prompt)
        texts = list(texts)
        encoded = self.transformer.tokenize([prompt + t for t in texts] if prompt else texts, truncate)
        return encoded, self._prompt_length(prompt)

    def input_lengths(self, texts: Sequence[str]) -> list[int]:
        """Each text's token count (special tokens included where the model adds them), uncut: what
        a whole-text model's inputs are checked against `max_seq_length` with, and counted as usage."""
        module = self.input_module
        if isinstance(module, CLIPModel):
            return [len(ids) for ids in module.tokenizer(list(texts))["input_ids"]]
        if isinstance(module, StaticEmbedding):
            return [len(e.ids) for e in module.tokenizer.encode_batch(list(texts), add_special_tokens=False)]
        return [len(ids) for ids in module.tokenize(list(texts), False)["input_ids"]]

    def decode_ids(self, ids: list[int]) -> str:
        """The text of token ids (OpenAI's token-array input); ValueError naming an id outside the
        vocabulary."""
        tokenizer = self.tokenizer  # a transformers tokenizer, or a static model's tokenizers.Tokenizer
        vocab = tokenizer.get_vocab_size() if isinstance(self[0], StaticEmbedding) else len(tokenizer)
        bad = next((t for t in ids if not 0 <= t < vocab), None)
        if bad is not None:
            raise ValueError(f"token id {bad} is outside the vocabulary (0..{vocab - 1})")
        text: str = tokenizer.decode(ids, skip_special_tokens=True)
        return text

    def training_features(
        self, columns: Sequence[Sequence[str]], prompt_name: str | None = None
    ) -> list[dict[str, Any]]:
        """What the trainer feeds a loss: one padded batch per text column (`tokenize` of each)."""
        prompt = self._prompt_text(prompt_name, None)
        return [self.tokenize(column, prompt=prompt) for column in columns]

    def word_embeddings(self) -> nn.Module:
        """The backbone's input embedding table (frozen by `freeze_word_embeddings`)."""
        embeddings: nn.Module = self.transformer.auto_model.get_input_embeddings()
        return embeddings

    def _prompt_text(self, prompt_name: str | None, prompt: str | None) -> str:
        return prompt_text(self.prompts, self.default_prompt_name, prompt_name, prompt)

    def _prompt_length(self, prompt: str) -> int:
        """Tokens a prompt occupies at the start of an input (leading special token included)."""
        if not prompt:
            return 0
        if prompt not in self._prompt_lengths:
            if len(self._prompt_lengths) >= PROMPT_LENGTHS_KEPT:  # per-request instructions: stay bounded
                self._prompt_lengths.clear()
            ids = self.transformer.tokenize([prompt])["input_ids"][0]
            self._prompt_lengths[prompt] = len(ids) - 1  # without the closing special token
        return self._prompt_lengths[prompt]

    @torch.inference_mode()
    def encode(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int | None = None,
        max_tokens: int | None = None,
        show_progress_bar: bool | None = None,
        output_value: OutputValue = "sentence_embedding",
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
        truncate: bool = True,
        device: str | torch.device | None = None,
        backend: str | None = None,
        precision: str | None = None,
    ) -> Any:
        """Encode one sentence (-> 1-D vector) or a list (-> 2-D array, rows in input order).

        Inputs are tokenized in chunks (the next chunk while the model runs on this one), sorted by
        exact token length, and batched by a token budget, so a batch pads only to its own
        longest member; results come back in the caller's order.

        - `batch_size` caps the rows per batch and `max_tokens` the padded tokens per batch; with
          neither, the backend's budget is used (`DEFAULT_MAX_TOKENS`, at most `DEFAULT_MAX_ROWS` rows).
        - `backend` (torch | onnx | openvino) and `precision` (fp32 | bf16 | fp16 | int8 | auto)
          override the encoder's defaults (`set_backend`) for this call.
        - `prompt_name` picks one of the model's prompts (e5: "query"/"passage"); `prompt` gives
          literal text; with neither, the model's default prompt (if any) is used.
        - `truncate=True` cuts inputs at `max_seq_length` tokens; `False` raises
          `InputTooLongError` naming the first text that is too long.
        - `truncate_dim` keeps the first N dimensions (Matryoshka models), before normalizing.
        - `output_value="token_embeddings"` gives one (tokens, dim) array per input, padding removed.
        - Returns numpy by default; torch with `convert_to_tensor=True` (or `convert_to_numpy=False`).
        - A CLIP model also takes images among the inputs: PIL images and `pathlib.Path` files (a str is
          always text; see `munjang.images`).
        """
        single = isinstance(sentences, str) or is_image_input(sentences)
        texts: list[str] = [sentences] if single else list(sentences)  # type: ignore[list-item]
        for i, text in enumerate(texts):
            if not isinstance(text, str) and not (self.clip is not None and is_image_input(text)):
                raise TypeError(f"sentences[{i}] is {type(text).__name__}, not str")
        self._check_limits(batch_size, max_tokens, truncate_dim)
        if output_value not in ("sentence_embedding", "token_embeddings"):
            raise ValueError("output_value must be 'sentence_embedding' or 'token_embeddings'")
        as_tensor = convert_to_tensor or not convert_to_numpy
        if device is not None and resolve_device(device) != self.device:
            with self._device_lock:
                self.to(resolve_device(device))
        if show_progress_bar is None:
            show_progress_bar = len(texts) >= PROGRESS_BAR_MIN_SENTENCES
        if not isinstance(self[0], Transformer):  # a static model's bags, CLIP's texts and images
            if output_value != "sentence_embedding":
                raise ValueError(f"a {type(self[0]).__name__} model gives sentence embeddings only")
            self._check_static_backend(backend or "torch")
            if self.training:
                self.eval()
            vectors = encode_whole(
                self, self.input_module, texts, dim=self.get_embedding_dimension(), device=self.device,
                prompt=self._prompt_text(prompt_name, prompt), batch_size=batch_size,
                truncate_dim=truncate_dim, normalize_embeddings=normalize_embeddings,
                show_progress_bar=show_progress_bar,
            )  # fmt: skip
            return (vectors if as_tensor else vectors.numpy())[0 if single else slice(None)]
        runner, max_tokens, batch_size = self._runner_and_budget(backend, precision, max_tokens, batch_size)

        prompt_text = self._prompt_text(prompt_name, prompt)
        prompt_length = self._prompt_length(prompt_text)
        transformer = self.transformer

        def tokenize(start: int, stop: int) -> dict[str, list[list[int]]]:
            chunk = texts[start:stop]
            encoded = transformer.tokenize(
                [prompt_text + t for t in chunk] if prompt_text else chunk, truncate
            )
            if not truncate:
                transformer.check_lengths(encoded, "sentences", "encode with truncate=True", offset=start)
            return encoded

        sentence_out, token_out = self._encode_chunks(
            prepared_chunks(len(texts), TOKENIZE_CHUNK, tokenize),
            len(texts),
            runner,
            prompt_length=prompt_length,
            output_value=output_value,
            truncate_dim=truncate_dim,
            normalize_embeddings=normalize_embeddings,
            max_tokens=max_tokens,
            batch_size=batch_size,
            show_progress_bar=show_progress_bar,
        )

        if output_value == "token_embeddings":
            tokens_list = [t if as_tensor else t.numpy() for t in token_out if t is not None]
            return tokens_list[0] if single else tokens_list
        assert sentence_out is not None
        result: Any = sentence_out if as_tensor else sentence_out.numpy()
        return result[0] if single else result

    def encode_tokenized(
        self,
        encoded: dict[str, list[list[int]]],
        *,
        prompt_length: int = 0,
        batch_size: int | None = None,
        max_tokens: int | None = None,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
        backend: str | None = None,
        precision: str | None = None,
    ) -> np.ndarray:
        """Sentence embeddings (float32, one row per input) of inputs tokenized already.

        `encoded` is what `transformer.tokenize` returns (prompt and special tokens included, no
        padding): a server that must count tokens on arrival tokenizes once and hands the ids here.
        `prompt_length` is the prompt's token count, for pooling that leaves the prompt out.
        """
        ids = encoded["input_ids"]
        limit = self.max_seq_length
        for i, row in enumerate(ids):
            if not row or len(row) > limit:
                raise ValueError(f"input_ids[{i}] has {len(row)} tokens; it must have 1 to {limit}")
        self._check_limits(batch_size, max_tokens, truncate_dim)
        runner, max_tokens, batch_size = self._runner_and_budget(backend, precision, max_tokens, batch_size)
        sentence_out, _ = self._encode_chunks(
            iter([Chunk(0, len(ids), encoded)]),
            len(ids),
            runner,
            prompt_length=prompt_length,
            output_value="sentence_embedding",
            truncate_dim=truncate_dim,
            normalize_embeddings=normalize_embeddings,
            max_tokens=max_tokens,
            batch_size=batch_size,
            show_progress_bar=False,
        )
        assert sentence_out is not None
        result: np.ndarray = sentence_out.numpy()
        return result

    def _check_limits(self, batch_size: int | None, max_tokens: int | None, truncate_dim: int | None) -> None:
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
        if truncate_dim is not None and not 1 <= truncate_dim <= self.get_embedding_dimension():
            raise ValueError(f"truncate_dim must be between 1 and {self.get_embedding_dimension()}")

    def _runner_and_budget(
        self, backend: str | None, precision: str | None, max_tokens: int | None, batch_size: int | None
    ) -> tuple[TokenBackend, int | None, int | None]:
        """The backend to run on, and the batch limits: the caller's, or the default budget."""
        if self.training:  # inference never uses dropout, even right after a training loop
            self.eval()
        runner = self.backend(backend, precision)
        if batch_size is None and max_tokens is None:
            max_tokens, batch_size = DEFAULT_MAX_TOKENS, DEFAULT_MAX_ROWS
        return runner, max_tokens, batch_size

    @torch.inference_mode()
    def _encode_chunks(
        self,
        chunks: Iterator[Chunk[dict[str, list[list[int]]]]],
        total: int,
        runner: TokenBackend,
        *,
        prompt_length: int,
        output_value: OutputValue,
        truncate_dim: int | None,
        normalize_embeddings: bool,
        max_tokens: int | None,
        batch_size: int | None,
        show_progress_bar: bool,
    ) -> tuple[torch.Tensor | None, list[torch.Tensor | None]]:
        """The model loop shared by `encode` and `encode_tokenized`: length-sorted token-budget
        batches through the backend and the pooling modules, rows written back in input order."""
        transformer = self.transformer
        dim = truncate_dim or self.get_embedding_dimension()
        sentence_out: torch.Tensor | None = None
        token_out: list[torch.Tensor | None] = [None] * total
        if output_value == "sentence_embedding":
            sentence_out = torch.empty((total, dim), dtype=torch.float32)
        modules = list(self)[1:]
        bar = tqdm(total=total, desc="Encoding", unit="sent", disable=not show_progress_bar)

        def batches() -> Iterator[tuple[torch.Tensor, dict[str, torch.Tensor]]]:
            for chunk in chunks:
                encoded = chunk.value
                lengths = [len(ids) for ids in encoded["input_ids"]]
                for rows in token_budget_batches(lengths, max_tokens, batch_size):
                    batch = {k: v.to(runner.device) for k, v in transformer.collate(encoded, rows).items()}
                    yield torch.from_numpy(rows + chunk.start), batch

        with bar, torch_threads(1 if runner.name != "torch" else None):
            for global_rows, batch, tokens in map_token_embeddings(runner, batches()):
                tokens = tokens.to(self.device)
                mask = batch["attention_mask"].to(self.device)
                if output_value == "token_embeddings":
                    keep = mask.bool()
                    for r, i in enumerate(global_rows.tolist()):
                        token_out[i] = tokens[r][keep[r]].float().cpu()
                    bar.update(len(global_rows))
                    continue
                features: dict[str, Any] = {
                    "token_embeddings": tokens,
                    "attention_mask": mask,
                    "prompt_length": prompt_length,
                }
                for module in modules:
                    features = module(features)
                vectors = features["sentence_embedding"]
                if truncate_dim is not None:
                    vectors = vectors[:, :truncate_dim]
                if normalize_embeddings:
                    vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
                assert sentence_out is not None
                sentence_out[global_rows] = vectors.float().cpu()
                bar.update(len(global_rows))

        return sentence_out, token_out

    def encode_query(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`encode` for search queries: with the model's "query" prompt when it has one and the
        caller names none (as sentence-transformers does); otherwise exactly `encode`."""
        name = side_prompt_name(self.prompts, "query", prompt_name, prompt)
        return self.encode(sentences, prompt_name=name, prompt=prompt, **kwargs)

    def encode_document(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`encode` for the documents searched: with the model's "document" prompt, else its
        "passage" (e5) or "corpus" prompt, when it has one and the caller names none."""
        name = side_prompt_name(self.prompts, "document", prompt_name, prompt)
        return self.encode(sentences, prompt_name=name, prompt=prompt, **kwargs)

    def similarity(self, a: Any, b: Any) -> Any:
        """Similarity matrix between two sets of embeddings, with the model's similarity function."""
        return sim.similarity(a, b, self.similarity_fn_name)

    def similarity_pairwise(self, a: Any, b: Any) -> Any:
        """Row-by-row similarity of two equally long sets of embeddings."""
        return sim.pairwise_similarity(a, b, self.similarity_fn_name)

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the sentence-transformers layout, which munjang and sentence-transformers both load."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.restore_torch_weights()
        write_modules(folder, list(self))  # type: ignore[arg-type]
        EncoderSettings(self.prompts, self.default_prompt_name, self.similarity_fn_name).write(folder)


def load_encoder(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    device: str | torch.device | None = None,
    pooling: str | Sequence[str] | None = None,
    trust_remote_code: bool = False,
    local_files_only: bool = False,
    revision: str | None = None,
    cache_folder: str | None = None,
    token: str | bool | None = None,
    dtype: str | torch.dtype = torch.float32,
    max_seq_length: int | None = None,
    model_kwargs: dict[str, Any] | None = None,
    tokenizer_kwargs: dict[str, Any] | None = None,
    backend: str | None = None,
    precision: str | None = None,
    backend_options: dict[str, Any] | None = None,
    threads: int | None = None,
) -> SentenceEncoder:
    """Load a sentence encoder.

    - None (or "default"): the embedded all-MiniLM-L6-v2, no network needed.
    - A sentence-transformers folder (`modules.json`): its modules, prompts and similarity function.
    - A plain Hugging Face encoder folder (`config.json` only): mean pooling, unless `pooling` says otherwise.
    - A hub id ("owner/name"): downloaded or read from the cache (`local_files_only` forbids the network).

    `pooling` overrides the folder's pooling modes (e.g. "cls", ["mean", "max"], "cls+mean+max").
    `trust_remote_code` stays off unless asked: custom model code from a model folder never runs by default.
    `backend` / `precision` pick what `encode` runs on (`SentenceEncoder.set_backend`). By default
    "auto": the fastest configuration measured to keep fp32 accuracy on this machine (cosine to fp32
    >= 0.9999 on average; see `munjang.inference.autotune`); `precision="fp32"` runs torch fp32, which
    matches sentence-transformers to float rounding. `threads` caps the threads the model uses
    (torch's setting is process-wide; ONNX/OpenVINO sessions take it too).
    """
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        torch.set_num_threads(threads)
        if normalized(backend, precision)[0] != "torch":
            backend_options = {"threads": threads, **(backend_options or {})}
    folder = resolve_model_path(
        name_or_path,
        revision=revision,
        cache_folder=cache_folder,
        local_files_only=local_files_only,
        token=token,
    )
    load_kwargs: dict[str, Any] = {
        "trust_remote_code": trust_remote_code,
        "dtype": dtype,
        "max_seq_length": max_seq_length,
        "model_kwargs": model_kwargs,
        "tokenizer_kwargs": tokenizer_kwargs,
    }
    modules, settings = read_encoder_folder(folder, load_kwargs)
    if pooling is not None:
        if not isinstance(modules[0], Transformer):
            raise ValueError(f"{folder} is a {type(modules[0]).__name__} model: no pooling to override")
        modules = replace_pooling(modules, pooling)
    encoder = SentenceEncoder(
        modules, settings.prompts, settings.default_prompt_name, settings.similarity_fn_name, device=device
    )
    encoder.remember_folder(folder)
    encoder.set_backend(backend, precision, **(backend_options or {}))
    return encoder
