"""Convert to Image Directory: an uploaded archive (or a folder) of images -> an ImageDirectory.

Input: a .zip, .tar, .tar.gz/.tgz or .tar.bz2/.tbz2 archive, or a folder, in ImageFolder layout:
the class of an image is the name of its top-level sub-folder (images at the top level are
unlabeled). `__MACOSX` folders and hidden files or folders (name starting with ".") are ignored;
a single folder wrapping everything is walked into. Files without an image extension (.png,
.jpg, .jpeg, .bmp, .gif, .tif, .tiff, .webp, .ppm, .pgm, .pbm) are ignored and counted in the log.

Conversion, the same for every image: EXIF orientation applied; 16-bit (and 32-bit integer)
images scaled from the full 16-bit range to 8 bits (value / 257); transparency (RGBA, LA,
palette with a transparent colour) composited onto white; then 8-bit RGB. An RGB JPEG is kept as
it is (re-encoding would lose quality and grow it); every other image is written as PNG. Only
the first frame of an animated image is kept.

Unreadable images (corrupt, truncated, too many pixels): skipped with a warning that lists every
skipped path and why, in the log and in the output's `_meta.yaml` (`skipped`); the module fails
only when no image at all can be read. A large scraped dataset with a few broken files is the
common case, and one bad file should not cost the whole run; the list says exactly what is left out.

Safety: nothing of the archive is extracted as it is: each image is decoded in memory and written
under a name chosen here. An entry with an absolute path or a `..` component is refused
(InvalidDatasetError naming the entry), as is an archive whose files add up to more than
*Maximum expanded size (MB)*. Links and device entries of a tar are ignored.
"""
from __future__ import annotations

import io
import os
import re
import tarfile
import warnings
import zipfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from modules import _imagedir
from modules.base import (
    ImageDirectory,
    Int,
    InvalidDatasetError,
    Module,
    Port,
    UploadedFile,
)

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm", ".pbm"}
ZIP_SUFFIXES = (".zip",)
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz", ".gz", ".bz2")
SUPPORTED = ".zip, .tar, .tar.gz, .tgz, .tar.bz2, .tbz2 or a folder"
MB = 1024 * 1024
SKIPPED_IN_META = 200  # the full list is in the log


@dataclass
class Entry:
    name: str  # posix path inside the archive or folder
    size: int
    read: Callable[[], bytes]


class ConvertToImageDirectory(Module):
    """Turns an archive or folder of images (one sub-folder per class) into an Image directory.
    Unreadable images are skipped and listed (log and _meta.yaml); see the module file for the
    conversion rules."""

    kind = "convert_to_image_directory"
    label = "Convert to Image Directory"
    category = "Data Transformation"
    inputs = [Port("Input dataset", UploadedFile)]
    outputs = [Port("Image directory", ImageDirectory)]
    params = [Int("Maximum expanded size (MB)", 4096, name="max_expanded_mb", min=1, max=65536,
                  help="refuse an archive whose files add up to more than this (protects the disk)")]

    def run(self, ctx, input_dataset):
        if input_dataset is None:
            raise InvalidDatasetError(f"{self.label}: the Input dataset is not connected")
        source = locate(input_dataset, self.label)
        limit = ctx.params["max_expanded_mb"] * MB
        with open_entries(source, self.label) as (entries, ignored):
            total = sum(e.size for e in entries)
            if total > limit:
                raise InvalidDatasetError(
                    f"{self.label}: {source.name} expands to {total / MB:.1f} MB, past the limit of "
                    f"{limit // MB} MB (parameter 'Maximum expanded size (MB)')")
            images = pick_images(entries, source, self.label)
            ctx.log(f"{source.name}: {len(images)} image file(s); ignored {ignored + len(entries) - len(images)} "
                    "other entries (non-images, hidden files, __MACOSX, folders, links)")
            self._convert(ctx, source, images, limit)

    def _convert(self, ctx, source: Path, images: list[tuple[Entry, str]], limit: int) -> None:
        out = ctx.output_dir("image_directory")
        folders: dict[str, str] = {}
        items, skipped, read_bytes = [], [], 0
        for n, (entry, label) in enumerate(images):
            if n % 50 == 0:
                ctx.check_cancelled()
            data = entry.read()
            read_bytes += len(data)
            if read_bytes > limit:  # sizes in an archive's headers can lie; what is read cannot
                raise InvalidDatasetError(f"{self.label}: {source.name} expands past the limit of {limit // MB} MB "
                                          "(parameter 'Maximum expanded size (MB)')")
            try:
                payload, suffix = to_rgb_file(data)
            except Exception as e:  # Pillow raises many kinds of error for a broken file
                skipped.append({"path": entry.name, "reason": f"{type(e).__name__}: {e}"})
                continue
            folder = folders.setdefault(label, _folder_name(label, folders.values()))
            rel = Path("images") / folder / f"{len(items):05d}_{_safe(PurePosixPath(entry.name).stem)[:40]}{suffix}"
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(payload)
            items.append((rel.as_posix(), label))
        if skipped:
            ctx.log(f"WARNING: skipped {len(skipped)} unreadable image(s):\n"
                    + "\n".join(f"  {s['path']}: {s['reason']}" for s in skipped))
        if not items:
            listed = ", ".join(s["path"] for s in skipped[:10])
            raise InvalidDatasetError(f"{self.label}: no image of {source.name} could be read ({listed})")
        classes = sorted({label for _, label in items if label})
        _imagedir.write(ctx, "image_directory", items, classes)
        if skipped:
            ctx.set_meta("image_directory", skipped=skipped[:SKIPPED_IN_META], skipped_count=len(skipped))
        counts = {c: sum(1 for _, label in items if label == c) for c in classes}
        unlabeled = sum(1 for _, label in items if not label)
        ctx.log(f"{len(items)} image(s) in {len(classes)} class(es): "
                + ", ".join(f"{c} ({k})" for c, k in counts.items())
                + (f"; {unlabeled} unlabeled (not in a class folder)" if unlabeled else ""))


