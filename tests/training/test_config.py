"""`munjang train --config`: YAML configs end to end on a tiny model, and every kind of config error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from munjang.errors import DataFormatError
from munjang.training import config as train_config
from munjang.training.config import ConfigError, build, load_config
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO
from tests.helpers.training import WORDS, tiny_bert

STS_HEADER = "genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2"


run = run_cli


def write_sts(path: Path, n: int, offset: int = 0) -> Path:
    """A KorSTS-format file: pairs of word lists, scored by overlap (0-5)."""
    rows = [STS_HEADER]
    for i in range(n):
        a = [WORDS[(i + offset + k) % len(WORDS)] for k in range(3)]
        b = [WORDS[(i + offset + k * (i % 3 + 1)) % len(WORDS)] for k in range(3)]
        score = 5 * len(set(a) & set(b)) / 3
        rows.append(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score:.1f}\t{' '.join(a)}\t{' '.join(b)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def write_nli(path: Path, premises: int) -> Path:
    """An NLI file where every premise has an entailed, a neutral and a contradicting hypothesis."""
    rows = ["sentence1\tsentence2\tgold_label"]
    for i in range(premises):
        p = f"{WORDS[i % len(WORDS)]} {WORDS[(i + 1) % len(WORDS)]}"
        rows += [
            f"{p}\t{WORDS[i % len(WORDS)]}\tentailment",
            f"{p}\t{WORDS[(i + 5) % len(WORDS)]}\tneutral",
            f"{p}\t{WORDS[(i + 7) % len(WORDS)]} {WORDS[(i + 9) % len(WORDS)]}\tcontradiction",
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("model") / "tiny")


TRAINING = {"epochs": 1, "batch_size": 8, "learning_rate": 1e-3, "show_progress_bar": False}


def write_config(folder: Path, config: dict, name: str = "train.yaml") -> Path:
    """JSON is YAML: write the config as JSON text under a .yaml name."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def sts_config(tmp_path: Path, tiny: Path, **changes: object) -> dict:
    write_sts(tmp_path / "data" / "train.tsv", 24)
    write_sts(tmp_path / "data" / "dev.tsv", 10, offset=3)
    config = {
        "model": str(tiny),
        "device": "cpu",
        "output_dir": "out",
        "tasks": [
            {"name": "sts", "data": {"path": "data/train.tsv", "format": "sts"}, "loss": {"name": "cosent"}}
        ],
        "evaluator": {"type": "sts", "path": "data/dev.tsv"},
        "training": dict(TRAINING),
    }
    config.update(changes)
    return config


def test_train_end_to_end_through_the_cli(tmp_path: Path, tiny: Path, capsys, monkeypatch) -> None:
    path = write_config(tmp_path, sts_config(tmp_path, tiny))
    code, out, err = run(["train", "--config", str(path)], capsys, monkeypatch)
    assert code == 0, err
    assert "task       sts: 24 sts examples" in out and "loss cosent" in out
    assert "evaluator  sts: 10 pairs" in out and "training   3 steps" in out
    assert "done: 3 steps" in out and "best spearman_cosine" in out
    final = tmp_path / "out" / "final"
    assert f"final       {final}" in out
    card = (final / "README.md").read_text(encoding="utf-8")
    assert "CoSENTLoss" in card and f"Base model: `{tiny}`" in card
    assert str(tmp_path / "data" / "train.tsv") in card  # the task's data file
    assert (tmp_path / "out" / "best" / "README.md").exists()


