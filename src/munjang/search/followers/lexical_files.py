"""The in-process BM25 index saved beside a folder collection, so a new reader maps it instead of
reading every stored token back (`lexical.LexicalIndex` with `files`).

    lexical/
      seg-F-E-XXXX.idx   one incremental-BM25 segment (texts F to E): its term table, postings, and
                         the texts' lengths, passage labels and passage starts; written once
      lexical-L-D.idx    the manifest: the segments in text order and the live-text bitmap, covering
                         the store watermark (label L, deletion D)

Files are written atomically (`index/array_file.py`), segments before the manifest that names them,
so a crash leaves the previous manifest whole; whatever is found is caught up from the store from
its watermark (passages after L, deletions after D), exactly as an index built in memory. A save
writes only the segments made since the last one (an add's own, and merges: O(log n) per posting
over the index's life) and the bitmap (n / 8 bytes). Files no manifest names are then removed, by
the writer only (it holds the collection's write lock). Each file is verified when it is opened
(`index/array_file.py`: checksums; the collection's id, `owner`; the manifest's watermark against its
name): a reader that finds a file gone tries the newest manifest again, one damaged or ahead of the
store (restored from an older copy) is set aside with a warning, then an older manifest is tried,
then the index is rebuilt from the store: never a wrong answer, at worst a slower open.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..backends.base import Watermark
from ..index.array_file import read_arrays, verify_arrays, write_arrays
from ..index.incremental_bm25 import Segment, TermTable
from ..index.verified_file import BAD, set_aside, skipped

FORMAT = 1
MANIFEST = re.compile(r"lexical-(\d+)-(\d+)\.idx")
SEGMENT = re.compile(r"seg-(\d+)-(\d+)-[0-9a-f]+\.idx")


class DamagedSegment(ValueError):
    """A segment file a manifest names fails verification."""

    def __init__(self, why: str, segment: Path) -> None:
        super().__init__(why)
        self.segment = segment


@dataclass
class Snapshot:
    """A saved (or about to be saved) lexical index: BM25 segments covering texts 0..n in order,
    per text its length and whether it is live, per passage its label, and `starts` (n + 1: text t
    is passages starts[t]:starts[t + 1]); the store watermark it covers."""

    watermark: Watermark
    segments: list[Segment]
    lengths: np.ndarray
    alive: np.ndarray
    labels: np.ndarray
    starts: np.ndarray


def save(folder: Path, snap: Snapshot, owner: str = "") -> dict[tuple[int, int], Segment]:
    """Write the segments not yet saved, then the manifest, then drop the files it does not name.
    Returns the newly written segments, mapped from their files, by text range."""
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[tuple[int, int], Segment] = {}
    names: list[str] = []
    for segment in snap.segments:
        if segment.file is None:
            name = f"seg-{segment.first}-{segment.end}-{secrets.token_hex(4)}.idx"
            first, end = segment.first, segment.end
            p0, p1 = int(snap.starts[first]), int(snap.starts[end])
            arrays = {
                "blob": segment.terms.blob, "offsets": segment.terms.offsets, "ptr": segment.ptr,
                "texts": segment.texts, "tfs": segment.tfs, "lengths": snap.lengths[first:end],
                "labels": snap.labels[p0:p1], "starts": snap.starts[first : end + 1],
            }  # fmt: skip
            meta = {"format": FORMAT, "first": first, "end": end, "collection": owner}
            write_arrays(folder / name, arrays, meta)
            segment = _segment(folder, name, owner)[0]
            written[(segment.first, segment.end)] = segment
        names.append(segment.file or "")
    mark = snap.watermark
    manifest = f"lexical-{mark.label}-{mark.deletion}.idx"
    meta = {
        "format": FORMAT, "segments": names, "texts": len(snap.lengths), "passages": len(snap.labels),
        "collection": owner, "watermark": [mark.label, mark.deletion],
    }  # fmt: skip
    write_arrays(folder / manifest, {"alive": np.packbits(snap.alive)}, meta)
    keep = {manifest, *names}
    for path in folder.iterdir():
        # a folder is another analysis generation's; a set-aside file is kept for the operator
        if path.name not in keep and not path.is_dir() and BAD not in path.name:
            path.unlink(missing_ok=True)
    return written


def load(folder: Path, limit: Callable[[], Watermark], owner: str = "") -> Snapshot | None:
    """The newest whole saved index not ahead of the store (`limit()`: its watermark, read after the
    files are listed, since a writer commits before it saves), else None. A file removed by the
    writer while this reads is met by reading the listing again; a damaged one is set aside."""
    for _ in range(3):
        try:
            found = [(m, p) for p in folder.iterdir() if (m := _mark(p.name)) is not None]
        except OSError:
            return None
        found.sort(key=lambda f: (f[0].label, f[0].deletion), reverse=True)
        now = limit()
        for mark, path in found:
            try:
                if mark.label > now.label or mark.deletion > now.deletion:
                    raise ValueError(
                        f"{path}: covers more than its store holds ({now.label}, {now.deletion})"
                    )
                return _read(folder, path, mark, owner)
            except FileNotFoundError:
                continue
            except DamagedSegment as e:  # the segment and the manifest that names it
                set_aside(path, e, [e.segment])
                continue
            except (ValueError, KeyError, TypeError, IndexError) as e:
                set_aside(path, e)
                continue
            except OSError as e:  # unreadable now (permissions, no descriptors left): not damaged
                skipped(path, e)
                continue
    return None


def problems(folder: Path, owner: str = "") -> list[str]:
    """One line per saved lexical file that fails verification."""
    lines = []
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if BAD not in path.name and (MANIFEST.fullmatch(path.name) or SEGMENT.fullmatch(path.name)):
                why = verify_arrays(path, {"collection": owner})
                if why is not None:
                    lines.append(f"lexical index file {why}")
    return lines


def _mark(name: str) -> Watermark | None:
    match = MANIFEST.fullmatch(name)
    return Watermark(int(match.group(1)), int(match.group(2))) if match else None


def _read(folder: Path, path: Path, mark: Watermark, owner: str) -> Snapshot:
    meta, arrays = read_arrays(path, {"collection": owner, "watermark": [mark.label, mark.deletion]})
    if meta.get("format") != FORMAT:
        raise ValueError(f"format {meta.get('format')!r}")
    count, passages = int(meta["texts"]), int(meta["passages"])
    segments: list[Segment] = []
    lengths, labels, starts = [], [], []
    for name in meta["segments"]:
        try:
            segment, extra = _segment(folder, str(name), owner)
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise DamagedSegment(str(e), folder / str(name)) from None
        if segment.first != (segments[-1].end if segments else 0):
            raise ValueError(f"{name}: segments not contiguous")
        segments.append(segment)
        lengths.append(extra["lengths"])
        labels.append(extra["labels"])
        starts.append(extra["starts"][:-1])
    total = int(sum(len(x) for x in labels))
    if (segments[-1].end if segments else 0) != count or total != passages:
        raise ValueError("segments do not cover the manifest's texts")
    all_starts = np.concatenate([*starts, np.asarray([total], dtype=np.int64)]).astype(np.int64)
    if all_starts[0] != 0 or np.any(np.diff(all_starts) < 0):
        raise ValueError("passage starts out of order")
    all_labels = np.concatenate(labels).astype(np.int64) if labels else np.zeros(0, np.int64)
    if len(all_labels) and all_labels[-1] > mark.label:
        raise ValueError("labels beyond the manifest's watermark")
    bits = arrays["alive"]
    if len(bits) * 8 < count:
        raise ValueError("live-text bitmap too short")
    alive = np.unpackbits(bits)[:count].astype(bool)
    all_lengths = np.concatenate(lengths).astype(np.float32) if lengths else np.zeros(0, np.float32)
    return Snapshot(mark, segments, all_lengths, alive, all_labels, all_starts)


def _segment(folder: Path, name: str, owner: str) -> tuple[Segment, dict[str, np.ndarray]]:
    """A segment file mapped, verified: the segment and its per-text / per-passage arrays."""
    if not SEGMENT.fullmatch(name) or os.sep in name:
        raise ValueError(f"{name!r}: not a segment file name")
    meta, a = read_arrays(folder / name, {"collection": owner})
    first, end = int(meta["first"]), int(meta["end"])
    offsets, ptr = a["offsets"], a["ptr"]
    if (
        meta.get("format") != FORMAT
        or len(ptr) != len(offsets)
        or (len(ptr) and (ptr[0] != 0 or ptr[-1] != len(a["texts"])))
        or (len(offsets) and (offsets[0] != 0 or offsets[-1] != len(a["blob"])))
        or len(a["tfs"]) != len(a["texts"])
        or len(a["lengths"]) != end - first
        or len(a["starts"]) != end - first + 1
        or int(a["starts"][-1] - a["starts"][0]) != len(a["labels"])
    ):
        raise ValueError(f"{name}: inconsistent arrays")
    segment = Segment(TermTable(a["blob"], offsets), ptr, a["texts"], a["tfs"], first, end, name)
    return segment, a
