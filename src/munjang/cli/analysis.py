"""`munjang index analyze / tune / dict ... / synonyms ...`: see and tune a collection's Korean
lexical analysis (user dictionary, synonyms, compounds, typo-tolerant queries; issue 73)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from .index import BackendOption, FolderArgument, _open

app = typer.Typer()
dictionary = typer.Typer(
    help="A collection's user dictionary: words its analyser keeps whole.", no_args_is_help=True
)
synonyms = typer.Typer(
    help="A collection's synonym rules (Solr / Elasticsearch format).", no_args_is_help=True
)
app.add_typer(dictionary, name="dict")
app.add_typer(synonyms, name="synonyms")

# The largest dictionary or synonym file read (a dictionary of 100,000 words is about 2 MB).
MAX_FILE_BYTES = 16 * 1024 * 1024


def _lines(path: Path) -> list[str]:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"{path}: over {MAX_FILE_BYTES // 1024 // 1024} MB")
    return path.read_text(encoding="utf-8-sig").splitlines()


def _change(folder: Path, backend: str | None, edit: Any) -> None:
    """Apply `edit` (settings -> settings) and say what it cost."""
    with _open(folder, backend) as col:
        analysed = col.set_analysis(edit(col.analysis), show_progress_bar=True)
    typer.echo(f"saved; {analysed} stored passages analysed again" if analysed else "saved")


@app.command("analyze")
def analyze(
    folder: FolderArgument,
    text: Annotated[str, typer.Argument(help="The text to analyse.")],
    backend: BackendOption = None,
    document: Annotated[bool, typer.Option("--document", help="As a stored passage, not a query.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """The BM25 tokens a text makes in a collection, with the part of speech and the rule behind each."""
    with _open(folder, backend, readonly=True) as col:
        terms = col.analyze(text, query=not document)
    if as_json:
        typer.echo(json.dumps([{"token": t, "tag": g, "rule": r} for t, g, r in terms], ensure_ascii=False))
        return
    for token, tag, rule in terms:
        typer.echo(f"{token}\t{tag}\t{rule}")


@app.command("tune")
def tune(
    folder: FolderArgument,
    backend: BackendOption = None,
    compounds: Annotated[
        str | None, typer.Option(help="whole, split or both (default: the tokenizer's).")
    ] = None,
    typos: Annotated[
        str | None, typer.Option(help="A Kiwi typo model for queries (basic, ...), or off.")
    ] = None,
    synonyms_at: Annotated[
        str | None, typer.Option(help="Apply synonyms to queries or at index time.")
    ] = None,
) -> None:
    """Show the analysis settings; change compounds, typo tolerance or where synonyms apply."""
    changes: dict[str, Any] = {}
    if compounds is not None:
        changes["compounds"] = compounds
    if typos is not None:
        changes["typos"] = None if typos == "off" else typos
    if synonyms_at is not None:
        changes["synonyms_at"] = synonyms_at
    if changes:
        _change(folder, backend, lambda s: s.replace(**changes))
    with _open(folder, backend, readonly=True) as col:
        settings = col.analysis
    typer.echo(
        f"user words {len(settings.user_words)}, synonym rules {len(settings.synonyms)} "
        f"(at {settings.synonyms_at}), compounds {settings.compounds or 'default'}, "
        f"typos {settings.typos or 'off'}"
    )


@dictionary.command("add")
def dict_add(
    folder: FolderArgument,
    word: Annotated[str, typer.Argument(help="The word to keep whole.")],
    backend: BackendOption = None,
    tag: Annotated[str, typer.Option(help="Its part of speech (NNP, NNG, VV, VA, ...).")] = "NNP",
    score: Annotated[float, typer.Option(help="Kiwi's score: higher prefers the word.")] = 0.0,
    parts: Annotated[str | None, typer.Option(help="What it is made of, space-separated.")] = None,
) -> None:
    """Add (or replace) a user word."""
    from ..search.index.user_dictionary import UserWord

    entry = UserWord(word, tag, score, tuple((parts or "").split()))
    _change(folder, backend, lambda s: s.replace(user_words=(*s.user_words, entry)))


@dictionary.command("remove")
def dict_remove(
    folder: FolderArgument,
    words: Annotated[list[str], typer.Argument(help="The words to remove.")],
    backend: BackendOption = None,
) -> None:
    """Remove user words."""
    gone = set(words)
    _change(
        folder, backend, lambda s: s.replace(user_words=tuple(w for w in s.user_words if w.word not in gone))
    )


@dictionary.command("list")
def dict_list(folder: FolderArgument, backend: BackendOption = None) -> None:
    """The user words, one a line: word, tag, score, parts."""
    with _open(folder, backend, readonly=True) as col:
        words = col.analysis.user_words
    for w in words:
        typer.echo(f"{w.word}\t{w.tag}\t{w.score:g}\t{' '.join(w.parts)}".rstrip("\t"))


@dictionary.command("import")
def dict_import(
    folder: FolderArgument,
    path: Annotated[Path, typer.Argument(help="nori user_dictionary lines, or word<TAB>TAG<TAB>score.")],
    backend: BackendOption = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace the dictionary instead of adding.")
    ] = False,
) -> None:
    """Load a dictionary file; a malformed line is reported by number and nothing is applied."""
    from ..search.index.user_dictionary import parse_user_dictionary

    words = tuple(parse_user_dictionary(_lines(path), str(path)))
    _change(folder, backend, lambda s: s.replace(user_words=words if replace else (*s.user_words, *words)))


@synonyms.command("add")
def synonyms_add(
    folder: FolderArgument,
    rule: Annotated[str, typer.Argument(help='A Solr line: "a, b, c" or "a, b => c".')],
    backend: BackendOption = None,
) -> None:
    """Add a synonym rule."""
    from ..search.index.synonyms import SynonymRule

    parsed = SynonymRule.parse(rule)
    _change(folder, backend, lambda s: s.replace(synonyms=(*s.synonyms, parsed)))


@synonyms.command("remove")
def synonyms_remove(
    folder: FolderArgument,
    rule: Annotated[str, typer.Argument(help="The rule as `synonyms list` shows it.")],
    backend: BackendOption = None,
) -> None:
    """Remove a synonym rule."""
    from ..search.index.synonyms import SynonymRule

    parsed = SynonymRule.parse(rule)
    _change(folder, backend, lambda s: s.replace(synonyms=tuple(r for r in s.synonyms if r != parsed)))


@synonyms.command("list")
def synonyms_list(folder: FolderArgument, backend: BackendOption = None) -> None:
    """The synonym rules, one a line, in Solr format."""
    with _open(folder, backend, readonly=True) as col:
        rules = col.analysis.synonyms
    for rule in rules:
        typer.echo(str(rule))


@synonyms.command("import")
def synonyms_import(
    folder: FolderArgument,
    path: Annotated[Path, typer.Argument(help="A Solr / Elasticsearch synonym file.")],
    backend: BackendOption = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace the rules instead of adding.")] = False,
) -> None:
    """Load a synonym file; a malformed line is reported by number and nothing is applied."""
    from ..search.index.synonyms import parse_synonyms

    rules = tuple(parse_synonyms(_lines(path), str(path)))
    _change(folder, backend, lambda s: s.replace(synonyms=rules if replace else (*s.synonyms, *rules)))
