"""Metadata filters: a small Mongo-like query language compiled to an SQL WHERE clause, for SQLite
(the embedded collection) or PostgreSQL (jsonb, the postgres backend).

    {"lang": "ko"}                                  equality (AND over keys)
    {"year": {"$gte": 2015, "$lt": 2020}}           $eq $ne $gt $gte $lt $lte
    {"genre": {"$in": ["news", "forum"]}}           $in $nin
    {"source": {"$exists": true}}                   key present (any value, null included)
    {"$or": [{...}, {...}]}, {"$and": [...]}, {"$not": {...}}
    {"meta.author": "kim"}                          dotted keys reach into nested objects

Keys are checked against a strict pattern and values are bound as SQL parameters, so a filter can
never inject SQL. Its size is bounded before any SQL is written (MAX_DEPTH nested $and/$or/$not,
MAX_CONDITIONS conditions, MAX_LIST_VALUES values in one $in/$nin), far inside what SQLite's parser
takes, and every number must be finite and every integer fit in 64 bits (what SQLite and PostgreSQL
store).

A missing key matches only $ne/$nin/$not (as in MongoDB). Comparisons follow the database's JSON
semantics where they differ: in SQLite true/false compare as 1/0 and a string sorts
above every number; in PostgreSQL $gt/$gte/$lt/$lte match only values of the query value's JSON type.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

_KEY = re.compile(r"[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*")
MAX_DEPTH = 8
MAX_CONDITIONS = 256
MAX_LIST_VALUES = 1000
_COMPARE = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_SCALARS = (str, int, float, bool)
INT64 = (-(2**63), 2**63 - 1)


def _path(key: str) -> str:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(
            f"bad filter key {key!r}: use letters, digits, '_' and '-', with '.' between nested keys"
        )
    return "$." + ".".join(f'"{part}"' for part in key.split("."))


def _checked(key: str, op: str, value: Any) -> Any:
    """Check one condition, for both dialects: its value (a list for $in / $nin), or ValueError
    naming the key and operator."""
    _path(key)
    if op == "$exists":
        if not isinstance(value, bool):
            raise ValueError(f"filter {key!r} $exists takes true or false, got {value!r}")
        return value
    if op in ("$in", "$nin"):
        if not isinstance(value, (list, tuple)) or not value:
            raise ValueError(f"filter {key!r} {op} takes a non-empty list, got {value!r}")
        return [_scalar(v, key, op) for v in value]
    if op not in _COMPARE:
        known = ", ".join([*_COMPARE, "$in", "$nin", "$exists"])
        raise ValueError(f"unknown filter operator {op!r} on {key!r}; known: {known}")
    value = _scalar(value, key, op)
    if value is None and op not in ("$eq", "$ne"):
        raise ValueError(f"filter {key!r} {op} cannot compare with null")
    return value


def _scalar(value: Any, key: str, op: str) -> Any:
    if value is not None and not isinstance(value, _SCALARS):
        raise ValueError(f"filter {key!r} {op}: expected a string, number, boolean or null, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"filter {key!r} {op}: numbers must be finite, got {value!r}")
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        raise ValueError(
            f"filter {key!r} {op}: integers must fit in 64 bits ({INT64[0]} to {INT64[1]}); "
            f"got one of {len(str(abs(value)))} digits"
        )
    return value


def check_size(spec: Any) -> None:
    """Refuse a filter nested deeper than MAX_DEPTH or with more than MAX_CONDITIONS conditions (or
    MAX_LIST_VALUES values in a list) before it is compiled, naming the limit."""
    conditions = 0

    def walk(node: Any, depth: int) -> None:
        nonlocal conditions
        if depth > MAX_DEPTH:
            raise ValueError(f"the filter is nested more than {MAX_DEPTH} levels deep")
        if not isinstance(node, Mapping):
            return
        for key, value in node.items():
            if key in ("$and", "$or") and isinstance(value, (list, tuple)):
                for item in value:
                    walk(item, depth + 1)
            elif key == "$not":
                walk(value, depth + 1)
            else:
                conditions += len(value) if isinstance(value, Mapping) else 1
                for v in value.values() if isinstance(value, Mapping) else ():
                    if isinstance(v, (list, tuple)) and len(v) > MAX_LIST_VALUES:
                        raise ValueError(f"filter {key!r}: more than {MAX_LIST_VALUES} values in one list")
            if conditions > MAX_CONDITIONS:
                raise ValueError(f"the filter has more than {MAX_CONDITIONS} conditions")

    walk(spec, 1)


def _sqlite_value(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value  # SQLite's JSON true/false read as 1/0


def _condition(key: str, op: str, value: Any, column: str, params: list[Any]) -> str:
    value = _checked(key, op, value)
    path = _path(key)
    extract = f"json_extract({column}, ?)"
    if op == "$exists":
        params.append(path)
        return f"json_type({column}, ?) IS {'NOT ' if value else ''}NULL"
    if op in ("$in", "$nin"):
        values = [_sqlite_value(v) for v in value]
        params.append(path)
        params.extend(values)
        marks = ", ".join("?" * len(values))
        if op == "$in":
            return f"{extract} IN ({marks})"
        params.append(path)
        return f"({extract} NOT IN ({marks}) OR json_type({column}, ?) IS NULL)"
    if value is None:
        params.append(path)
        return f"{extract} IS {'NOT ' if op == '$ne' else ''}NULL"
    params.append(path)
    params.append(_sqlite_value(value))
    if op == "$ne":
        params.append(path)
        return f"({extract} != ? OR json_type({column}, ?) IS NULL)"
    return f"{extract} {_COMPARE[op]} ?"


_Condition = Callable[[str, str, Any, str, list[Any]], str]


def _clause(
    spec: Mapping[str, Any], column: str, params: list[Any], condition: _Condition = _condition
) -> str:
    if not isinstance(spec, Mapping):
        raise ValueError(f"a filter must be an object, got {spec!r}")
    parts: list[str] = []
    for key, value in spec.items():
        if key in ("$and", "$or"):
            if not isinstance(value, (list, tuple)) or not value:
                raise ValueError(f"{key} takes a non-empty list of filters, got {value!r}")
            joined = f" {key[1:].upper()} ".join(_clause(v, column, params, condition) for v in value)
            parts.append(f"({joined})")
        elif key == "$not":
            parts.append(f"NOT ({_clause(value, column, params, condition)})")
        elif key.startswith("$"):
            raise ValueError(f"unknown filter operator {key!r} at the top level; use $and, $or or $not")
        elif isinstance(value, Mapping):
            if not value:
                raise ValueError(f"filter {key!r} has an empty operator object")
            parts.extend(condition(key, op, v, column, params) for op, v in value.items())
        else:
            parts.append(condition(key, "$eq", value, column, params))
    return "(" + " AND ".join(parts) + ")" if parts else ("1" if condition is _condition else "TRUE")


def compile_filter(
    spec: Mapping[str, Any] | None, column: str = "metadata", dialect: str = "sqlite"
) -> tuple[str, list[Any]]:
    """SQL condition and its parameters for a filter over a JSON `column`; no filter matches all.
    `dialect` "sqlite" binds with `?` over JSON text, "postgres" with `%s` over jsonb."""
    if dialect not in ("sqlite", "postgres"):
        raise ValueError(f"unknown SQL dialect {dialect!r}")
    params: list[Any] = []
    if spec is None:
        return ("1" if dialect == "sqlite" else "TRUE"), params
    check_size(spec)
    condition = _pg_condition if dialect == "postgres" else _condition
    return _clause(spec, column, params, condition), params


def _pg_condition(key: str, op: str, value: Any, column: str, params: list[Any]) -> str:
    """`_condition` for PostgreSQL: `column #> path` is the jsonb value (SQL NULL when missing)."""
    value = _checked(key, op, value)
    path = key.split(".")
    extract = f"({column} #> %s::text[])"
    if op == "$exists":
        params.append(path)
        return f"{extract} IS {'NOT ' if value else ''}NULL"
    if op in ("$in", "$nin"):
        params.extend([path, [json.dumps(v) for v in value]])
        if op == "$in":
            return f"{extract} = ANY(%s::jsonb[])"
        params.append(path)
        return f"(NOT ({extract} = ANY(%s::jsonb[])) OR {extract} IS NULL)"
    if value is None:
        params.extend([path, path])
        missing = f"({extract} IS NULL OR {extract} = 'null'::jsonb)"
        return f"NOT {missing}" if op == "$ne" else missing
    if op == "$eq":
        # The containment test is implied by the equality; it is there so that the GIN index on the
        # column (jsonb_path_ops) can find a selective filter's rows without reading every row.
        contained: Any = value
        for part in reversed(path):
            contained = {part: contained}
        params.extend([json.dumps(contained), path, json.dumps(value)])
        return f"({column} @> %s::jsonb AND {extract} = %s::jsonb)"
    params.extend([path, json.dumps(value)])
    if op == "$ne":
        params.append(path)
        return f"({extract} != %s::jsonb OR {extract} IS NULL)"
    params.extend([path, json.dumps(value)])
    return f"({extract} {_COMPARE[op]} %s::jsonb AND jsonb_typeof({extract}) = jsonb_typeof(%s::jsonb))"


def parse_filter_args(args: list[str]) -> dict[str, Any] | None:
    """CLI filters: each `key=value` (value read as JSON when it parses, else as text) or one JSON
    object; several arguments are combined with AND."""
    if not args:
        return None
    parts: list[dict[str, Any]] = []
    for arg in args:
        text = arg.strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"--filter {arg!r} is not valid JSON: {e}") from None
            parts.append(parsed)
            continue
        key, sep, raw = text.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--filter {arg!r}: expected key=value or a JSON object")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        parts.append({key.strip(): value})
    combined = parts[0] if len(parts) == 1 else {"$and": parts}
    compile_filter(combined)
    return combined
