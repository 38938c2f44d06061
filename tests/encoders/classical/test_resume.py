"""Fitting word2vec resumes: a checkpoint in the output folder after each epoch (one file, written
whole), from which the same fit goes on after an interruption (stopped here by the epoch hook, as a
kill would stop it) to the vectors of an uninterrupted fit; another corpus, other options or a
damaged checkpoint start over and say so; saving the model removes the checkpoint."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from munjang.encoders.classical import Word2VecEncoder, fit_classical, load_classical_encoder
from munjang.encoders.classical.folder import CHECKPOINT
from tests.helpers.classical import CORPUS as BASE_CORPUS
from tests.helpers.cli import run_cli

pytest.importorskip("gensim")

CORPUS = BASE_CORPUS * 3
OPTIONS = {"min_count": 1, "vector_size": 16, "epochs": 3}


class Stop(Exception):
    """What the epoch hook raises: the fit stops there, as a killed process would."""


def stop_after(epochs: int):  # type: ignore[no-untyped-def]
    def hook(done: int) -> None:
        if done == epochs:
            raise Stop

    return hook


def fit(folder: Path, corpus: list[str] = CORPUS, **changes) -> tuple[Word2VecEncoder, list[int]]:  # type: ignore[no-untyped-def]
    seen: list[int] = []
    encoder = fit_classical(
        "skipgram", corpus, checkpoint_folder=folder, on_epoch=seen.append, **{**OPTIONS, **changes}
    )
    assert isinstance(encoder, Word2VecEncoder)
    return encoder, seen


def interrupt(folder: Path, after: int = 1) -> None:
    with pytest.raises(Stop):
        fit_classical("skipgram", CORPUS, checkpoint_folder=folder, on_epoch=stop_after(after), **OPTIONS)
    assert (folder / CHECKPOINT).is_file()


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Word2VecEncoder:
    encoder = fit_classical("skipgram", CORPUS, **OPTIONS)
    assert isinstance(encoder, Word2VecEncoder)
    return encoder


def test_a_checkpointed_fit_equals_a_plain_one(tmp_path: Path, whole) -> None:
    encoder, seen = fit(tmp_path / "out")
    assert seen == [1, 2, 3]
    np.testing.assert_array_equal(encoder.vectors, whole.vectors)
    encoder.save(tmp_path / "out")
    assert not (tmp_path / "out" / CHECKPOINT).exists()
    np.testing.assert_array_equal(load_classical_encoder(tmp_path / "out").vectors, whole.vectors)


@pytest.mark.parametrize("after", [1, 2, 3])
def test_an_interrupted_fit_goes_on_after_the_saved_epoch(tmp_path: Path, whole, caplog, after) -> None:
    folder = tmp_path / "out"
    interrupt(folder, after)
    with caplog.at_level(logging.WARNING):
        encoder, seen = fit(folder)
    assert seen == list(range(after + 1, 4))  # not from zero
    assert f"resuming word2vec after epoch {after} of 3" in caplog.text
    # gensim's learning rate picks up where it was: the same vectors, up to float rounding
    np.testing.assert_allclose(encoder.vectors, whole.vectors, atol=1e-6)
    np.testing.assert_allclose(encoder.encode(CORPUS[:4]), whole.encode(CORPUS[:4]), atol=1e-5)


@pytest.mark.parametrize(
    ("corpus", "changes"),
    [(CORPUS[:-1], {}), (CORPUS, {"vector_size": 8}), (CORPUS, {"seed": 2})],
    ids=["corpus", "size", "seed"],
)
def test_another_corpus_or_options_start_over(tmp_path: Path, caplog, corpus, changes) -> None:
    folder = tmp_path / "out"
    interrupt(folder)
    with caplog.at_level(logging.WARNING):
        _, seen = fit(folder, corpus, **changes)
    assert seen == [1, 2, 3]
    assert "another corpus or other options; starting over" in caplog.text


def test_a_damaged_checkpoint_starts_over(tmp_path: Path, whole, caplog) -> None:
    folder = tmp_path / "out"
    interrupt(folder)
    data = bytearray((folder / CHECKPOINT).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / CHECKPOINT).write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        encoder, seen = fit(folder)
    assert seen == [1, 2, 3] and "starting over" in caplog.text
    np.testing.assert_array_equal(encoder.vectors, whole.vectors)


def test_the_checkpoint_has_a_header_and_other_data_is_never_touched(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    interrupt(folder, 2)
    with np.load(folder / CHECKPOINT, allow_pickle=False) as stored:
        header = json.loads(str(stored["header"]))
    assert header["format"] == "munjang-word2vec-checkpoint" and header["epochs_done"] == 2
    assert set(header["sha256"]) == {"vectors", "syn1neg", "random_keys"}
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a classical model folder"):
        fit(other)
    assert [p.name for p in other.iterdir()] == ["notes.txt"]


def test_the_shell_command_resumes(tmp_path: Path, whole, capsys, monkeypatch, caplog) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    folder = tmp_path / "model"
    interrupt(folder)
    args = ["models", "fit-classical", "skipgram", "-c", str(corpus), "-o", str(folder)]
    args += ["--min-count", "1", "--vector-size", "16", "--epochs", "3"]
    with caplog.at_level(logging.WARNING):
        code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    assert "resuming word2vec after epoch 1 of 3" in caplog.text
    total = 3 * len(CORPUS)  # texts over the epochs, the first one done
    assert "word2vec:  33%" in err and f"{total}/{total}" in err
    assert not (folder / CHECKPOINT).exists()
    np.testing.assert_allclose(load_classical_encoder(folder).vectors, whole.vectors, atol=1e-6)
