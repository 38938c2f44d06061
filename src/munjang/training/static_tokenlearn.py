"""Fine-tune a static model on a teacher's sentence vectors, as tokenlearn (MinishLab) does.

A distilled static model (`distill_static`) knows each token alone; tokenlearn teaches it how tokens
combine in real sentences. The teacher encodes a corpus once (its own pooling, no final normalization);
PCA brings those vectors to the static dimension; then the static model's token rows and a weight per
token are trained so that a linear map of the weighted token mean regresses the teacher's vector (MSE).
The map is a training aid and is dropped: each token's row becomes `weight x row`. Only tokens that
occur in the corpus are trained; every other row is left exactly as it was. Training stops when the
loss on a held-out slice of the corpus stops falling, and keeps the best state (Ctrl-C keeps it too).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from ..encoders.dense.encoder import SentenceEncoder
from ..modules import Normalize, StaticEmbedding
from .static_distill import pca_project, without_normalize

# The held-out slice that decides when to stop: a tenth of the corpus, at most this many texts.
MAX_VALIDATION_TEXTS = 10_000
# A loss that falls by less than this share of the best so far does not count as better.
MIN_IMPROVEMENT = 1e-4


@dataclass
class StaticFit:
    """What `tokenlearn_static` made and how training went."""

    model: SentenceEncoder
    validation_loss: list[tuple[int, float]] = field(default_factory=list)  # (step, loss) per evaluation
    best_step: int = 0
    steps: int = 0
    epochs: float = 0.0
    trained_tokens: int = 0
    train_texts: int = 0
    validation_texts: int = 0
    explained_variance: float = 1.0  # share of the teacher vectors' variance the PCA targets keep
    seconds: float = 0.0
    interrupted: bool = False


def teacher_vectors(
    teacher: SentenceEncoder,
    texts: Sequence[str],
    prompt: str | None = None,
    batch_size: int = 64,
    show_progress_bar: bool = True,
) -> np.ndarray:
    """The teacher's sentence vectors of `texts` through its own pooling, without a final Normalize."""
    body = without_normalize(teacher)
    return np.asarray(
        body.encode(list(texts), prompt=prompt, batch_size=batch_size, show_progress_bar=show_progress_bar),
        dtype=np.float32,
    )