# ---------------------------------------------------------------- finding and listing the input


def locate(artifact, module_label: str) -> Path:
    """The archive or folder behind an UploadedFile input (a file, or a directory holding one)."""
    path = Path(artifact.path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise InvalidDatasetError(f"{module_label}: the Input dataset {path} does not exist")
    name = (artifact.meta or {}).get("file")
    if name:
        if PurePosixPath(name).name != name or not (path / name).exists():
            raise InvalidDatasetError(f"{module_label}: the Input dataset names a file {name!r} that is not in {path}")
        return path / name
    entries = [e for e in path.iterdir() if e.name != "_meta.yaml"]
    if len(entries) == 1 and entries[0].is_file() and _suffix(entries[0].name) not in IMAGE_SUFFIXES:
        return entries[0]
    return path


@contextmanager
def open_entries(source: Path, module_label: str):
    """Yields (every regular file of the archive or folder, how many other entries were ignored);
    the archive stays open while the entries are read."""
    if source.is_dir():
        yield _folder_entries(source)
        return
    name = source.name.lower()
    if not name.endswith(ZIP_SUFFIXES + TAR_SUFFIXES):
        raise InvalidDatasetError(f"{module_label}: {source.name}: unsupported file type "
                                  f"{_suffix(source.name) or '(no extension)'}; expected {SUPPORTED}")
    try:
        archive = zipfile.ZipFile(source) if name.endswith(ZIP_SUFFIXES) else tarfile.open(source, "r:*")  # closed below
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as e:
        raise InvalidDatasetError(f"{module_label}: {source.name} is not a readable archive: {e}") from None
    with archive:
        try:
            entries, ignored = _zip_entries(archive) if isinstance(archive, zipfile.ZipFile) else _tar_entries(archive, source)
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as e:
            raise InvalidDatasetError(f"{module_label}: {source.name} is not a readable archive: {e}") from None
        for e in entries:
            _refuse_unsafe(e.name, source, module_label)
        if not entries:
            raise InvalidDatasetError(f"{module_label}: {source.name} is empty: no file in it")
        yield entries, ignored


def _zip_entries(z: zipfile.ZipFile) -> tuple[list[Entry], int]:
    entries, ignored = [], 0
    for info in z.infolist():
        if info.is_dir():
            ignored += 1
            continue
        entries.append(Entry(info.filename, info.file_size, lambda info=info: _read_limited(z.open(info), info.file_size)))
    return entries, ignored


def _tar_entries(t: tarfile.TarFile, source: Path) -> tuple[list[Entry], int]:
    entries, ignored = [], 0
    for m in t.getmembers():
        if not m.isfile():  # directories, links, devices: never followed, never created
            if not m.isdir():
                _refuse_unsafe(m.name, source, "")
            ignored += 1
            continue
        entries.append(Entry(m.name, m.size, lambda m=m: _read_limited(t.extractfile(m), m.size)))
    return entries, ignored


def _folder_entries(source: Path) -> tuple[list[Entry], int]:
    entries, ignored = [], 0
    for dirpath, dirnames, filenames in os.walk(source):  # links to folders are not followed
        dirnames.sort()
        for f in sorted(filenames):
            p = Path(dirpath) / f
            if p.is_symlink() or not p.is_file() or (p.parent == source and f == "_meta.yaml"):
                ignored += 1
                continue
            entries.append(Entry(p.relative_to(source).as_posix(), p.stat().st_size, p.read_bytes))
    if not entries:
        raise InvalidDatasetError(f"{ConvertToImageDirectory.label}: the folder {source} is empty: no file in it")
    return entries, ignored


def _read_limited(f, size: int) -> bytes:
    with f:
        return f.read(size + 1)


def _refuse_unsafe(name: str, source: Path, module_label: str) -> None:
    norm = name.replace("\\", "/")
    parts = norm.split("/")
    if norm.startswith("/") or re.match(r"^[A-Za-z]:", norm) or ".." in parts:
        raise InvalidDatasetError(f"{module_label or ConvertToImageDirectory.label}: {source.name} holds an entry "
                                  f"outside its own folder, refused: {name!r}")


def _visible(parts: list[str]) -> bool:
    return not any(p.startswith(".") or p == "__MACOSX" for p in parts)


def pick_images(entries: list[Entry], source: Path, module_label: str) -> list[tuple[Entry, str]]:
    """(entry, label) of every image, after walking into single wrapping folders."""
    kept = []
    for e in entries:
        parts = [p for p in e.name.replace("\\", "/").split("/") if p not in ("", ".")]
        if parts and _visible(parts) and _suffix(parts[-1]) in IMAGE_SUFFIXES:
            kept.append((parts, e))
    if not kept:
        examples = ", ".join(e.name for e in entries[:5])
        raise InvalidDatasetError(f"{module_label}: {source.name} holds no image: {len(entries)} file(s), none with "
                                  f"an image extension ({', '.join(sorted(IMAGE_SUFFIXES))}); e.g. {examples}")
    # a folder is a wrapper, not a class, when it holds everything and has only folders in it
    while len({parts[0] for parts, _ in kept}) == 1 and all(len(parts) >= 3 for parts, _ in kept):
        kept = [(parts[1:], e) for parts, e in kept]
    kept.sort(key=lambda x: x[0])
    return [(e, parts[0] if len(parts) >= 2 else "") for parts, e in kept]


# ---------------------------------------------------------------- conversion


def to_rgb_file(data: bytes) -> tuple[bytes, str]:
    """(file bytes, suffix) of the image as 8-bit RGB; raises on anything unreadable."""
    from PIL import Image, ImageOps

    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)  # a pixel bomb is unreadable here
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            fmt, mode = img.format, img.mode
            if fmt == "JPEG" and mode == "RGB" and img.getexif().get(0x0112, 1) == 1:
                return data, ".jpg"
            rgb = _rgb(ImageOps.exif_transpose(img))
    buf = io.BytesIO()
    rgb.save(buf, "PNG")
    return buf.getvalue(), ".png"


def _rgb(img):
    import numpy as np
    from PIL import Image

    if img.mode.startswith("I") or img.mode == "F":
        # 16-bit (Pillow: I;16*, or I for PNG): the full 16-bit range maps onto 0..255
        arr = np.asarray(img, dtype=np.float64)
        scale = 1.0 if img.mode == "F" else 257.0
        img = Image.fromarray(np.clip(np.rint(arr / scale), 0, 255).astype(np.uint8), mode="L")
    if img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return img.convert("RGB")


def _suffix(name: str) -> str:
    lower = name.lower()
    for multi in (".tar.gz", ".tar.bz2"):
        if lower.endswith(multi):
            return multi
    return PurePosixPath(lower).suffix


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "image"


def _folder_name(label: str, taken) -> str:
    base = _safe(label) if label else "_unlabeled"
    name, n = base, 1
    while name in set(taken):
        n += 1
        name = f"{base}_{n}"
    return name
