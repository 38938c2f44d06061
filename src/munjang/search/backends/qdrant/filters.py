"""munjang's metadata filters (`filters.py`) compiled to Qdrant filters, with SQLite's meaning.

The reference is the SQL a folder collection runs (`filters._condition`), whose comparisons are
three-valued: a condition on a missing key or a JSON null is often neither true nor false, and `$not`
of that is not true either. So each clause compiles to two Qdrant filters, where it is TRUE and
where it is FALSE (the rest is NULL); `$not` swaps them, `$and` / `$or` combine them as SQL does.

Each point carries `mf`, its metadata as filters see it: booleans as 1 / 0 (SQLite's JSON true and
false), numbers and strings as they are, objects as objects, arrays and keys no filter can name
left out (SQLite's path finds nothing inside an array either). What Qdrant cannot mirror exactly
is not compiled, and the search uses the allowed labels instead (`compile_native` returns None):
- a key that has held an array, an object or an integer beyond 2^53 (float64, where Qdrant's
  ranges compare) in some passage: SQLite compares such values as JSON text or exactly;
- a range ($gt ...) with a string, or on a key that has held a string (SQLite sorts text above
  every number);
- numbers beyond 2^53 in the filter.
Which kinds of value each key has held is kept by the push (`key_kinds`, never shrinking).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..base import Filter, Queries, TopK
from ..filters import _checked, check_size

FIELD = "mf"
EXACT_INT = 2**53  # beyond it, float64 (Qdrant's range values) no longer holds every integer
_PART = re.compile(r"[A-Za-z0-9_\-]+")
_RANGES = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}


def filter_payload(metadata: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(`mf` for a point, {dotted key: kinds of value}) of one passage's metadata; kinds are
    letters: s string, n number (booleans included), z null, o object, a array, b big integer."""
    kinds: dict[str, str] = {}

    def walk(node: Mapping[str, Any], prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if not isinstance(key, str) or not _PART.fullmatch(key):
                continue  # no filter can name it
            path = prefix + key
            kind = _kind(value)
            kinds[path] = "".join(sorted(set(kinds.get(path, "") + kind)))
            if kind == "o":
                out[key] = walk(value, path + ".")
            elif kind != "a":
                out[key] = int(value) if isinstance(value, bool) else value
        return out

    return walk(metadata, ""), kinds


def _kind(value: Any) -> str:
    if value is None:
        return "z"
    if isinstance(value, str):
        return "s"
    if isinstance(value, Mapping):
        return "o"
    if isinstance(value, (list, tuple)):
        return "a"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > EXACT_INT:
        return "b"
    return "n"


def merge_kinds(into: dict[str, str], more: Mapping[str, str]) -> bool:
    """Add `more` to `into`; True when something new was learnt."""
    changed = False
    for path, kind in more.items():
        merged = "".join(sorted(set(into.get(path, "") + kind)))
        if merged != into.get(path):
            into[path], changed = merged, True
    return changed


class _Unsupported(Exception):
    """This filter cannot be compiled with SQLite's meaning."""


class _Compiler:
    def __init__(self, models: Any, kinds: Mapping[str, str]) -> None:
        self.m, self.kinds = models, kinds

    # -- building blocks -------------------------------------------------------------------------
    def f(self, must: Any = None, should: Any = None, must_not: Any = None) -> Any:
        return self.m.Filter(must=must, should=should, must_not=must_not)

    def nothing(self, key: str) -> Any:
        null = self.m.IsNullCondition(is_null=self.m.PayloadField(key=key))
        return self.f(must=[null, self.f(must_not=[null])])

    def empty(self, key: str) -> Any:  # missing or null
        return self.m.IsEmptyCondition(is_empty=self.m.PayloadField(key=key))

    def null(self, key: str) -> Any:  # present, null
        return self.m.IsNullCondition(is_null=self.m.PayloadField(key=key))

    def missing(self, key: str) -> Any:
        return self.f(must=[self.empty(key)], must_not=[self.null(key)])

    def present(self, key: str) -> Any:  # any value, null included
        return self.f(should=[self.null(key), self.f(must_not=[self.empty(key)])])

    def equal(self, key: str, value: Any) -> Any:
        if isinstance(value, str):
            return self.m.FieldCondition(key=key, match=self.m.MatchValue(value=value))
        number = float(int(value) if isinstance(value, bool) else value)
        return self.m.FieldCondition(key=key, range=self.m.Range(gte=number, lte=number))

    def valued_not(self, key: str, conditions: list[Any]) -> Any:  # non-null and none of these
        return self.f(must_not=[self.empty(key), *conditions])

    # -- one condition: (TRUE filter, FALSE filter) ------------------------------------------------
    def condition(self, name: str, op: str, raw: Any) -> tuple[Any, Any]:
        value = _checked(name, op, raw)
        kinds = self.kinds.get(name, "")
        if set(kinds) & set("oab"):
            raise _Unsupported
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > EXACT_INT:
                raise _Unsupported
        key = f"{FIELD}.{name}"
        if op == "$exists":
            return (self.present(key), self.missing(key)) if value else (self.missing(key), self.present(key))
        if op in ("$in", "$nin"):
            values = [v for v in value if v is not None]
            has_null = len(values) < len(value)
            matches = [self.equal(key, v) for v in values]
            hit = self.f(should=matches) if matches else self.nothing(key)
            miss = self.nothing(key) if has_null else self.valued_not(key, matches)
            if op == "$in":
                return hit, miss
            return self.f(should=[self.missing(key), miss]), hit
        if value is None:  # IS NULL / IS NOT NULL: never unknown
            is_null, not_null = self.empty(key), self.f(must_not=[self.empty(key)])
            return (not_null, is_null) if op == "$ne" else (is_null, not_null)
        if op in _RANGES:
            if isinstance(value, str) or "s" in kinds:
                raise _Unsupported
            number = float(int(value) if isinstance(value, bool) else value)
            within = self.m.FieldCondition(key=key, range=self.m.Range(**{_RANGES[op]: number}))
            return within, self.valued_not(key, [within])
        same = self.equal(key, value)
        if op == "$eq":
            return same, self.valued_not(key, [same])
        return self.f(should=[self.missing(key), self.valued_not(key, [same])]), same  # $ne

    # -- clauses ---------------------------------------------------------------------------------
    def clause(self, spec: Any) -> tuple[Any, Any]:
        if not isinstance(spec, Mapping):
            raise ValueError(f"a filter must be an object, got {spec!r}")
        parts: list[tuple[Any, Any]] = []
        for key, value in spec.items():
            if key in ("$and", "$or"):
                if not isinstance(value, (list, tuple)) or not value:
                    raise ValueError(f"{key} takes a non-empty list of filters, got {value!r}")
                inner = [self.clause(v) for v in value]
                trues, falses = [t for t, _ in inner], [f for _, f in inner]
                if key == "$and":
                    parts.append((self.f(must=trues), self.f(should=falses)))
                else:
                    parts.append((self.f(should=trues), self.f(must=falses)))
            elif key == "$not":
                true, false = self.clause(value)
                parts.append((false, true))
            elif key.startswith("$"):
                raise ValueError(f"unknown filter operator {key!r} at the top level; use $and, $or or $not")
            elif isinstance(value, Mapping):
                if not value:
                    raise ValueError(f"filter {key!r} has an empty operator object")
                parts.extend(self.condition(key, op, v) for op, v in value.items())
            else:
                parts.append(self.condition(key, "$eq", value))
        if not parts:  # {}: everything matches
            return self.f(), self.nothing(FIELD)
        return self.f(must=[t for t, _ in parts]), self.f(should=[f for _, f in parts])


def compile_native(spec: Mapping[str, Any], kinds: Mapping[str, str], models: Any) -> Any | None:
    """The Qdrant filter selecting exactly the passages SQLite's compiled `spec` selects, or None
    where that cannot be guaranteed (see the module docstring). Bad filters raise ValueError."""
    check_size(spec)
    try:
        true, _ = _Compiler(models, kinds).clause(spec)
    except _Unsupported:
        return None
    return true


def retrieve_filtered(engine: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
    """`engine`'s top-k per query row (an engine with `search`, `search_native` and
    `native_filter`), filtered in Qdrant: by the filter compiled for it where that keeps its meaning,
    else by the labels it allows (nothing searched when none is)."""
    if filter is None:
        return engine.search(queries.encoded, k)
    native = filter.native("qdrant", engine.native_filter)
    if native is not None:
        return engine.search_native(queries.encoded, k, native)
    if len(filter.allowed) == 0:
        return queries.none()
    return engine.search(queries.encoded, k, filter.allowed)
