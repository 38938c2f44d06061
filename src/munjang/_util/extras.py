"""Optional dependencies: import one, or fail with a single line naming the `pip install` that fixes it."""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import MissingExtraError

# module -> (what needs it, the extra that installs it)
EXTRAS = {
    "uvicorn": ("munjang serve", "server"),
    "fastapi": ("munjang serve", "server"),
    "prometheus_client": ("munjang serve", "server"),
    "httpx": ("munjang.Client and remote encoders", "client"),
    "openvino": ("the openvino backend", "openvino"),
    "nncf": ("static int8 (openvino int8)", "int8"),
    "ray": ("encoding with Ray", "ray"),
    "pyarrow": ("parquet", "ray"),
    "psycopg": ("PostgreSQL collections", "postgres"),
    "pgvector": ("PostgreSQL collections", "postgres"),
    "qdrant_client": ("Qdrant collections", "qdrant"),
    "umap": ("the umap projection", "umap"),
    "matplotlib": ("plotting topics (--plot)", "plots"),
    "pypdf": ("reading PDF files", "files"),
    "bs4": ("reading HTML files", "files"),
    "charset_normalizer": ("reading text that is not UTF-8", "files"),
    "docx": ("reading DOCX files", "files"),
    "pptx": ("reading PPTX files", "files"),
    "openpyxl": ("reading XLSX files", "files"),
    "olefile": ("reading HWP files", "files"),
    "lxml": ("reading HWPX and DOCX files", "files"),
    "PIL": ("images (CLIP models, image collections)", "images"),
    "mteb": ("running MTEB tasks", "mteb"),
    "mecab": ("the MeCab tokenizer (auto-mecab, mecab)", "mecab"),
    "gensim": ("fitting word2vec", "word2vec"),
    "mcp": ("the MCP server (munjang mcp, serve --mcp)", "mcp"),
    "opentelemetry": ("tracing (--otlp-endpoint)", "otel"),
}


def install_hint(module: str) -> str:
    """`pip install 'munjang[extra]'` for a module of an extra, else `pip install module`."""
    extra = EXTRAS.get(module.split(".")[0])
    return f"pip install 'munjang[{extra[1]}]'" if extra else f"pip install {module}"


def require(module: str) -> ModuleType:
    """Import `module`; when it is missing, raise MissingExtraError saying what needs it and the fix."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        needed_by = EXTRAS.get(module.split(".")[0], (module, ""))[0]
        raise MissingExtraError(f"{needed_by} needs {module.split('.')[0]}: {install_hint(module)}") from e
