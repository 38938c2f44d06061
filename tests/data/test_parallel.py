"""Parallel sentences: STSb-KorSTS alignment on the real files, the parallel reader, the held-out split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from munjang.data.parallel import ParallelData, align_stsb_korsts, read_parallel, split_parallel
from munjang.errors import DataFormatError

KORSTS_HEADER = "genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2\n"

SPLITS = {
    # split: (korsts file, aligned rows, pairs after removing repeats)
    "train": ("sts-train.tsv.gz", 5749, 10536),
    "dev": ("sts-dev.tsv", 1500, 2910),
    "test": ("sts-test.tsv", 1379, 2552),
}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def align(data_dir: Path, split: str) -> ParallelData:
    return align_stsb_korsts(data_dir / "stsb" / f"sts-{split}.csv", data_dir / "korsts" / SPLITS[split][0])


# -- the real files --------------------------------------------------------------------------------


@pytest.mark.parametrize("split", SPLITS)
def test_alignment_counts(data_dir: Path, split: str) -> None:
    _, rows, unique_pairs = SPLITS[split]
    data = align(data_dir, split)
    assert len(data) == unique_pairs
    assert data.info == {
        "rows": rows,
        "unmatched_stsb": 0,
        "unmatched_korsts": 0,
        "score_mismatches": 0,
        "pairs": 2 * rows,
        "duplicate_pairs": 2 * rows - unique_pairs,
    }
    assert len(set(zip(data.sources, data.targets, strict=True))) == len(data)
    # Within a split every English sentence has exactly one Korean translation.
    assert len(set(data.sources)) == len(data)


@pytest.mark.parametrize(
    ("split", "english", "korean"),
    [
        ("test", "A girl is styling her hair.", "한 소녀가 머리를 스타일링하고 있다."),
        ("test", "A girl is brushing her hair.", "한 소녀가 머리를 빗고 있다."),
        (
            "test",
            "North Korea Delegation Meets With South Korean Officials",
            "북한 대표단은 한국 관리들과 만난다.",
        ),
        (  # a main-forums row whose STSb text ends in a space
            "test",
            "I remained under the banyan tree, exhausted by my daily ritual of dragooning the men "
            "every two hours.",
            "나는 두 시간마다 남자들을 끌고 가는 나의 일상 의식에 지쳐서 반얀나무 아래에 남아 있었다.",
        ),
        ("dev", "A man with a hard hat is dancing.", "안전모를 가진 한 남자가 춤을 추고 있다."),
        (
            "dev",
            "New York police officer critically wounded in hatchet attack",
            "도끼 공격으로 중상을 입은 뉴욕 경찰관",
        ),
        ("train", "A plane is taking off.", "비행기가 이륙하고 있다."),
        (
            "train",
            "How about some testimonies from real health experts?",
            "실제 보건 전문가들의 증언은 어떨까요?",
        ),
    ],
)
def test_known_pairs(data_dir: Path, split: str, english: str, korean: str) -> None:
    data = align(data_dir, split)
    assert data.targets[data.sources.index(english)] == korean


def test_first_test_pairs_in_row_order(data_dir: Path) -> None:
    data = align(data_dir, "test")
    assert data.sources[:2] == ["A girl is styling her hair.", "A girl is brushing her hair."]
    assert data.targets[:2] == ["한 소녀가 머리를 스타일링하고 있다.", "한 소녀가 머리를 빗고 있다."]


def test_mismatched_splits_are_refused(data_dir: Path) -> None:
    with pytest.raises(DataFormatError, match=r"sts-dev\.csv line 1: no KorSTS row with key"):
        align_stsb_korsts(data_dir / "stsb" / "sts-dev.csv", data_dir / "korsts" / "sts-test.tsv")


# -- alignment rules on small files ----------------------------------------------------------------


def stsb_line(genre: str, pair_id: str, score: str, s1: str, s2: str) -> str:
    return f"{genre}\tdeft-forum\t2014\t{pair_id}\t{score}\t{s1}\t{s2}\tsource\tsource\n"


def korsts_line(genre: str, pair_id: str, score: str, s1: str, s2: str) -> str:
    return f"{genre}\tdeft-forum\t2014\t{pair_id}\t{score}\t{s1}\t{s2}\n"


def test_genre_spellings_repeated_keys_and_duplicates(tmp_path: Path) -> None:
    en = write(
        tmp_path / "en.csv",
        stsb_line("main-forum", "0001", "1.0", "a", "b")
        + stsb_line("main-forum", "0001", "2.0", "c ", "d")
        + stsb_line("main-forums", "0002", "3.0", "a", "e"),
    )
    ko = write(
        tmp_path / "ko.tsv",
        KORSTS_HEADER
        + korsts_line("main-forums", "0002", "3.0", "가", "마")
        + korsts_line("main-forums", "0001", "1.0", "가", "나")
        + korsts_line("main-forum", "0001", "2.0", "다", "라"),
    )
    data = align_stsb_korsts(en, ko)
    assert data.sources == ["a", "b", "c", "d", "e"]
    assert data.targets == ["가", "나", "다", "라", "마"]
    assert data.info["rows"] == 3 and data.info["duplicate_pairs"] == 1


def test_unmatched_and_score_mismatch(tmp_path: Path) -> None:
    en = write(
        tmp_path / "en.csv",
        stsb_line("main-news", "0001", "1.0", "a", "b") + stsb_line("main-news", "0002", "2.0", "c", "d"),
    )
    ko = write(
        tmp_path / "ko.tsv",
        KORSTS_HEADER
        + korsts_line("main-news", "0001", "1.5", "가", "나")
        + korsts_line("main-news", "0002", "2.0", "다", "라")
        + korsts_line("main-news", "0003", "2.0", "바", "사"),
    )
    with pytest.raises(
        DataFormatError, match=r"en\.csv line 1: score 1 differs from 1.5 on .*ko\.tsv line 2"
    ):
        align_stsb_korsts(en, ko)
    data = align_stsb_korsts(en, ko, strict=False)
    assert (data.sources, data.targets) == (["c", "d"], ["다", "라"])
    assert data.info["score_mismatches"] == 1 and data.info["unmatched_korsts"] == 1
    en_only = write(tmp_path / "en2.csv", stsb_line("main-news", "0002", "2.0", "c", "d"))
    with pytest.raises(DataFormatError, match=r"ko\.tsv line 2: no STSb row with key"):
        align_stsb_korsts(en_only, ko)


def test_alignment_malformed_files(tmp_path: Path) -> None:
    en = write(tmp_path / "en.csv", stsb_line("main-news", "0001", "1.0", "a", "b"))
    no_header = write(tmp_path / "ko.tsv", korsts_line("main-news", "0001", "1.0", "가", "나"))
    with pytest.raises(DataFormatError, match=r"ko\.tsv line 1: expected the KorSTS header"):
        align_stsb_korsts(en, no_header)
    short = write(tmp_path / "short.csv", "main-news\tx\t2014\t0001\t1.0\ta\n")
    with pytest.raises(DataFormatError, match=r"short\.csv line 1: 6 tab-separated fields"):
        align_stsb_korsts(short, no_header)
    bad_score = write(tmp_path / "score.csv", stsb_line("main-news", "0001", "high", "a", "b"))
    with pytest.raises(DataFormatError, match=r"score\.csv line 1: score 'high' is not a number"):
        align_stsb_korsts(bad_score, no_header)


# -- read_parallel ---------------------------------------------------------------------------------


def test_read_parallel_tsv_without_header(tmp_path: Path) -> None:
    path = write(tmp_path / "talks-en-ko.tsv", 'He said "hi.\t그가 "안녕.\textra\n\nYes.\t네.\n')
    data = read_parallel(path)
    assert data.sources == ['He said "hi.', "Yes."]
    assert data.targets == ['그가 "안녕.', "네."]
    assert data.origin == str(path)


def test_read_parallel_named_columns_and_jsonl(tmp_path: Path) -> None:
    csv_path = write(tmp_path / "p.csv", 'english,non_english\n"Hello, you.",안녕\n')
    data = read_parallel(csv_path, source="english", target="non_english")
    assert (data.sources, data.targets) == (["Hello, you."], ["안녕"])
    jsonl = write(tmp_path / "p.jsonl", json.dumps({"source": "Hi.", "target": "안녕."}) + "\n")
    assert read_parallel(jsonl).targets == ["안녕."]
    renamed = write(tmp_path / "q.jsonl", json.dumps({"en": "Hi.", "ko": "안녕."}) + "\n")
    assert read_parallel(renamed, source="en", target="ko").sources == ["Hi."]
    with pytest.raises(DataFormatError, match=r"q\.jsonl line 1: no 'source' field"):
        read_parallel(renamed)


def test_read_parallel_malformed(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"a\.tsv line 2: 1 fields, need at least 2"):
        read_parallel(write(tmp_path / "a.tsv", "a\tb\nlonely\n"))
    with pytest.raises(DataFormatError, match=r"b\.tsv line 1: column 1 is empty"):
        read_parallel(write(tmp_path / "b.tsv", "a\t\n"))
    with pytest.raises(DataFormatError, match="no sentence pairs"):
        read_parallel(write(tmp_path / "c.tsv", "\n\n"))
    with pytest.raises(DataFormatError, match=r"d\.jsonl line 2: invalid JSON"):
        read_parallel(write(tmp_path / "d.jsonl", '{"source": "a", "target": "b"}\n{oops\n'))


# -- split_parallel --------------------------------------------------------------------------------


def test_split_parallel() -> None:
    data = ParallelData([f"s{i}" for i in range(20)], [f"t{i}" for i in range(20)], origin="x")
    rest, held = split_parallel(data, 5, seed=3)
    assert len(rest) == 15 and len(held) == 5
    assert sorted(rest.sources + held.sources) == sorted(data.sources)
    assert all(t == "t" + s[1:] for s, t in zip(held.sources, held.targets, strict=True))
    assert held.sources == sorted(held.sources, key=lambda s: int(s[1:]))  # original order kept
    assert held.origin == "x (held out, seed 3)"
    again_rest, again_held = split_parallel(data, 5, seed=3)
    assert again_held.sources == held.sources and again_rest.sources == rest.sources
    assert split_parallel(data, 5, seed=4)[1].sources != held.sources
    assert len(split_parallel(data, 0)[1]) == 0 and len(split_parallel(data, 20)[0]) == 0
    for bad in (-1, 21, 2.5, True):
        with pytest.raises(ValueError, match="held_out"):
            split_parallel(data, bad)  # type: ignore[arg-type]


def test_parallel_data_lengths() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        ParallelData(["a"], [])
