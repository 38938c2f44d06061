"""Encoding a corpus on Ray into resumable parquet shards: the same vectors as one process, ids in
order, several files and formats, reruns that encode only what is missing (also after a killed
driver), folders of other inputs refused, bad rows named by file and line."""

from __future__ import annotations

import csv
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from munjang import DataFormatError
from munjang.distributed import EmbeddingsFolderError, encode_with_ray, place_workers, read_embeddings
from tests.helpers.cli import run_cli
from tests.helpers.paths import SCRIPTS

ray = pytest.importorskip("ray")
# Ray Data reads its own deprecated settings when it copies its context.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SHARD = 30
SUBJECTS = ("A man", "The cat", "Two children", "한 남자가", "고양이가", "아이들이")
ACTIONS = (
    "is playing a guitar",
    "sleeps on the sofa",
    "eat bread, slowly",
    "기타를 치고 있다",
    "소파에서 잔다",
)
# 240 sentences of varied length (padding differs between batches), with commas and quotes for CSV.
TEXTS = [
    f"{SUBJECTS[i % 6]} {ACTIONS[i % 5]} #{i}" + (' "again"' * (i % 9)) + (" 그리고" * (i % 4))
    for i in range(240)
]
IDS = (
    [f"doc-{i}" for i in range(60)]
    + [f"b-{i}" for i in range(60, 120)]
    + [f"c.txt:{n}" for n in range(1, 61)]
    + [str(1000 + i) for i in range(180, 240)]
)


def write_corpus(folder: Path, texts: list[str] = TEXTS) -> Path:
    """Four files, four formats, in name order: jsonl with ids, csv with ids, txt without, parquet with
    integer ids."""
    folder.mkdir(parents=True)
    with open(folder / "a.jsonl", "w", encoding="utf-8") as f:
        for i in range(60):
            f.write(json.dumps({"id": f"doc-{i}", "text": texts[i], "lang": "x"}, ensure_ascii=False) + "\n")
    with open(folder / "b.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text"])
        writer.writerows([f"b-{i}", texts[i]] for i in range(60, 120))
    (folder / "c.txt").write_text("".join(t + "\n" for t in texts[120:180]), encoding="utf-8")
    table = pa.table({"id": list(range(1180, 1240)), "text": texts[180:240]})
    pq.write_table(table, folder / "d.parquet")
    return folder


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """A light local Ray (2 CPUs, no dashboard) for the whole module; its address for other drivers."""
    ray.init(
        num_cpus=2, include_dashboard=False, logging_level=logging.WARNING, object_store_memory=256 * 2**20
    )
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def encoded(ray_address: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict, list[str]]:
    """The corpus folder, its encoded folder, the summary and the progress lines of the first run."""
    root = tmp_path_factory.mktemp("ray-encode")
    corpus = write_corpus(root / "corpus")
    lines: list[str] = []
    summary = encode_with_ray(
        [corpus],
        root / "out",
        shard_size=SHARD,
        workers=2,
        threads=1,
        progress=lines.append,
        progress_bars=False,
    )
    return corpus, root / "out", summary, lines


def mtimes(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("part-*.parquet")}


def test_shards_match_one_process_with_ids_in_corpus_order(encoded, encoder) -> None:
    _, out, summary, lines = encoded
    assert (
        summary["total_rows"],
        summary["shards"],
        summary["shards_encoded"],
        summary["shards_skipped"],
    ) == (
        240,
        8,
        8,
        0,
    )
    assert (summary["workers"], summary["threads_per_worker"], summary["device"]) == (2, 1, "cpu")
    assert sorted(mtimes(out)) == [f"part-{i:05d}.parquet" for i in range(8)]
    schema = pq.read_schema(out / "part-00000.parquet")
    assert schema.field("id").type == pa.string()
    assert schema.field("embedding").type == pa.list_(pa.float32(), 384)
    assert pq.read_metadata(out / "part-00007.parquet").num_rows == 30

    ids, vectors = read_embeddings(out)
    assert ids == IDS
    assert vectors.dtype == np.float32
    assert np.abs(vectors - encoder.encode(TEXTS)).max() <= 1e-5

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] is True
    assert (manifest["dim"], manifest["shard_size"], manifest["total_rows"]) == (384, SHARD, 240)
    assert [(Path(f["path"]).name, f["rows"]) for f in manifest["inputs"]] == [
        ("a.jsonl", 60),
        ("b.csv", 60),
        ("c.txt", 60),
        ("d.parquet", 60),
    ]
    assert "0 already written, 8 to encode" in lines[0]
    assert sum("rows written" in line for line in lines) == 8


