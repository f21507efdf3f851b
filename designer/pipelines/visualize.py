"""Previews of a node's outputs for the Visualize pane, read from the artifact directories.

Plain file reading (csv, json, yaml): no pandas, no torch in the web process. Each reader takes an
output directory and returns what the template shows, bounded in size.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from designer.engine import paths
from designer.engine.executor import read_meta

MAX_THUMBS = 120
MAX_ROWS = 300
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"}


def preview(directory: Path, wrong_only: bool = False) -> dict:
    """{type, ...}: what the pane shows of one output directory."""
    directory = Path(directory)
    meta = read_meta(directory)
    kind = meta.get("type", "")
    try:
        if kind == "ImageDirectory" and (directory / "index.csv").is_file():
            return {"type": kind, **image_directory(directory, meta)}
        if kind == "ScoredDataset" and (directory / "scored.csv").is_file():
            return {"type": kind, **scored_dataset(directory, wrong_only)}
        if kind == "EvaluationResults" and (directory / "evaluation.json").is_file():
            return {"type": kind, **evaluation_results(directory)}
    except (OSError, ValueError, KeyError, csv.Error) as e:
        return {"type": kind, "error": f"cannot read this {kind}: {e}"}
    return {"type": kind or "unknown", "error": None}


def image_items(directory: Path) -> list[tuple[str, str]]:
    with (Path(directory) / "index.csv").open(newline="", encoding="utf-8") as f:
        return [(row["path"], row.get("label") or "") for row in csv.DictReader(f)]


def image_directory(directory: Path, meta: dict) -> dict:
    items = image_items(directory)
    counts: dict[str, int] = {c: 0 for c in meta.get("classes") or []}
    for _, label in items:
        counts[label or "(no label)"] = counts.get(label or "(no label)", 0) + 1
    return {"count": len(items), "class_counts": sorted(counts.items()), "transforms": meta.get("transforms"),
            "thumbs": [{"index": i, "label": label, "name": Path(p).name} for i, (p, label) in enumerate(items[:MAX_THUMBS])],
            "shown": min(len(items), MAX_THUMBS)}


def image_path(directory: Path, index: int, allowed_roots: list[Path]) -> Path | None:
    """The file of the index-th image, if it is an image inside one of the allowed roots (an
    index.csv names images by a path relative to its folder, or absolute)."""
    try:
        items = image_items(directory)
    except (OSError, ValueError, KeyError, csv.Error):  # not an ImageDirectory, or unreadable
        return None
    if not 0 <= index < len(items):
        return None
    p = _inside_any(allowed_roots, Path(directory, items[index][0]))
    if p is None or p.suffix.lower() not in IMAGE_SUFFIXES or not p.is_file():
        return None
    return p


def _inside_any(roots: list[Path], path: Path) -> Path | None:
    for root in roots:
        try:
            return paths.inside(root, path)
        except paths.OutsideFolder:
            continue
    return None


def scored_dataset(directory: Path, wrong_only: bool) -> dict:
    with (directory / "scored.csv").open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        prob_cols = [c for c in reader.fieldnames or [] if c.startswith("Scored Probabilities_")]
        rows, total, wrong = [], 0, 0
        for row in reader:
            total += 1
            is_wrong = bool(row.get("Label")) and row.get("Label") != row.get("Scored Labels")
            wrong += is_wrong
            if (wrong_only and not is_wrong) or len(rows) >= MAX_ROWS:
                continue
            probs = [float(row[c]) for c in prob_cols]
            rows.append({"image": Path(row.get("Image", "")).name, "label": row.get("Label", ""),
                         "scored": row.get("Scored Labels", ""), "wrong": is_wrong,
                         "probs": [f"{x:.3f}" for x in probs], "confidence": f"{max(probs):.3f}" if probs else ""})
    return {"classes": [c.removeprefix("Scored Probabilities_") for c in prob_cols], "rows": rows, "total": total,
            "wrong": wrong, "wrong_only": wrong_only, "truncated": len(rows) >= MAX_ROWS}


def evaluation_results(directory: Path) -> dict:
    results = json.loads((directory / "evaluation.json").read_text())
    sides = []
    for side, r in results.items():
        matrix = r.get("confusion_matrix")
        peak = max((max(row) for row in matrix), default=0) if matrix else 0
        rows = [{"true": c, "cells": [{"n": n, "shade": round(n / peak, 2) if peak else 0, "diagonal": i == j}
                                      for j, n in enumerate(row)]}
                for i, (c, row) in enumerate(zip(r["classes"], matrix or []))]
        sides.append({"side": side, "count": r["count"], "overall": sorted(r["overall"].items()), "classes": r["classes"],
                      "per_class": r["per_class"], "matrix": rows if matrix else None})
    return {"sides": sides}