def test_interrupt_prints_how_to_resume_then_resume_finishes(
    tmp_path: Path, tiny: Path, capsys, monkeypatch
) -> None:
    from munjang.training.trainer import Trainer

    path = write_config(tmp_path, sts_config(tmp_path, tiny, evaluator=None))
    real = Trainer._forward_backward
    calls = []

    def stop_on_second_batch(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "_forward_backward", stop_on_second_batch)
    code, _, err = run(["train", "--config", str(path)], capsys, monkeypatch)
    assert code == 130
    assert err.strip().splitlines()[-1] == f"interrupted; to continue: munjang train --config {path} --resume"
    assert (tmp_path / "out" / "checkpoints" / "checkpoint-1").is_dir()

    code, _, err = run(["train", "--config", str(path)], capsys, monkeypatch)
    assert code == 2 and "holds checkpoints of an earlier run" in err and "--resume" in err

    code, out, err = run(["train", "--config", str(path), "--resume"], capsys, monkeypatch)
    assert code == 0, err
    assert "resumed from" in out and "done: 3 steps" in out
    assert (tmp_path / "out" / "final" / "README.md").exists()


def test_output_dir_option_and_missing_checkpoint_on_resume(
    tmp_path: Path, tiny: Path, capsys, monkeypatch
) -> None:
    path = write_config(tmp_path, sts_config(tmp_path, tiny))
    code, _, err = run(
        ["train", "--config", str(path), "--resume", "--output-dir", str(tmp_path / "o2")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and err.startswith("error: ") and "no checkpoint to resume from" in err
    config = load_config(path, output_dir=tmp_path / "o2")
    assert config.output_dir == tmp_path / "o2" and config.training_args().output_dir == str(tmp_path / "o2")


def test_multi_task_config_builds_two_tasks(tmp_path: Path, tiny: Path) -> None:
    write_nli(tmp_path / "data" / "nli.tsv", 6)
    config = sts_config(tmp_path, tiny)
    config["tasks"] = [
        {"name": "nli", "data": {"path": "data/nli.tsv", "format": "nli-triplets"}, "loss": {"name": "mnrl"}},
        {
            "name": "pairs",
            "data": {"path": "data/nli.tsv", "format": "nli-pairs"},
            "loss": "softmax",
            "limit": 10,
        },
        config["tasks"][0],
    ]
    config["evaluator"] = [
        {"type": "sts", "path": "data/dev.tsv"},
        {"type": "triplet", "path": "data/nli.tsv"},
        {"type": "label-accuracy", "path": "data/nli.tsv", "loss_task": "pairs"},
    ]
    trainer, info = build(load_config(write_config(tmp_path, config)))
    assert sorted(trainer.datasets) == ["nli", "pairs", "sts"]
    assert [len(trainer.datasets[n]) for n in ("nli", "pairs", "sts")] == [6, 10, 24]
    assert trainer.losses["pairs"].classifier.out_features == 3  # num_labels 3 for nli-pairs by default
    assert [t["examples"] for t in info["tasks"]] == [6, 10, 24]
    assert [e["size"] for e in info["evaluators"]] == [10, 6, 18]
    assert info["steps"] == trainer.total_steps() == 1 + 2 + 3
    assert type(trainer.evaluator).__name__ == "SequentialEvaluator"
    assert trainer.data_description["nli"] == str(tmp_path / "data" / "nli.tsv")
    metrics = trainer.evaluator(trainer.model)  # the softmax head feeds the label-accuracy evaluator
    assert {"sts_spearman_cosine", "triplet_cosine_accuracy", "label-accuracy_accuracy"} <= set(metrics)


def test_table_with_named_labels_sets_the_softmax_size(tmp_path: Path, tiny: Path) -> None:
    (tmp_path / "t.csv").write_text("a,b,y\n사과,apple,same\n고양이,dog,other\n", encoding="utf-8")
    config = {
        "model": str(tiny),
        "device": "cpu",
        "tasks": {
            "name": "pairs",
            "data": {"path": "t.csv", "format": "table", "columns": ["a", "b"], "label": "y",
                     "label_type": {"same": 0, "other": 1}},
            "loss": "softmax",
        },
    }  # fmt: skip
    trainer, _ = build(load_config(write_config(tmp_path, config)))
    assert [e.label for e in trainer.datasets["pairs"]] == [0, 1]
    assert trainer.losses["pairs"].classifier.out_features == 2


def test_parallel_distillation_labels_are_teacher_embeddings(tmp_path: Path, tiny: Path) -> None:
    import munjang

    (tmp_path / "par.tsv").write_text("사과\tapple\n고양이\tcat\n강아지\tdog\n", encoding="utf-8")
    config = {
        "model": str(tiny),
        "device": "cpu",
        "tasks": [
            {
                "data": {"path": "par.tsv", "format": "parallel", "teacher": str(tiny)},
                "loss": {"name": "mse"},
                "limit": 2,
            }
        ],
        "evaluator": {"type": "mse", "path": "par.tsv", "teacher": str(tiny)},
        "training": TRAINING,
    }
    trainer, info = build(load_config(write_config(tmp_path, config)))
    examples = trainer.datasets["parallel"]
    assert [e.texts for e in examples] == [("사과", "apple"), ("고양이", "cat")]
    teacher = munjang.load_encoder(tiny, device="cpu")
    assert examples[0].label == pytest.approx(tuple(teacher.encode("사과").tolist()), abs=1e-5)
    assert info["output_dir"] == str(tmp_path / "runs" / "train")  # default: runs/<config name>


def test_relative_paths_resolve_against_the_yaml_folder_and_tilde_expands(
    tmp_path: Path, tiny: Path, monkeypatch
) -> None:
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    shutil.copytree(tiny, home / "models" / "tiny")
    monkeypatch.setenv("HOME", str(home))
    write_sts(tmp_path / "shared" / "train.tsv", 4)
    config = {
        "model": "~/models/tiny",
        "output_dir": "../runs/x",
        "tasks": [{"data": {"path": "../shared/train.tsv", "format": "sts"}, "loss": "cosine"}],
    }
    path = write_config(tmp_path / "configs", config)
    monkeypatch.chdir(home)  # the working directory does not matter
    loaded = load_config(path)
    assert loaded.model.target == str(home / "models" / "tiny") and loaded.model.value == "~/models/tiny"
    assert loaded.output_dir == tmp_path / "runs" / "x"
    assert loaded.tasks[0].data.path == tmp_path / "shared" / "train.tsv"
    assert loaded.tasks[0].name == "sts"  # defaults to the format
    build(loaded, dry_run=True)  # the files are there
    hub = load_config(
        write_config(tmp_path / "configs", {**config, "model": "intfloat/multilingual-e5-small"})
    )
    assert not hub.model.is_path and hub.model.target == "intfloat/multilingual-e5-small"


def _error(tmp_path: Path, config: dict) -> str:
    with pytest.raises((ConfigError, DataFormatError, FileNotFoundError)) as info:
        build(load_config(write_config(tmp_path, config)), dry_run=True)
    return str(info.value)


STS = {"path": "data/train.tsv", "format": "sts"}


def one_task(loss: object = "cosent", **data: object) -> dict:
    """A config change: one task on data/train.tsv (format sts unless `data` says otherwise)."""
    return {"tasks": [{"data": {**STS, **data}, "loss": loss}]}


def evaluator(**values: object) -> dict:
    return {"evaluator": {"type": "sts", "path": "data/dev.tsv", **values}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (one_task({"name": "foo"}), "tasks[0].loss.name: unknown loss 'foo'; choose from softmax, cosine"),
        (one_task(format="csv"), "tasks[0].data.format: unknown format 'csv'; choose from sts, nli-pairs"),
        ({"training": {"epoch": 2}}, "training.epoch: unknown training argument; known: batch_size"),
        ({"training": {"epochs": 0}}, "training: epochs must be at least 1, not 0"),
        ({"training": {"learning_rate": "fast"}}, "training.learning_rate: expected a number, got 'fast'"),
        ({"training": {"output_dir": "x"}}, "training.output_dir: set output_dir at the top level"),
        (one_task(path="data/nope.tsv"), "tasks[0].data.path: {tmp}/data/nope.tsv: no such file"),
        (evaluator(path="data/gone.tsv"), "evaluator.path: {tmp}/data/gone.tsv: no such file"),
        (evaluator(type="spearman"), "evaluator.type: unknown evaluator type 'spearman'; choose from sts"),
        (evaluator(batch=4), "evaluator.batch: unknown option of the sts evaluator; options: name, batch"),
        (one_task({"name": "cosent", "margin": 1}), "tasks[0].loss.margin: unknown option of loss 'cosent'"),
        (one_task("triplet"), "tasks[0].loss.name: loss 'triplet' reads 3 texts per example, but format sts"),
        (one_task("mse"), "tasks[0].loss.name: loss 'mse' trains towards teacher embeddings"),
        (one_task("softmax"), "tasks[0].loss.name: loss 'softmax' needs class labels"),
        (one_task("mnrl", format="table", columns=["sentence1"]),
         "tasks[0].loss.name: loss 'mnrl' reads 2 or more texts per example, but format table gives 1"),
        (one_task(columns=["a"]), "tasks[0].data.columns: only for format table, not sts"),
        (one_task(format_options={"sep": ","}),
         "tasks[0].data.format_options.sep: unknown option of read_sts; options: format, sentence1"),
        ({"tasks": [{"data": STS}]}, "tasks[0].loss: missing (required)"),
        ({"tasks": [{"data": STS, "loss": "cosent"}] * 2},
         "tasks[1].name: 'sts' is also the name of tasks[0]"),
        (one_task({"name": "matryoshka", "loss": "cosent"}),
         "tasks[0].loss.matryoshka_dims: missing (required by loss 'matryoshka')"),
        (evaluator(type="label-accuracy", loss_task="sts"),
         "evaluator.loss_task: task 'sts' trains with loss 'cosent'; label-accuracy needs a softmax task"),
        ({"evaluator": [evaluator()["evaluator"]] * 2},
         "evaluator[1].name: 'sts' is also the name of evaluator[0]"),
        ({"model": "{tmp}/no-model"}, "model: {tmp}/no-model: no such model folder"),
        ({"modle": "x"}, "modle: unknown key; expected one of model, pooling"),
        ({"tasks": []}, "tasks: expected a list of one or more tasks"),
    ],
)  # fmt: skip
def test_config_errors_name_the_key(tmp_path: Path, tiny: Path, change: dict, message: str) -> None:
    config = sts_config(tmp_path, tiny)
    config.update(json.loads(json.dumps(change).replace("{tmp}", str(tmp_path))))
    assert message.replace("{tmp}", str(tmp_path)) in _error(tmp_path, config)


def test_bad_yaml_names_file_and_line_through_the_cli(tmp_path: Path, capsys, monkeypatch) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("model: x\ntasks:\n  - name: a\n   data: {path: b}\n", encoding="utf-8")
    code, out, err = run(["train", "--config", str(path)], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {path} line 4") and len(err.strip().splitlines()) == 1
    path.write_text("model: x\nmodel: y\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.yaml line 2, column 1: duplicate key 'model'"):
        load_config(path)
    path.write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="the config is empty"):
        load_config(path)
    code, _, err = run(["train", "--config", str(tmp_path / "none.yaml")], capsys, monkeypatch)
    assert code == 2 and err == f"error: {tmp_path / 'none.yaml'}: no such config file\n"


def test_cli_config_error_is_one_line(tmp_path: Path, tiny: Path, capsys, monkeypatch) -> None:
    config = sts_config(tmp_path, tiny)
    config["tasks"][0]["loss"] = {"name": "foo"}
    code, out, err = run(["train", "--config", str(write_config(tmp_path, config))], capsys, monkeypatch)
    assert code == 2 and out == "" and err.startswith("error: tasks[0].loss.name: unknown loss 'foo'")
    assert len(err.strip().splitlines()) == 1


def test_yaml_conveniences(tmp_path: Path, tiny: Path) -> None:
    write_sts(tmp_path / "data" / "train.tsv", 4)
    path = tmp_path / "t.yaml"
    path.write_text(
        f"model: {tiny}\n"
        "tasks:\n  - data: {path: data/train.tsv, format: sts}\n    loss: {name: cosent, scale: 2e1}\n"
        "training:\n  learning_rate: 2e-5\n  mixed_precision: no\n  prompt_name: null\n",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.training.learning_rate == 2e-5 and config.training.mixed_precision == "no"
    assert config.tasks[0].loss.options == {"scale": 20.0}


@pytest.mark.parametrize("name", ["train_korsts.yaml", "train_multitask.yaml", "korean_model.yaml"])
def test_example_configs_load_and_validate(name: str) -> None:
    config = load_config(REPO / "examples" / name)
    assert config.model.value == "multilingual-e5-small" and not config.model.is_path
    assert config.output_dir.parent == REPO / "runs"
    assert config.training.prompt_name == "query" and config.training.freeze_word_embeddings
    assert all(ev.options["prompt_name"] == "query" for ev in config.evaluators)
    if name == "train_korsts.yaml":
        assert [(t.data.format, t.loss.name) for t in config.tasks] == [("sts", "cosent")]
        assert (config.training.epochs, config.training.batch_size, config.training.learning_rate) == (
            4,
            16,
            2e-5,
        )
    elif name == "train_multitask.yaml":
        assert [(t.data.format, t.loss.name) for t in config.tasks] == [
            ("nli-triplets", "mnrl"),
            ("sts", "cosent"),
        ]
        assert config.training.multi_task == "round_robin"
    else:  # the recipe behind bench/results/train_korsts_multitask.json (KorSTS test 82.40)
        assert [(t.data.format, t.loss.name) for t in config.tasks] == [
            ("sts", "cosent"),
            ("nli-triplets", "mnrl"),
        ]
        args = config.training
        assert (args.epochs, args.batch_size, args.learning_rate, args.eval_steps, args.seed) == (
            4,
            16,
            2e-5,
            180,
            42,
        )
        assert config.evaluators[-1].options.get("name") == "korsts-dev", "best/ is chosen on dev"
    assert (REPO.parent / "shared" / "data").is_dir(), (
        "../shared/data is missing: the example configs read it"
    )
    trainer, info = build(config, dry_run=True, models=False)  # the model may be absent (CI)
    assert trainer is None and info["steps"] is None


def test_dry_run_reads_nothing(tmp_path: Path, tiny: Path, capsys, monkeypatch) -> None:
    path = write_config(tmp_path, sts_config(tmp_path, tiny))

    def no_loading(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a dry run must not load a model")

    monkeypatch.setattr("munjang.encoders.dense.encoder.load_encoder", no_loading)
    code, out, err = run(["train", "--config", str(path), "--dry-run"], capsys, monkeypatch)
    assert code == 0, err
    assert "config OK" in out and not (tmp_path / "out").exists()
    assert train_config.describe(load_config(path))["tasks"][0]["loss"] == "cosent"


def test_a_bad_data_row_is_reported_with_key_file_and_line_before_the_model_loads(
    tmp_path: Path, tiny: Path, monkeypatch
) -> None:
    config = sts_config(tmp_path, tiny)
    bad = tmp_path / "data" / "train.tsv"
    bad.write_text(bad.read_text(encoding="utf-8").replace("\t5.0\t", "\tfive\t", 1), encoding="utf-8")

    def no_loading(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the data are read before the model is loaded")

    monkeypatch.setattr("munjang.encoders.dense.encoder.load_encoder", no_loading)
    with pytest.raises(DataFormatError, match=rf"^tasks\[0\]\.data: {bad} line \d+: score 'five'"):
        build(load_config(write_config(tmp_path, config)))


def test_cross_encoder_config_trains_and_saves_a_cross_encoder(
    tmp_path: Path, tiny: Path, capsys, monkeypatch
) -> None:
    config = sts_config(tmp_path, tiny, architecture="cross-encoder")
    config["tasks"][0]["loss"] = "bce"
    path = write_config(tmp_path, config)
    code, out, err = run(["train", "--config", str(path)], capsys, monkeypatch)
    assert code == 0, err
    assert "loss bce" in out and "best spearman" in out
    from munjang import load_cross_encoder

    model = load_cross_encoder(tmp_path / "out" / "final")
    assert model.head == "seeds" and model.num_labels == 1
    assert "Cross-encoder trained with munjang" in (tmp_path / "out" / "final" / "README.md").read_text()


def test_cross_encoder_nli_config_infers_three_labels(tmp_path: Path, tiny: Path) -> None:
    write_nli(tmp_path / "data" / "nli.tsv", 6)
    config = sts_config(
        tmp_path,
        tiny,
        architecture="cross-encoder",
        tasks=[{"data": {"path": "data/nli.tsv", "format": "nli-pairs"}, "loss": "cross-entropy"}],
        evaluator={"type": "classification", "path": "data/nli.tsv"},
    )
    loaded = load_config(write_config(tmp_path, config))
    assert loaded.num_labels == 3
    trainer, info = build(loaded)
    assert trainer.model.num_labels == 3 and info["evaluators"][0]["size"] == 18
    metrics = trainer.evaluator(trainer.model)
    # an untrained 3-label head over 18 pairs: the accuracy is a count of hits out of 18
    assert 0.0 <= metrics["accuracy"] <= 1.0 and round(metrics["accuracy"] * 18, 6).is_integer()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"architecture": "tri-encoder"}, "architecture: choose bi-encoder or cross-encoder"),
        ({"head": "seeds"}, "head: only for architecture: cross-encoder"),
        ({"architecture": "cross-encoder"}, "tasks[0].loss.name: unknown cross-encoder loss 'cosent'"),
        ({"architecture": "cross-encoder", "pooling": "cls", **one_task("bce")},
         "pooling: a cross-encoder has"),
        ({"architecture": "cross-encoder", **one_task("cross-entropy")},
         "tasks[0].loss.name: loss 'cross-entropy' needs class labels"),
        ({"architecture": "cross-encoder", **one_task("bce"), **evaluator(type="triplet")},
         "evaluator.type: unknown cross-encoder evaluator type 'triplet'; choose from sts, classification"),
        ({"architecture": "cross-encoder", "num_labels": 3, **one_task("bce")},
         "tasks[0].loss: needs 1 labels, but num_labels is 3"),
    ],
)  # fmt: skip
def test_cross_encoder_config_errors_name_the_key(
    tmp_path: Path, tiny: Path, change: dict, message: str
) -> None:
    config = sts_config(tmp_path, tiny)
    config.update(change)
    assert message in _error(tmp_path, config)


def test_cross_encoder_example_config_validates() -> None:
    config = load_config(REPO / "examples" / "train_cross_encoder_korsts.yaml")
    assert config.architecture == "cross-encoder" and config.head == "seeds" and config.num_labels == 1
    assert [(t.data.format, t.loss.name) for t in config.tasks] == [("sts", "bce")]
    trainer, info = build(config, dry_run=True, models=False)
    assert trainer is None and info["tasks"][0]["loss"] == "bce"


def test_each_loss_declares_the_label_kind_configs_check_against() -> None:
    from munjang.losses import LOSSES
    from munjang.losses.base import LABEL_KINDS

    kinds = {name: cls.label_kind for name, cls in LOSSES.items()}
    assert set(kinds.values()) <= set(LABEL_KINDS)
    assert kinds["softmax"] == "class" and kinds["mse"] == "vector"
    assert kinds["mnrl"] is None and kinds["triplet"] is None
    assert kinds["cosent"] == kinds["cosine"] == kinds["contrastive"] == "number"