def test_rerun_encodes_only_the_missing_shards(encoded, encoder, tmp_path) -> None:
    corpus, out, _, _ = encoded
    work = tmp_path / "out"
    shutil.copytree(out, work)
    (work / "part-00003.parquet").unlink()
    # What a driver killed while writing leaves: a temporary file, never a half shard under the real name.
    (work / ".tmp-part-00005.parquet.12345").write_bytes(b"PAR1 half a shard")
    # A damaged shard (not something this code writes) is encoded again too.
    damaged = work / "part-00006.parquet"
    damaged.write_bytes(damaged.read_bytes()[:100])
    kept = {k: v for k, v in mtimes(work).items() if k != damaged.name}

    lines: list[str] = []
    # Another worker count than the first run: shards depend on the rows only, so the folder continues
    # (and one actor starts faster than two on two cores).
    summary = encode_with_ray(
        [corpus], work, shard_size=SHARD, workers=1, threads=2, progress=lines.append, progress_bars=False
    )
    assert (summary["workers"], summary["threads_per_worker"]) == (1, 2)
    assert (summary["shards_encoded"], summary["shards_skipped"], summary["rows_encoded"]) == (2, 6, 60)
    assert summary["temporary_files_removed"] == 1
    assert not list(work.glob(".tmp-*"))
    assert {k: v for k, v in mtimes(work).items() if k in kept} == kept
    written = sorted(line.split()[1] for line in lines if "rows written" in line)
    assert written == ["part-00003.parquet:", "part-00006.parquet:"]
    ids, vectors = read_embeddings(work)
    assert ids == IDS
    assert np.abs(vectors - encoder.encode(TEXTS)).max() <= 1e-5

    again = encode_with_ray([corpus / "*"], work, shard_size=SHARD, workers=2, threads=1, progress=None)
    assert (again["shards_encoded"], again["shards_skipped"], again["rows_encoded"]) == (0, 8, 0)
    assert "workers" not in again  # nothing to encode: no actor pool was started


def test_cli_encode_ray_continues_the_same_folder_and_reports_errors(encoded, tmp_path, capsys, monkeypatch):
    corpus, out, _, _ = encoded
    work = tmp_path / "out"
    shutil.copytree(out, work)
    args = ["encode", str(corpus), "--ray", "-o", str(work), "--shard-size", str(SHARD), "--workers", "2"]
    code, stdout, err = run_cli([*args, "--threads", "1"], capsys, monkeypatch)
    assert code == 0, err
    assert "0 encoded and 8 already there" in stdout  # the CLI's options make the same manifest
    bad = [
        (["encode", str(corpus), "--ray"], "name it with --output"),
        ([*args, "--processes", "2"], "--processes does not apply"),
        ([*args, "--shard-size", "7"], "shard_size: 30 there, 7 now"),
        (["encode", str(tmp_path / "nope.txt"), "--ray", "-o", str(work)], "nope.txt: no such file"),
        (["encode", str(corpus / "c.txt"), str(corpus / "a.jsonl")], "several files needs --ray"),
        (["encode", str(corpus / "c.txt"), "--workers", "2"], "--workers needs --ray"),
        (["encode", str(corpus), "--ray", "-o", str(tmp_path / "x.npy")], "folder of parquet shards"),
    ]
    for argv, message in bad:
        code, _, err = run_cli(argv, capsys, monkeypatch)
        assert code == 2, argv
        assert message in err and "Traceback" not in err, err


