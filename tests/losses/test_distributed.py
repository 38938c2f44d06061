"""MultipleNegativesRankingLoss across two gloo processes (torch.multiprocessing.spawn, CPU).

Each process embeds its share of a fixed batch with a small linear projection and computes MNRL with
the embeddings gathered across processes; the parent compares with one process holding the whole
batch: the score matrix has the global batch's columns, the mean of the two losses is the global
loss, and the gradients averaged over the processes (what DDP does) are the global gradients.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn

from munjang.losses import MultipleNegativesRankingLoss
from munjang.losses.distributed import all_gather_with_grad

WORLD = 2
IN, DIM = 6, 8


# name: (rows held by rank 0 and rank 1, columns, symmetric)
CASES: dict[str, tuple[tuple[int, int], int, bool]] = {
    "hard negatives": ((3, 3), 3, False),
    "symmetric": ((3, 3), 2, True),
    "uneven shares": ((4, 2), 3, False),
    "uneven symmetric": ((2, 5), 2, True),
}


def _inputs(case: str) -> Tensor:
    (a, b), columns, _ = CASES[case]
    generator = torch.Generator().manual_seed(len(case))
    return torch.randn(a + b, columns, IN, generator=generator)


def _projection() -> nn.Linear:
    torch.manual_seed(0)
    return nn.Linear(IN, DIM)


def _loss(projection: nn.Module, case: str, gather: bool = True) -> MultipleNegativesRankingLoss:
    # compute_from_embeddings never calls the model, so the projection stands in for it.
    return MultipleNegativesRankingLoss(
        cast(Any, projection), scale=5.0, symmetric=CASES[case][2], gather_across_devices=gather
    )


def _embed(projection: nn.Module, rows: Tensor) -> list[Tensor]:
    return [projection(rows[:, c]) for c in range(rows.shape[1])]


def _bounds(case: str, rank: int) -> tuple[int, int]:
    sizes = CASES[case][0]
    return sum(sizes[:rank]), sum(sizes[: rank + 1])


def _worker(rank: int, folder: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=WORLD)
    results: dict[str, dict[str, Any]] = {}
    for case in CASES:
        lo, hi = _bounds(case, rank)
        projection = _projection()
        local = _embed(projection, _inputs(case)[lo:hi])
        loss_fn = _loss(projection, case)
        logits, targets = loss_fn.logits([e.detach() for e in local])
        loss = loss_fn.compute_from_embeddings(local, None)
        loss.backward()
        grads = [p.grad.clone() for p in projection.parameters() if p.grad is not None]
        mean_loss = loss.detach().clone()
        for tensor in (*grads, mean_loss):  # DDP's gradient averaging, and the trainer's logged loss
            dist.all_reduce(tensor)
            tensor /= WORLD
        local_only = _loss(projection, case, gather=False).compute_from_embeddings(
            [e.detach() for e in local], None
        )
        dist.all_reduce(local_only)
        gathered = all_gather_with_grad(torch.full((hi - lo, 2), float(rank)))
        results[case] = {
            "logits": logits,
            "targets": targets,
            "loss": loss.detach(),
            "mean_loss": mean_loss,
            "grads": grads,
            "local_only_mean": local_only / WORLD,
            "gathered": (gathered.rows, gathered.offset, gathered.local, gathered.total),
        }
    torch.save(results, Path(folder) / f"rank{rank}.pt")
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("gloo")
    torch.multiprocessing.spawn(_worker, args=(str(folder),), nprocs=WORLD, join=True)
    return [torch.load(folder / f"rank{rank}.pt") for rank in range(WORLD)]


def _reference(case: str) -> tuple[MultipleNegativesRankingLoss, Tensor, Tensor, list[Tensor]]:
    """One process, the whole batch (no process group here, so gathering is a no-op)."""
    projection = _projection()
    loss_fn = _loss(projection, case)
    embeddings = _embed(projection, _inputs(case))
    logits, _ = loss_fn.logits([e.detach() for e in embeddings])
    loss = loss_fn.compute_from_embeddings(embeddings, None)
    loss.backward()
    return loss_fn, logits, loss.detach(), [p.grad for p in projection.parameters() if p.grad is not None]


@pytest.mark.parametrize("case", CASES)
def test_each_anchor_is_scored_against_the_global_batch(ranks: list[dict[str, Any]], case: str) -> None:
    (a, b), columns, symmetric = CASES[case]
    total = a + b
    _, full_logits, _, _ = _reference(case)
    for rank, result in enumerate(ranks):
        lo, hi = _bounds(case, rank)
        logits, targets = result[case]["logits"], result[case]["targets"]
        # positives and hard negatives of both processes: (columns − 1) · global batch candidates
        assert logits.shape == (hi - lo, (columns - 1) * total)
        assert targets.tolist() == list(range(lo, hi))  # labels offset by this rank's first row
        torch.testing.assert_close(logits, full_logits[lo:hi], rtol=0, atol=1e-6)
        if not symmetric:
            # this rank's loss: its anchors' terms of the global loss, weighted W·n_r/N
            terms = F.cross_entropy(full_logits[lo:hi], torch.arange(lo, hi), reduction="sum")
            expected = WORLD * terms / total
            assert result[case]["loss"].item() == pytest.approx(expected.item(), rel=1e-6)


@pytest.mark.parametrize("case", CASES)
def test_two_processes_give_the_global_loss_and_gradients(ranks: list[dict[str, Any]], case: str) -> None:
    _, _, full_loss, full_grads = _reference(case)
    for result in ranks:
        assert result[case]["mean_loss"].item() == pytest.approx(full_loss.item(), rel=1e-6)
        assert len(result[case]["grads"]) == len(full_grads) == 2
        for averaged, expected in zip(result[case]["grads"], full_grads, strict=True):
            torch.testing.assert_close(averaged, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("case", CASES)
def test_without_gathering_each_process_sees_only_its_own_negatives(
    ranks: list[dict[str, Any]], case: str
) -> None:
    _, _, full_loss, _ = _reference(case)
    local_only = ranks[0][case]["local_only_mean"].item()
    assert abs(local_only - full_loss.item()) > 1e-2 * full_loss.item()


@pytest.mark.parametrize("case", CASES)
def test_all_gather_concatenates_rows_in_rank_order(ranks: list[dict[str, Any]], case: str) -> None:
    a, b = CASES[case][0]
    expected = torch.cat([torch.zeros(a, 2), torch.ones(b, 2)])
    for rank, result in enumerate(ranks):
        rows, offset, local, total = result[case]["gathered"]
        torch.testing.assert_close(rows, expected)
        assert (offset, local, total) == (_bounds(case, rank)[0], (a, b)[rank], a + b)


def test_config_and_single_process_default() -> None:
    projection = _projection()
    case = "hard negatives"
    gathering, plain = _loss(projection, case), _loss(projection, case, gather=False)
    assert gathering.get_config_dict()["gather_across_devices"] is True
    assert plain.get_config_dict()["gather_across_devices"] is False
    embeddings = [e.detach() for e in _embed(projection, _inputs(case))]
    # without a process group the option changes nothing, bit for bit
    assert torch.equal(
        gathering.compute_from_embeddings(embeddings, None), plain.compute_from_embeddings(embeddings, None)
    )
