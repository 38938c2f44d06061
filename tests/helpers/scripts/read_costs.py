"""Read each file named on the command line with munjang's readers, in turn, in this process; print
one JSON object: for each file the CPU seconds its read took and what it gave (characters or the
ReadError, or any other exception's type: a reader's bug), and this process's peak RSS before the
first read and after the last (kB, `ru_maxrss`)."""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

from munjang.ingest import ReadError, read_file


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(paths: list[str]) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    files = {}
    for name in paths:
        start = cpu()
        try:
            outcome = f"read {len(read_file(Path(name)).text)} characters"
        except ReadError as e:
            outcome = f"ReadError: {e}"
        except Exception as e:  # reported: the test names a reader's bug
            outcome = f"{type(e).__name__}: {e}"
        files[Path(name).name] = {"cpu_s": cpu() - start, "outcome": outcome}
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"files": files, "rss_before_kb": before, "rss_peak_kb": after}))


if __name__ == "__main__":
    main(sys.argv[1:])
