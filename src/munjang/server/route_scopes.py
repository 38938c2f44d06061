"""The one place that says which scope each route and each MCP tool needs, and which of its
parameters names the collection it touches (checked against a key's collections).

Every route under /v1 must be listed: `access.Access.guard` refuses one that is not (403
`scope_undeclared`), and tests/server/test_scoped_keys.py fails for any such route, so a route added
without a scope is caught before it ships. Scopes: `read` (embeddings, similarity, rerank, search),
`write` (add, delete, upload), `admin` (create, drop, snapshots, aliases)."""

from __future__ import annotations

from typing import NamedTuple

from ..access import Scope


class Rule(NamedTuple):
    """A route's (or tool's) scope, and the path parameter (tool argument) naming its collection."""

    scope: Scope
    collection: str | None = None


# (method, path as registered) -> rule
ROUTE_SCOPES: dict[tuple[str, str], Rule] = {
    ("POST", "/v1/embeddings"): Rule("read"),
    ("GET", "/v1/models"): Rule("read"),
    ("POST", "/v1/similarity"): Rule("read"),
    ("POST", "/v1/tokenize"): Rule("read"),
    ("POST", "/v1/rerank"): Rule("read"),
    ("POST", "/v1/sparse_embeddings"): Rule("read"),
    ("POST", "/v1/multi_vector_embeddings"): Rule("read"),
    ("POST", "/v1/multi_vector_similarity"): Rule("read"),
    # the list shows a collection-limited key its own collections only
    ("GET", "/v1/collections"): Rule("read"),
    # the new collection's name is in the body: the route checks it against the key's collections
    ("POST", "/v1/collections"): Rule("admin"),
    ("GET", "/v1/collections/{name}"): Rule("read", "name"),
    ("POST", "/v1/collections/{name}/search"): Rule("read", "name"),
    ("POST", "/v1/collections/{name}/map"): Rule("read", "name"),
    ("GET", "/v1/collections/{name}/images/{doc_id:path}"): Rule("read", "name"),
    ("POST", "/v1/collections/{name}/documents"): Rule("write", "name"),
    ("POST", "/v1/collections/{name}/delete"): Rule("write", "name"),
    ("POST", "/v1/collections/{name}/files"): Rule("write", "name"),
    ("DELETE", "/v1/collections/{name}"): Rule("admin", "name"),
    # Korean analysis: reading it is a read; changing it (re-analyses the collection) is its setup
    ("POST", "/v1/collections/{name}/analyze"): Rule("read", "name"),
    ("GET", "/v1/collections/{name}/analysis"): Rule("read", "name"),
    ("PUT", "/v1/collections/{name}/analysis"): Rule("admin", "name"),
    ("POST", "/v1/collections/{name}/analysis/dictionary"): Rule("admin", "name"),
    ("POST", "/v1/collections/{name}/analysis/synonyms"): Rule("admin", "name"),
    # aliases: reading them is a read; pointing one elsewhere moves a name's traffic
    ("GET", "/v1/aliases"): Rule("read"),
    ("PUT", "/v1/aliases/{alias}"): Rule("admin", "alias"),
    ("DELETE", "/v1/aliases/{alias}"): Rule("admin", "alias"),
    # snapshots read or make whole collections
    ("POST", "/v1/collections/{name}/snapshots"): Rule("admin", "name"),
    ("GET", "/v1/collections/{name}/snapshots"): Rule("admin", "name"),
    ("GET", "/v1/collections/{name}/snapshots/{file}"): Rule("admin", "name"),
    ("DELETE", "/v1/collections/{name}/snapshots/{file}"): Rule("admin", "name"),
    ("POST", "/v1/collections/{name}/snapshots/{file}/restore"): Rule("admin", "name"),
    # the uploaded archive becomes the collection {name}
    ("POST", "/v1/collections/{name}/restore"): Rule("admin", "name"),
}

# MCP tool name -> rule (the collection named by the tool's `collection` argument)
TOOL_SCOPES: dict[str, Rule] = {
    "list_collections": Rule("read"),
    "search": Rule("read", "collection"),
    "fetch_document": Rule("read", "collection"),
    "add_documents": Rule("write", "collection"),
    "embed": Rule("read"),
}
