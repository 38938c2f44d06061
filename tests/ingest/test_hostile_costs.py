"""The issue-70 hostile files at their full size, read in a process of their own: each costs bounded
CPU time and the process's peak memory stays bounded, whatever the file claims. CPU seconds (not wall
time) are what is bounded, so a busy machine does not fail the test; a reader that loops again is
killed by its CPU limit (RLIMIT_CPU) instead of hanging the suite. The bounds sit far below what
the findings cost (> 60 s and 1.4-9 GB each) and far above what a read costs now (see the test)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

from tests.helpers import hostile_files as hostile
from tests.helpers import office_files as office
from tests.helpers.files import write

SCRIPT = Path(__file__).resolve().parents[1] / "helpers" / "scripts" / "read_costs.py"
CPU_PER_FILE_S = 15.0  # each read below costs < 1.5 CPU-s on the machines we run
PEAK_GROWTH_MB = 512  # the findings grew a process by 1.4-9 GB
CPU_LIMIT_S = 300  # the child's whole CPU budget: an endless loop ends here

HOSTILE = {
    "styles.docx": lambda: hostile.docx_style_loop(),  # finding 4: styles based on each other
    "bomb.docx": lambda: hostile.claimed_size(office.docx(office.SAMPLE), "word/document.xml", 480 << 20),
    "zeros.hwp": lambda: hostile.hwp_zero_records(5_000_000),  # finding 6: 64 MB of zero records
    "paragraphs.hwp": lambda: hostile.hwp_paragraphs(1_000_000),  # 22.6 s
    "long.hwp": lambda: hostile.hwp_long_paragraph(1_000_000),
    "far.xlsx": lambda: hostile.xlsx_far_row(),  # finding 7: row 99,999,999,999
    "grid.xlsx": lambda: hostile.xlsx_whole_grid(),  # A1:XFD1048576
    "wide.xlsx": lambda: hostile.xlsx_wide_rows(),  # cells in A and XFD
    "notes.docx": lambda: hostile.docx_footnotes(30_000),  # a quadratic lookup
    "span.docx": lambda: hostile.docx_grid_span(),  # gridSpan 2^31 - 1
    "deck.pptx": lambda: hostile.pptx_slides(10_000),  # 57 s
    "version.docx": lambda: hostile.zip_version(office.docx(office.SAMPLE)),  # finding 3
    "levels.hwpx": lambda: hostile.hwpx_outline_level("9" * 5_000),  # a leaked int-digits error
}


def limit_cpu() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S))


def test_each_hostile_file_costs_bounded_cpu_and_memory(tmp_path: Path) -> None:
    paths = []
    for name, make in HOSTILE.items():
        write(tmp_path / name, make())
        paths.append(str(tmp_path / name))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *paths],
        capture_output=True,
        text=True,
        preexec_fn=limit_cpu,
        timeout=1800,  # only a read blocked without using CPU could reach this
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    files = report["files"]
    assert set(files) == set(HOSTILE)
    for name, seen in files.items():
        assert seen["outcome"].startswith(("read ", "ReadError: ")), (name, seen["outcome"])
        assert seen["cpu_s"] < CPU_PER_FILE_S, (name, seen)
    growth_mb = (report["rss_peak_kb"] - report["rss_before_kb"]) / 1024
    assert growth_mb < PEAK_GROWTH_MB, report
    refused = {name for name, seen in files.items() if seen["outcome"].startswith("ReadError")}
    assert {"bomb.docx", "zeros.hwp", "paragraphs.hwp", "far.xlsx", "span.docx", "deck.pptx"} <= refused
    assert {"styles.docx", "notes.docx", "grid.xlsx", "levels.hwpx"}.isdisjoint(refused)
