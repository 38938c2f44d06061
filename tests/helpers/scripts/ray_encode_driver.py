"""`encode_with_ray` as a driver process of its own, for the test that kills a driver midway.

`--pause` seconds after each shard written keeps the run going long enough to be killed with some
shards on disk and some not. The last line printed is the summary as JSON.

    python tests/helpers/scripts/ray_encode_driver.py CORPUS... --output DIR --address HOST:PORT \
        --shard-size 20 --pause 1
"""

from __future__ import annotations

import argparse
import json
import time

from munjang.distributed import encode_with_ray


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="corpus files, folders or glob patterns")
    parser.add_argument("--output", required=True, help="output folder")
    parser.add_argument("--address", default=None, help="Ray cluster to join (default: a local one)")
    parser.add_argument("--shard-size", type=int, default=20)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds to wait after each shard")
    args = parser.parse_args(argv)

    def progress(line: str) -> None:
        print(line, flush=True)
        if "rows written" in line:
            time.sleep(args.pause)

    summary = encode_with_ray(
        args.inputs,
        args.output,
        address=args.address,
        workers=2,
        threads=1,
        shard_size=args.shard_size,
        progress=progress,
        progress_bars=False,
    )
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
