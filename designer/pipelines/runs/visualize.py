"""Previews of a node's outputs for the Visualize pane, read from the artifact directories.

Plain file reading (csv, json, yaml): no pandas, no torch in the web process. Each reader takes an
output directory and returns what the template shows, bounded in size.
"""
from __future__ import annotations

import csv
from pathlib import Path

from designer.engine import paths
from sdk.formats import evaluation, image_directory, scored_dataset
from sdk.formats.meta import read_meta

MAX_THUMBS = 120
MAX_ROWS = 300
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"}


def preview(directory: Path, wrong_only: bool = False) -> dict:
    """{type, ...}: what the pane shows of one output directory."""
    directory = Path(directory)
    meta = read_meta(directory)
    kind = meta.get("type", "")
    try:
        if kind == image_directory.TYPE and image_directory.is_one(directory):
            return {"type": kind, **images_preview(directory, meta)}
        if kind == scored_dataset.TYPE and scored_dataset.is_one(directory):
            return {"type": kind, **scored_preview(directory, wrong_only)}
        if kind == evaluation.TYPE and evaluation.is_one(directory):
            return {"type": kind, **evaluation_preview(directory)}
    except (OSError, ValueError, KeyError, csv.Error) as e:
        return {"type": kind, "error": f"cannot read this {kind}: {e}"}
    return {"type": kind or "unknown", "error": None}


def images_preview(directory: Path, meta: dict) -> dict:
    """Counts per class, a sample of thumbnails that spans the classes, and the images the module
    that wrote it skipped as unreadable (Convert lists them in `_meta.yaml`)."""
    items = image_directory.read_items(directory)
    counts: dict[str, int] = {c: 0 for c in meta.get("classes") or []}
    for _, label in items:
        counts[label or "(no label)"] = counts.get(label or "(no label)", 0) + 1
    picked = sample_across_classes([label or "(no label)" for _, label in items], MAX_THUMBS)
    skipped = meta.get("skipped") if isinstance(meta.get("skipped"), list) else []
    return {"count": len(items), "class_counts": sorted(counts.items()), "transforms": meta.get("transforms"),
            "thumbs": [{"index": i, "label": items[i][1], "name": Path(items[i][0]).name} for i in picked],
            "shown": len(picked), "classes_shown": len({items[i][1] for i in picked}),
            "skipped": [s for s in skipped if isinstance(s, dict)][:20],
            "skipped_count": meta.get("skipped_count") or len(skipped)}


def sample_across_classes(labels: list[str], limit: int) -> list[int]:
    """Indices of at most `limit` items, as many of each class as the limit allows (an archive
    sorted by class would otherwise show its first classes only), each class's first ones, listed
    class by class."""
    by_class: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        by_class.setdefault(label, []).append(i)
    picked: list[list[int]] = [[] for _ in by_class]
    left, depth = limit, 0
    while left > 0 and any(depth < len(c) for c in by_class.values()):
        for n, members in enumerate(by_class.values()):
            if left and depth < len(members):
                picked[n].append(members[depth])
                left -= 1
        depth += 1
    return [i for members in picked for i in members]


def image_path(directory: Path, index: int, allowed_roots: list[Path]) -> Path | None:
    """The file of the index-th image, if it is an image inside one of the allowed roots (an
    image index names images by a path relative to its folder, or absolute)."""
    try:
        items = image_directory.read_items(directory)
    except (OSError, ValueError, KeyError, csv.Error):  # not an ImageDirectory, or unreadable
        return None
    if not 0 <= index < len(items):
        return None
    p = _inside_any(allowed_roots, Path(directory, items[index][0]))
    if p is None or p.suffix.lower() not in IMAGE_SUFFIXES or not p.is_file():
        return None
    return p


def image_item(directory: Path, index: int) -> str | None:
    """The path the index-th item of an ImageDirectory names (relative to it, or absolute), or None."""
    try:
        items = image_directory.read_items(directory)
    except (OSError, ValueError, KeyError, csv.Error):
        return None
    return items[index][0] if 0 <= index < len(items) else None


def _inside_any(roots: list[Path], path: Path) -> Path | None:
    for root in roots:
        try:
            return paths.inside(root, path)
        except paths.OutsideFolder:
            continue
    return None


def scored_preview(directory: Path, wrong_only: bool) -> dict:
    rows, total, wrong = [], 0, 0
    for row in scored_dataset.csv_rows(directory):
        total += 1
        is_wrong = bool(row.label) and row.label != row.scored
        wrong += is_wrong
        if (wrong_only and not is_wrong) or len(rows) >= MAX_ROWS:
            continue
        probs = row.probabilities
        rows.append({"image": Path(row.image).name, "label": row.label, "scored": row.scored, "wrong": is_wrong,
                     "probs": [f"{x:.3f}" for x in probs], "confidence": f"{max(probs):.3f}" if probs else ""})
    return {"classes": scored_dataset.csv_classes(directory), "rows": rows, "total": total,
            "wrong": wrong, "wrong_only": wrong_only, "truncated": len(rows) >= MAX_ROWS}


def evaluation_preview(directory: Path) -> dict:
    results = evaluation.read(directory)
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