def test_a_folder_of_other_inputs_or_another_model_is_refused(encoded, encoder, tmp_path) -> None:
    corpus, out, _, _ = encoded
    work = tmp_path / "out"
    shutil.copytree(out, work)
    before = {**mtimes(work), "manifest": (work / "manifest.json").stat().st_mtime_ns}
    changed = write_corpus(tmp_path / "changed", [*TEXTS[:100], "a different sentence", *TEXTS[101:]])
    other_model = tmp_path / "model"
    encoder.save(other_model)
    common = {"workers": 2, "threads": 1, "progress": None}
    cases = [
        ({"inputs": [changed], "shard_size": SHARD}, "inputs_sha256"),
        ({"inputs": [corpus], "shard_size": 40}, "shard_size: 30 there, 40 now"),
        ({"inputs": [corpus], "shard_size": SHARD, "truncate_dim": 64}, "dim: 384 there, 64 now"),
        ({"inputs": [corpus], "shard_size": SHARD, "normalize_embeddings": True}, "encode_options"),
        ({"inputs": [corpus], "shard_size": SHARD, "model": str(other_model)}, "model: "),
    ]
    for options, message in cases:
        with pytest.raises(EmbeddingsFolderError, match="use a new output folder") as caught:
            encode_with_ray(output_dir=work, **common, **options)
        assert message in str(caught.value)
    assert {**mtimes(work), "manifest": (work / "manifest.json").stat().st_mtime_ns} == before

    (work / "manifest.json").unlink()
    with pytest.raises(EmbeddingsFolderError, match="8 shard files but no manifest.json"):
        encode_with_ray([corpus], work, shard_size=SHARD, **common)
    with pytest.raises(EmbeddingsFolderError, match="no manifest.json"):
        read_embeddings(work)
    (work / "part-00002.parquet").unlink()
    shutil.copy(out / "manifest.json", work / "manifest.json")
    with pytest.raises(EmbeddingsFolderError, match="1 of 8 shards are missing"):
        read_embeddings(work)


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "content", "error", "message"),
    [
        ("blank.txt", "one\n\nthree\n", DataFormatError, r"blank\.txt line 2: the text is empty"),
        (
            "spaces.jsonl",
            '{"text": "ok"}\n{"text": "   "}\n',
            DataFormatError,
            r"spaces\.jsonl line 2: .*empty",
        ),
        (
            "number.jsonl",
            '{"text": "ok"}\n{"text": 7}\n',
            DataFormatError,
            r"number\.jsonl line 2: 'text' is int",
        ),
        ("broken.jsonl", '{"text": "ok"\n', DataFormatError, r"broken\.jsonl line 1: not valid JSON"),
        ("nofield.jsonl", '{"body": "ok"}\n', DataFormatError, r"nofield\.jsonl line 1: no 'text' field"),
        ("nocol.csv", "id,body\n1,ok\n", DataFormatError, r"nocol\.csv line 1: no column 'text'"),
        ("short.csv", "id,text\n1,ok\n2\n", DataFormatError, r"short\.csv line 3: 1 fields"),
        ("empty.txt", "", DataFormatError, "no rows in"),
        (
            "dup.jsonl",
            '{"id": 1, "text": "a"}\n{"id": "1", "text": "b"}\n',
            DataFormatError,
            "id '1' was already",
        ),
        ("fake.parquet", b"not parquet at all", DataFormatError, r"fake\.parquet: not a readable parquet"),
    ],
)
def test_bad_input_fails_before_any_work_naming_file_and_line(
    tmp_path, name, content, error, message
) -> None:
    path = _write(tmp_path / name, content)
    with pytest.raises(error, match=message):
        encode_with_ray([path], tmp_path / "out", progress=None)
    assert not (tmp_path / "out").exists()


def test_bad_parquet_columns_missing_inputs_and_options_are_named(tmp_path) -> None:
    def fails(inputs: list, error: type[Exception], message: str, **options: object) -> None:
        with pytest.raises(error, match=message):
            encode_with_ray(inputs, tmp_path / "out", progress=None, **options)
        assert not (tmp_path / "out").exists()

    pq.write_table(pa.table({"text": ["ok", None]}), tmp_path / "null.parquet")
    fails([tmp_path / "null.parquet"], DataFormatError, r"null\.parquet row 2: 'text' is null")
    pq.write_table(pa.table({"text": [1, 2]}), tmp_path / "ints.parquet")
    fails([tmp_path / "ints.parquet"], DataFormatError, r"ints\.parquet: column 'text' is int64, not text")
    pq.write_table(pa.table({"id": [1.5], "text": ["x"]}), tmp_path / "floatid.parquet")
    fails([tmp_path / "floatid.parquet"], DataFormatError, r"column 'id' is double")
    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "nocol.parquet")
    fails([tmp_path / "nocol.parquet"], DataFormatError, r"no column 'text' \(columns: body\)")
    _write(tmp_path / "a.txt", "one\n")
    _write(tmp_path / "b.jsonl", '{"id": "a.txt:1", "text": "two"}\n')
    fails(
        [tmp_path / "a.txt", tmp_path / "b.jsonl"],
        DataFormatError,
        r"b\.jsonl line 1: id 'a\.txt:1' was already",
    )
    fails([tmp_path / "missing.txt"], FileNotFoundError, "no such file or folder")
    fails([str(tmp_path / "*.tsv")], FileNotFoundError, "matches no file")
    (tmp_path / "empty").mkdir()
    fails([tmp_path / "empty"], FileNotFoundError, "no corpus files in the folder")
    fails([tmp_path / "a.txt"], ValueError, "unknown format 'xml'", format="xml")
    fails([tmp_path / "a.txt"], ValueError, "shard_size must be at least 1", shard_size=0)
    fails([], ValueError, "no inputs")