class _WeightedBag(nn.Module):
    """Mean of `weight[t] * row[t]` over a text's tokens, then a linear map to the target space."""

    def __init__(self, table: torch.Tensor, target_dim: int) -> None:
        super().__init__()
        norms = table.norm(dim=1)
        self.rows = nn.Parameter(table / norms[:, None])
        self.weight = nn.Parameter(norms.clone())
        self.head = nn.Linear(table.shape[1], target_dim)

    def bag(self, ids: torch.Tensor, offsets: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        summed = F.embedding_bag(ids, self.rows, offsets, mode="sum", per_sample_weights=self.weight[ids])
        return summed / lengths[:, None]

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.head(self.bag(ids, offsets, lengths))

    def token_rows(self) -> torch.Tensor:
        return (self.weight[:, None] * self.rows).detach()


def _static_module(model: SentenceEncoder) -> StaticEmbedding:
    modules = list(model)
    if not modules or not isinstance(modules[0], StaticEmbedding):
        raise ValueError("tokenlearn_static trains static models: the first module must be StaticEmbedding")
    if any(not isinstance(m, Normalize) for m in modules[1:]):
        raise ValueError("tokenlearn_static fine-tunes StaticEmbedding models followed by Normalize at most")
    return modules[0]


def tokenlearn_static(
    static: SentenceEncoder,
    texts: Sequence[str],
    teacher: SentenceEncoder | None = None,
    *,
    targets: np.ndarray | None = None,
    prompt: str | None = None,
    batch_size: int = 256,
    lr: float = 1e-3,
    max_epochs: int = 30,
    eval_steps: int = 1000,
    patience: int = 5,
    seed: int = 0,
    show_progress_bar: bool = True,
) -> StaticFit:
    """`static` fine-tuned on `texts` to follow the teacher's vectors (a new model; `static` is untouched).

    - `teacher` encodes `texts` (with `prompt`, e.g. e5's "query: "); or give its vectors as `targets`.
    - `batch_size`, `lr` (AdamW): tokenlearn's settings. The held-out tenth of `texts` (at most 10,000)
      is scored every `eval_steps` steps and at each epoch's end; training stops after `patience`
      scores without improvement, or after `max_epochs`, and keeps the best state.
    """
    source = _static_module(static)
    texts = list(texts)
    if targets is None:
        if teacher is None:
            raise ValueError("give a teacher to encode the texts, or their vectors as targets")
        targets = teacher_vectors(teacher, texts, prompt, show_progress_bar=show_progress_bar)
    targets = np.asarray(targets, dtype=np.float32)
    if targets.ndim != 2 or len(targets) != len(texts):
        raise ValueError(f"targets must be one vector per text: {len(texts)} rows, not shape {targets.shape}")
    if batch_size < 1 or max_epochs < 1 or eval_steps < 1 or patience < 1:
        raise ValueError("batch_size, max_epochs, eval_steps and patience must be at least 1")
    started = time.perf_counter()

    table = source.embedding.weight.detach().float().clone()
    dim = table.shape[1]
    bags = source.tokenize(texts)  # the ids the model reads in use, truncation included
    per_text = np.split(bags["input_ids"].numpy(), bags["offsets"].numpy()[1:])
    keep = [i for i, ids in enumerate(per_text) if len(ids)]
    if len(keep) < 2:
        raise ValueError("tokenlearn_static needs at least two texts with tokens")
    token_ids = [per_text[i] for i in keep]
    goal = pca_project(targets[keep], dim)  # centred; a rotation where the teacher has no more dimensions
    explained = float(np.var(goal, axis=0).sum() / max(np.var(targets[keep], axis=0).sum(), 1e-30))

    seen = np.unique(np.concatenate(token_ids))
    seen = seen[table[seen].norm(dim=1).numpy() > 0]  # a zero row has no direction to learn from
    local = np.full(table.shape[0], -1, dtype=np.int64)
    local[seen] = np.arange(len(seen))
    texts_ids = [local[ids][local[ids] >= 0] for ids in token_ids]
    counts = np.fromiter((len(ids) for ids in token_ids), dtype=np.float32, count=len(token_ids))
    usable = [i for i, ids in enumerate(texts_ids) if len(ids)]
    rng = np.random.default_rng(seed)
    order = rng.permutation(usable)
    n_val = min(MAX_VALIDATION_TEXTS, max(1, len(order) // 10))
    val_rows, train_rows = order[-n_val:], order[:-n_val]
    if len(train_rows) == 0:
        raise ValueError("tokenlearn_static needs at least two texts with tokens")

    torch.manual_seed(seed)
    model = _WeightedBag(table[torch.from_numpy(seen)], goal.shape[1])
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    goal_t = torch.from_numpy(np.ascontiguousarray(goal, dtype=np.float32))

    def batch(rows: np.ndarray) -> tuple[torch.Tensor, ...]:
        parts = [texts_ids[r] for r in rows]
        offsets = np.zeros(len(parts), dtype=np.int64)
        np.cumsum([len(p) for p in parts[:-1]], out=offsets[1:])
        ids, y = torch.from_numpy(np.concatenate(parts)), goal_t[torch.from_numpy(rows)]
        return ids, torch.from_numpy(offsets), torch.from_numpy(counts[rows]), y  # zero rows count, as in use

    val_batches = [batch(val_rows[i : i + batch_size]) for i in range(0, len(val_rows), batch_size)]

    def validation_loss() -> float:
        model.eval()
        with torch.no_grad():
            total = sum(F.mse_loss(model(*b[:3]), b[3], reduction="sum").item() for b in val_batches)
        model.train()
        return total / (len(val_rows) * goal.shape[1])

    fit = StaticFit(model=static, train_texts=len(train_rows), validation_texts=len(val_rows))
    fit.trained_tokens = len(seen)
    best_loss = validation_loss()
    fit.validation_loss.append((0, best_loss))
    best_state = copy.deepcopy(model.state_dict())
    waited, step, stop = 0, 0, False
    per_epoch = -(-len(train_rows) // batch_size)
    bar = tqdm(total=per_epoch * max_epochs, desc="Tokenlearn", unit="step", disable=not show_progress_bar)
    try:
        with bar:
            for _ in range(max_epochs):
                shuffled = rng.permutation(train_rows)
                for i in range(0, len(shuffled), batch_size):
                    ids, offsets, lengths, y = batch(shuffled[i : i + batch_size])
                    loss = F.mse_loss(model(ids, offsets, lengths), y)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    step += 1
                    bar.update(1)
                    if step % eval_steps and i + batch_size < len(shuffled):
                        continue
                    current = validation_loss()
                    fit.validation_loss.append((step, current))
                    bar.set_postfix(validation=f"{current:.5f}")
                    if best_loss - current > MIN_IMPROVEMENT * best_loss:
                        best_loss, waited, fit.best_step = current, 0, step
                        best_state = copy.deepcopy(model.state_dict())
                    else:
                        waited += 1
                        if waited >= patience:
                            stop = True
                            break
                if stop:
                    break
    except KeyboardInterrupt:
        fit.interrupted = True
    model.load_state_dict(best_state)
    table[torch.from_numpy(seen)] = model.token_rows()

    tokenizer = type(source.tokenizer).from_str(source.tokenizer.to_str())  # the source keeps its own
    modules: list[StaticEmbedding | Normalize] = [StaticEmbedding(tokenizer, embedding_weights=table)]
    modules += [Normalize() for _ in list(static)[1:]]
    fit.model = SentenceEncoder(modules, similarity_fn_name=static.similarity_fn_name, device="cpu")
    fit.steps, fit.epochs = step, round(step / per_epoch, 2)
    fit.explained_variance = round(explained, 4)
    fit.seconds = round(time.perf_counter() - started, 1)
    return fit
