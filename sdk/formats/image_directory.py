"""ImageDirectory: images with a labels index.

    <dir>/_meta.yaml     type: ImageDirectory, classes: [...], count: N, labeled: bool
                         (+ transforms: {...} once Apply Image Transformation has run: a recipe,
                         see transformation.py)
    <dir>/index.csv      path,label   (path relative to <dir>, or absolute; label empty when unlabeled)
    <dir>/images/...     the image files

Downstream modules may reference the images of an upstream directory instead of copying them:
an index path may then be absolute.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from sdk.errors import InvalidDatasetError, NotLabeledDatasetError
from sdk.formats.meta import artifact

INDEX = "index.csv"
TYPE = "ImageDirectory"


@dataclass
class ImageDir:
    root: Path
    items: list[tuple[str, str]]  # (path relative to root or absolute, label or "")
    classes: list[str] = field(default_factory=list)
    transforms: dict | None = None  # recorded by Apply Image Transformation

    @property
    def labeled(self) -> bool:
        return bool(self.items) and all(label for _, label in self.items)

    def abspath(self, path: str) -> Path:
        p = Path(path)
        return p if p.is_absolute() else self.root / p

    def class_counts(self) -> dict[str, int]:
        counts = {c: 0 for c in self.classes}
        for _, label in self.items:
            counts[label] = counts.get(label, 0) + 1
        return counts

    def require_labels(self, module_label: str, port_label: str) -> None:
        if not self.labeled:
            raise NotLabeledDatasetError(f"{_prefix(module_label)}the {port_label} has images without a label (class folder)")


def _prefix(module_label: str) -> str:
    return f"{module_label}: " if module_label else ""


def is_one(directory) -> bool:
    """Whether a folder holds an image index (whatever its _meta.yaml says)."""
    return (Path(directory) / INDEX).is_file()


def read_items(directory) -> list[tuple[str, str]]:
    """The (path, label) rows of a folder's index."""
    with (Path(directory) / INDEX).open(newline="", encoding="utf-8") as f:
        return [(row["path"], row.get("label") or "") for row in csv.DictReader(f)]


def read(input_artifact, module_label: str, port_label: str) -> ImageDir:
    """Read an ImageDirectory input, refusing any other kind of directory with a clear error
    (naming the module and the port; an empty module label: the port alone)."""
    if input_artifact.type != TYPE or not is_one(input_artifact.path):
        got = input_artifact.type or "a directory without _meta.yaml"
        raise InvalidDatasetError(f"{_prefix(module_label)}the {port_label} must be an ImageDirectory, "
                                  f"got {got} ({input_artifact.path})")
    root = Path(input_artifact.path)
    items = read_items(root)
    meta = input_artifact.meta
    classes = list(meta.get("classes") or sorted({label for _, label in items if label}))
    return ImageDir(root, items, classes, meta.get("transforms"))


def read_path(path, module_label: str = "", port_label: str = "dataset") -> ImageDir:
    """An ImageDirectory read from its folder alone (what a training process gets: a path)."""
    return read(artifact(path), module_label, port_label)


def write(ctx, port: str, items: list[tuple[str, str]], classes: list[str] | None = None,
          transforms: dict | None = None, source_root: Path | None = None) -> Path:
    """Write the index and meta of an ImageDirectory output. Paths relative to `source_root` are
    made absolute, so that an output can point at the images of its input without copying them."""
    out = ctx.output_dir(port)
    rows = []
    for path, label in items:
        p = Path(path)
        if source_root is not None and not p.is_absolute():
            p = Path(source_root) / p
        rows.append((str(p), label))
    with (out / INDEX).open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["path", "label"])
        w.writerows(rows)
    classes = classes if classes is not None else sorted({label for _, label in items if label})
    meta = {"classes": classes, "count": len(rows), "labeled": bool(rows) and all(label for _, label in rows)}
    if transforms is not None:
        meta["transforms"] = transforms
    ctx.set_meta(port, **meta)
    return out


def link_tree(images: ImageDir, destination, module_label: str = "", port_label: str = "dataset") -> int:
    """Lay `images` out as an ImageFolder tree, `<destination>/<class>/<file>`, of symbolic links to
    the images (nothing copied): what torchvision's ImageFolder and scripts written for it read.
    Every class of the directory has its folder, empty ones too, so that class indexes stay those
    of its class list. Two files of one name in a class are told apart by a number. Returns the
    number of links; NotLabeledDatasetError when an image has no label (no class folder for it)."""
    images.require_labels(module_label, port_label)
    for label in {*images.classes, *(label for _, label in images.items)}:
        if label in (".", "..") or "/" in label or "\0" in label:  # a folder name, nothing else
            raise InvalidDatasetError(f"{_prefix(module_label)}the {port_label} has a class {label!r:.80} that "
                                      f"cannot be a folder's name")
    root = Path(destination)
    root.mkdir(parents=True, exist_ok=True)
    for name in images.classes:
        (root / name).mkdir(exist_ok=True)
    taken: set[tuple[str, str]] = set()
    for path, label in images.items:
        source = images.abspath(path)
        name, number = source.name, 1
        while (label, name) in taken:
            number += 1
            name = f"{source.stem}_{number}{source.suffix}"
        taken.add((label, name))
        (root / label).mkdir(exist_ok=True)
        (root / label / name).symlink_to(source.resolve())
    return len(taken)