def test_workers_take_a_gpu_each_or_share_the_cpus() -> None:
    gpu = place_workers({"CPU": 16, "GPU": 4}, None, None, None)
    assert (gpu.workers, gpu.device, gpu.resources) == (4, "cuda", {"num_gpus": 1, "num_cpus": 1})
    assert place_workers({"CPU": 16, "GPU": 4}, 2, None, "cpu").resources == {"num_cpus": 8}
    cpu = place_workers({"CPU": 8}, None, None, None)
    assert (cpu.workers, cpu.threads, cpu.device, cpu.resources) == (2, 4, "cpu", {"num_cpus": 4})
    assert place_workers({"CPU": 1}, None, None, None).workers == 1
    with pytest.raises(ValueError, match="has 4 GPU"):
        place_workers({"CPU": 16, "GPU": 4}, 5, None, None)
    with pytest.raises(ValueError, match="need 9 CPUs, but the Ray cluster has 8"):
        place_workers({"CPU": 8}, 3, 3, None)


@pytest.mark.slow
def test_a_killed_driver_loses_only_the_shards_it_had_not_written(ray_address, encoder, tmp_path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    log = tmp_path / "driver.log"
    driver = SCRIPTS / "ray_encode_driver.py"
    command = [sys.executable, str(driver), str(corpus / "*"), "--output", str(out)]
    command += ["--address", ray_address, "--shard-size", "20", "--pause", "1"]
    with open(log, "w") as f:
        process = subprocess.Popen(command, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while len(list(out.glob("part-*.parquet"))) < 3:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no shards after 180 s"
            time.sleep(0.1)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    before = mtimes(out)
    assert 3 <= len(before) < 12, log.read_text()[-3000:]
    assert json.loads((out / "manifest.json").read_text())["complete"] is False

    summary = encode_with_ray(
        [corpus / "*"], out, shard_size=20, workers=2, threads=1, progress=None, progress_bars=False
    )
    assert (summary["shards_encoded"], summary["shards_skipped"]) == (12 - len(before), len(before))
    assert {k: v for k, v in mtimes(out).items() if k in before} == before
    ids, vectors = read_embeddings(out)
    assert ids == IDS
    assert np.abs(vectors - encoder.encode(TEXTS)).max() <= 1e-5


def test_an_unreachable_cluster_address_fails_at_once_with_its_name() -> None:
    """Ray retries an address where nothing listens for minutes; munjang names it within seconds."""
    import socket

    from munjang.distributed import ray_encode

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        open_port = listening.getsockname()[1]
        ray_encode.check_reachable(f"127.0.0.1:{open_port}")
        ray_encode.check_reachable(f"ray://127.0.0.1:{open_port}")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead_port = closed.getsockname()[1]
    ray_encode.check_reachable("auto")

    class NotStarted:
        def is_initialized(self) -> bool:
            return False

        def init(self, **_: object) -> None:
            raise AssertionError("ray.init must not be reached for an unreachable address")

    started = time.perf_counter()
    with pytest.raises(
        ray_encode.MunjangError, match=f"cannot reach the Ray cluster at ray://127.0.0.1:{dead_port}"
    ):
        ray_encode._connect(NotStarted(), f"ray://127.0.0.1:{dead_port}", None)
    assert time.perf_counter() - started < ray_encode.CONNECT_TIMEOUT_S
