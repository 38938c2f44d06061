"""Extraction quality of munjang's office readers against the libraries that could have been used, on
the fixture that tests/helpers/office_files.py writes (Korean headings, a list, a footnote, a table,
a page header that must stay out of the body): sentences found, table cells found, header excluded.

    pip install --target /tmp/office-cmp docx2txt docx2python hwp-hwpx-parser gethwp
    PYTHONPATH=src:.:/tmp/office-cmp python bench/office_readers.py

Writes bench/results/office_readers.json. Peers that are missing or fail are recorded as such.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import office_files as o

from common import write_result
from munjang.ingest import read_file

CELLS = ["인건비", "3억 원", "2억 원", "장비비"]


def score(text: str) -> dict[str, Any]:
    return {
        "sentences": f"{sum(s in text for s in o.SAMPLE_SENTENCES)}/{len(o.SAMPLE_SENTENCES)}",
        "table_cells": f"{sum(c in text for c in CELLS)}/{len(CELLS)}",
        "rows_with_headers": f"{sum(r in text for r in o.SAMPLE_ROWS)}/{len(o.SAMPLE_ROWS)}",
        "header_excluded": o.HEADER_LINE not in text,
    }


def peers(folder: Path) -> dict[str, Callable[[], str]]:
    def hwp_hwpx_parser(name: str) -> Callable[[], str]:
        def run() -> str:
            from hwp_hwpx_parser import Reader

            return str(Reader(str(folder / name)).text)

        return run

    def gethwp(name: str, fn: str) -> Callable[[], str]:
        def run() -> str:
            import gethwp as g

            return str(getattr(g, fn)(str(folder / name)))

        return run

    def docx2txt() -> str:
        import docx2txt as d

        return str(d.process(str(folder / "s.docx")))

    def docx2python() -> str:
        from docx2python import docx2python as d

        return str(d(str(folder / "s.docx")).text)

    def python_docx_paragraphs() -> str:
        import docx

        return "\n".join(p.text for p in docx.Document(str(folder / "s.docx")).paragraphs)

    return {
        "munjang hwp": lambda: read_file(folder / "s.hwp").text,
        "munjang hwpx": lambda: read_file(folder / "s.hwpx").text,
        "munjang docx (python-docx + notes)": lambda: read_file(folder / "s.docx").text,
        "hwp-hwpx-parser hwp": hwp_hwpx_parser("s.hwp"),
        "hwp-hwpx-parser hwpx": hwp_hwpx_parser("s.hwpx"),
        "gethwp hwp": gethwp("s.hwp", "read_hwp"),
        "gethwp hwpx": gethwp("s.hwpx", "read_hwpx"),
        "docx2txt": docx2txt,
        "docx2python": docx2python,
        "python-docx paragraphs": python_docx_paragraphs,
    }


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="office-readers-"))
    (folder / "s.hwp").write_bytes(o.hwp(o.SAMPLE))
    (folder / "s.hwpx").write_bytes(o.hwpx(o.SAMPLE))
    (folder / "s.docx").write_bytes(o.docx(o.SAMPLE))
    results: dict[str, Any] = {}
    for name, run in peers(folder).items():
        try:
            results[name] = score(run())
        except Exception as e:  # a peer that is missing or cannot read the file
            results[name] = {"error": f"{type(e).__name__}: {e}"}
        print(f"{name:36s} {results[name]}", flush=True)
    write_result("office_readers", {"fixture": "tests/helpers/office_files.py SAMPLE", "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
