"""A process holding a collection's writer lock, for the tests that a drop is refused meanwhile.

Usage: python tests/helpers/scripts/hold_write_lock.py LOCATION [BACKEND_URL]. Opens the collection
(no model is loaded), takes its writer lock through the storage contract, prints "locked", and
holds it until its stdin closes.
"""

from __future__ import annotations

import sys

from munjang.search.collection.collection import Collection


def main() -> None:
    backend = sys.argv[2] if len(sys.argv) > 2 else None
    collection = Collection.open(sys.argv[1], backend=backend)
    with collection, collection.backend.write_lock(collection.store, timeout=30.0):
        print("locked", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
