"""Does the web page's map of the demo collection show topics or languages? The demo collection
(`munjang serve --demo`: 70 sentences, 7 topics, each in Korean and English) is built with a model and
projected to 2-D as the map route does (PCA, UMAP), with and without centring each script's vectors
(`project_2d(groups=script_groups(texts))`). For each point, its `--k` nearest points on the map:
the share with its topic (higher: topics are visible) and with its language (0.5 is no language
split at all with two equal halves; near 1.0 the map is split by language). The same shares among
the nearest neighbours by cosine in the model's space are the reference.

    python bench/map_topics.py      # writes bench/results/map_topics.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from munjang import Collection, load_encoder
from munjang.applications.demo import demo_collection
from munjang.applications.projection import project_2d, script_groups, umap_available


def neighbour_shares(points: np.ndarray, labels: list[str], k: int, cosine: bool = False) -> float:
    """Mean share of each point's k nearest other points that carry its label."""
    x = np.asarray(points, dtype=np.float64)
    if cosine:
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        distance = -(x @ x.T)
    else:
        distance = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(distance, np.inf)
    nearest = np.argsort(distance, axis=1)[:, :k]
    same = np.asarray(labels)[nearest] == np.asarray(labels)[:, None]
    return float(same.mean())


def measure(model: str, k: int) -> dict[str, object]:
    encoder = load_encoder(None if model == "default" else model)
    with tempfile.TemporaryDirectory(prefix="map-topics-") as tmp:
        folder = demo_collection(Path(tmp) / "demo", encoder, model=None if model == "default" else model)
        with Collection.open(folder, encoder=encoder) as collection:
            docs, vectors = collection.sample(2000)
    topics = [str(d.metadata["topic"]) for d in docs]
    langs = [str(d.metadata["lang"]) for d in docs]
    groups = script_groups([d.text for d in docs])
    rows: dict[str, dict[str, float]] = {
        "model space (cosine)": {
            "topic": neighbour_shares(vectors, topics, k, cosine=True),
            "language": neighbour_shares(vectors, langs, k, cosine=True),
        }
    }
    methods = ["pca"] + (["umap"] if umap_available() else [])
    for method in methods:
        for centred in (False, True):
            coords, _ = project_2d(vectors, method, groups=groups if centred else None)
            name = f"{method}{', scripts centred' if centred else ''}"
            rows[name] = {
                "topic": neighbour_shares(coords, topics, k),
                "language": neighbour_shares(coords, langs, k),
            }
    print(f"{model}: share of the {k} nearest points on the map with the same topic / language")
    for name, row in rows.items():
        print(f"  {name:<28} topic {row['topic']:.3f}  language {row['language']:.3f}")
    return {
        "points": len(docs),
        "scripts_match_languages": groups == ["hangul" if x == "ko" else "latin" for x in langs],
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="multilingual-e5-small,default")
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    env = print_environment()
    results = {model: measure(model, args.k) for model in args.models.split(",")}
    write_result("map_topics", {"k": args.k, "models": results}, env)


if __name__ == "__main__":
    main()
