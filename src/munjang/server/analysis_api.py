"""A collection's lexical analysis over HTTP (issue 73): see how a text is analysed, read the
settings, and change them. Routes:

    POST /v1/collections/{name}/analyze              {"text", "document"?}: each BM25 token with its
                                                     part of speech and the rule that made it (read)
    GET  /v1/collections/{name}/analysis             the settings (read)
    PUT  /v1/collections/{name}/analysis             {"user_words"?, "synonyms"?, "synonyms_at"?,
                                                     "compounds"?, "typos"?}: replace them (admin)
    POST /v1/collections/{name}/analysis/dictionary  {"lines", "replace"?}: nori user_dictionary lines
                                                     (or word<TAB>TAG<TAB>score) added (admin)
    POST /v1/collections/{name}/analysis/synonyms    {"lines", "replace"?}: Solr / Elasticsearch synonym
                                                     lines added (admin)

An edit that changes stored tokens re-analyses the passages (BM25 only) on the collection's writer
thread while searches are answered by its read-only twin with the old analysis; the answer comes when
the new analysis is in place. A malformed line is a 400 naming its number, and nothing is applied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from ..search.collection.collection import Collection
from ..search.index.analysis import AnalysisSettings
from ..search.index.synonyms import parse_synonyms
from ..search.index.user_dictionary import parse_user_dictionary
from .compute import ComputeGate
from .errors import APIError
from .schemas import Text
from .settings import ServerSettings
from .text_api import body_schema, non_empty_text, parse


class AnalyzeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: Text
    document: StrictBool = Field(default=False, description="Analyse as a stored passage, not a query.")


class LinesRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lines: StrictStr = Field(description="The file's text, as it is.")
    replace: StrictBool = Field(default=False, description="Replace instead of adding.")


def _settings(config: dict[str, Any]) -> AnalysisSettings:
    try:
        return AnalysisSettings.from_config(config)
    except (KeyError, TypeError, ValueError) as e:
        raise APIError(400, f"analysis settings: {e}", "analysis") from None


def add_analysis_routes(
    router: APIRouter,
    settings: ServerSettings,
    named: Callable[[str], Any],
    read_body: Any,
    gate: ComputeGate,
) -> None:
    """Register the analysis routes on the (key-protected) /v1 router; `named` finds a served
    collection or answers 404. The edits are for admin keys once keys are scoped."""

    @router.post("/collections/{name}/analyze", openapi_extra=body_schema(AnalyzeRequest))
    async def analyze(name: str, request: Request) -> dict[str, Any]:
        """The BM25 tokens of a text, each with its part of speech and the rule behind it."""
        target = await named(name)
        parsed = parse(AnalyzeRequest, await read_body(request, settings.max_body_bytes))
        non_empty_text(parsed.text, "text", settings)
        terms = await target.read(
            lambda collection: collection.analyze(parsed.text, query=not parsed.document), gate, request
        )
        return {"tokens": [{"token": t, "tag": g, "rule": r} for t, g, r in terms]}

    @router.get("/collections/{name}/analysis")
    async def analysis(name: str) -> dict[str, Any]:
        """The collection's analysis settings ({} is the default)."""
        target = await named(name)
        return {"analysis": await target.read(lambda collection: collection.analysis.to_config())}

    async def change(name: str, edit: Callable[[AnalysisSettings], AnalysisSettings]) -> dict[str, Any]:
        target = await named(name)

        def apply(collection: Collection) -> dict[str, Any]:
            chosen = edit(collection.analysis)
            analysed = collection.set_analysis(chosen, show_progress_bar=False)
            return {"reanalysed": analysed, "analysis": chosen.to_config()}

        result: dict[str, Any] = await target.call(lambda: apply(target.collection))
        return result

    @router.put("/collections/{name}/analysis")
    async def put_analysis(name: str, request: Request) -> dict[str, Any]:
        """Replace the analysis settings (admin)."""
        body = parse_json_object(await read_body(request, settings.max_body_bytes))
        chosen = _settings(body)
        return await change(name, lambda _: chosen)

    @router.post("/collections/{name}/analysis/dictionary", openapi_extra=body_schema(LinesRequest))
    async def import_dictionary(name: str, request: Request) -> dict[str, Any]:
        """Add (or with "replace", set) user words from nori user_dictionary lines (admin)."""
        parsed = parse(LinesRequest, await read_body(request, settings.max_body_bytes))
        words = tuple(parse_user_dictionary(parsed.lines.splitlines(), "lines"))
        return await change(
            name, lambda s: s.replace(user_words=words if parsed.replace else (*s.user_words, *words))
        )

    @router.post("/collections/{name}/analysis/synonyms", openapi_extra=body_schema(LinesRequest))
    async def import_synonyms(name: str, request: Request) -> dict[str, Any]:
        """Add (or with "replace", set) synonym rules from Solr / Elasticsearch lines (admin)."""
        parsed = parse(LinesRequest, await read_body(request, settings.max_body_bytes))
        rules = tuple(parse_synonyms(parsed.lines.splitlines(), "lines"))
        return await change(
            name, lambda s: s.replace(synonyms=rules if parsed.replace else (*s.synonyms, *rules))
        )


def parse_json_object(body: bytes) -> dict[str, Any]:
    """A JSON object body, or a 400."""
    import json

    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise APIError(400, "the body is not JSON") from None
    if not isinstance(value, dict):
        raise APIError(400, "the body must be a JSON object")
    return value
