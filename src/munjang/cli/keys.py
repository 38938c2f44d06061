"""`munjang keys create|list|revoke`: the scoped API keys of `munjang serve` (and its MCP endpoint).

The keys live in one JSON file (`--keys FILE` or $MUNJANG_KEYS; `munjang serve` also picks up
`keys.json` in its `--collections-dir`), stored hashed: `create` prints the secret once, and it
cannot be shown again. A running server reads the file again when it changes, so `revoke` takes
effect at its next request, without a restart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer()

KeysOption = Annotated[
    Path,
    typer.Option(
        "--keys",
        envvar="MUNJANG_KEYS",
        help="The keys file (created by the first `keys create`). Env: MUNJANG_KEYS.",
    ),
]


@app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="The key's name (shown in the audit log).")],
    keys: KeysOption,
    scope: Annotated[
        list[str],
        typer.Option(
            "--scope",
            "-s",
            help="read (embeddings, similarity, rerank, search), write (add, delete, upload) or admin "
            "(create, drop); repeat for several.",
        ),
    ],
    collection: Annotated[
        list[str] | None,
        typer.Option(help="Limit the key to this collection (repeatable; default: every collection)."),
    ] = None,
) -> None:
    """Create a key and print its secret once (only its hash is stored)."""
    from ..access import create_key

    secret = create_key(keys, name, scope, collection)
    typer.echo(secret)
    typer.echo(f"key {name!r} created in {keys}; the secret above is not shown again", err=True)


@app.command("list")
def list_(
    keys: KeysOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """The keys: name, scopes, collections, created, revoked (never a secret)."""
    from ..access import list_keys

    records = list_keys(keys)
    if as_json:
        rows = [
            {
                "name": r.name,
                "scopes": list(r.scopes),
                "collections": None if r.collections is None else list(r.collections),
                "created": r.created,
                "revoked": r.revoked,
            }
            for r in records
        ]
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    for r in records:
        where = ",".join(r.collections) if r.collections is not None else "*"
        state = f"revoked {r.revoked}" if r.revoked else "live"
        typer.echo(f"{r.name}\t{','.join(r.scopes)}\t{where}\t{r.created}\t{state}")


@app.command("revoke")
def revoke(
    name: Annotated[str, typer.Argument(help="The key to revoke.")],
    keys: KeysOption,
) -> None:
    """Revoke a key: a running server refuses it from its next request on."""
    from ..access import revoke_key

    record = revoke_key(keys, name)
    typer.echo(f"key {record.name!r} revoked ({record.revoked})")
