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

Safety: nothing of the archive is extracted as it is: each image is streamed (1 MB at a time) to
one scratch file, decoded from there and written under a name chosen here, so that memory stays
bounded whatever the archive holds. Refused with InvalidDatasetError naming the entry and the limit:
an entry with an absolute path or a `..` component; a file or folder name longer than the file
system takes (255 bytes); an archive whose files add up to more than *Maximum expanded size (MB)*,
by its headers and again as bytes are written (headers can lie); an entry (zip) or archive (tar)
that expands more than MAX_RATIO times its compressed size (a zip bomb), checked as bytes are
written; an archive of more than MAX_ENTRIES entries (a tar's read one at a time, stopped at the
limit; a zip's counted from its end records, sdk/archives.py, before its listing is read).
An image of more than MAX_PIXELS pixels is skipped as unreadable (its decoded pixels would not fit
in a bounded memory). Links and device entries are ignored. sdk/archives.py reads the archive.
"""
from __future__ import annotations

import os
import re
import shutil
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sdk import archives
from sdk.declarations import ImageDirectory, Int, Module, Port, UploadedFile
from sdk.errors import InvalidDatasetError
from sdk.formats import image_directory as imagedir
from sdk.layout import META_FILE
from sdk.preprocess import to_rgb  # one owner of how an image becomes RGB: training's images and the endpoints'

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm", ".pbm"}
ZIP_SUFFIXES = (".zip",)
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz", ".gz", ".bz2")
SUPPORTED = ".zip, .tar, .tar.gz, .tgz, .tar.bz2, .tbz2 or a folder"
MB = 1024 * 1024
SKIPPED_IN_META = 200  # the full list is in the log
CHUNK = MB  # what extraction holds in memory at a time
# a zip bomb expands about 1000 times (deflate's most); images, even uncompressed ones (BMP,
# PPM, TIFF), expand far less. Checked once an entry (zip) or the archive (tar) has written RATIO_FLOOR.
MAX_RATIO = 100
RATIO_FLOOR = MB
NAME_MAX = 255  # bytes of one file or folder name (Linux, macOS, Windows file systems)
MAX_PIXELS = 50_000_000  # of one image: 150 MB decoded as 8-bit RGB
# entries of one archive (folders included): each costs about 1.5 KB of memory while it is read,
# so 300,000 empty entries packed in 1.3 MB cost 455 MB; 200,000 images is a large dataset here
MAX_ENTRIES = 200_000


@dataclass
class Entry:
    name: str  # posix path inside the archive or folder
    size: int  # as the archive's headers (or the folder) say
    chunks: Callable[[], Iterator[bytes]]  # its bytes, CHUNK at a time; archives.Unreadable when they cannot be read
    packed: int | None = None  # compressed size of this entry (zip); None: see _Budget


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
            budget = _Budget(self.label, source, limit, None if source.is_dir() else source.stat().st_size)
            self._convert(ctx, source, images, budget)

    def _convert(self, ctx, source: Path, images: list[tuple[Entry, str]], budget: _Budget) -> None:
        out = ctx.output_dir("image_directory")
        scratch = out / ".extracting"  # one entry at a time, removed when done
        folders: dict[str, str] = {}
        items, skipped = [], []
        try:
            for entry, label in images:
                ctx.check_cancelled()  # a safe point: between two files
                folder = folders.setdefault(label, _folder_name(label, folders.values()))
                stem = f"images/{folder}/{len(items):05d}_{_safe(PurePosixPath(entry.name).stem)[:40]}"
                try:
                    budget.extract(entry, scratch)
                    rel = to_rgb_file(scratch, out / stem)
                except archives.Unreadable as e:  # bad CRC, truncated: skipped like a broken image
                    skipped.append({"path": entry.name, "reason": str(e)})
                    continue
                except InvalidDatasetError:
                    raise
                except Exception as e:  # Pillow raises many kinds of error for a broken file
                    why = str(e).replace(str(scratch), entry.name)  # the archive's name, not the scratch file's
                    skipped.append({"path": entry.name, "reason": f"{type(e).__name__}: {why}"})
                    continue
                items.append((rel.relative_to(out).as_posix(), label))
        finally:
            scratch.unlink(missing_ok=True)
        if skipped:
            ctx.log(f"WARNING: skipped {len(skipped)} unreadable image(s):\n"
                    + "\n".join(f"  {s['path']}: {s['reason']}" for s in skipped))
        if not items:
            listed = ", ".join(s["path"] for s in skipped[:10])
            raise InvalidDatasetError(f"{self.label}: no image of {source.name} could be read ({listed})")
        classes = sorted({label for _, label in items if label})
        imagedir.write(ctx, "image_directory", items, classes)
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
        refuse_long_names(name, path, module_label)
        if PurePosixPath(name).name != name or not (path / name).exists():
            raise InvalidDatasetError(f"{module_label}: the Input dataset names a file {name!r} that is not in {path}")
        return path / name
    entries = [e for e in path.iterdir() if e.name != META_FILE]
    if len(entries) == 1 and entries[0].is_file() and _suffix(entries[0].name) not in IMAGE_SUFFIXES:
        return entries[0]
    return path


@contextmanager
def open_entries(source: Path, module_label: str):
    """Yields (every regular file of the archive or folder, how many other entries were ignored);
    the archive (read by sdk/archives.py) stays open while the entries are read."""
    if source.is_dir():
        yield _folder_entries(source)
        return
    name = source.name.lower()
    if not name.endswith(ZIP_SUFFIXES + TAR_SUFFIXES):
        raise InvalidDatasetError(f"{module_label}: {source.name}: unsupported file type "
                                  f"{_suffix(source.name) or '(no extension)'}; expected {SUPPORTED}")
    with ExitStack() as stack:  # the archive stays open while the caller reads the entries
        try:
            listing = stack.enter_context(archives.members(source, source.name, MAX_ENTRIES))
            entries, ignored = [], 0
            for m in listing:  # links, devices and folders: never followed, never created
                if m.kind == archives.FILE:
                    entries.append(Entry(m.name, m.size, m.chunks, m.packed))
                else:
                    ignored += 1
        except archives.TooMany as e:
            raise _too_many(source, str(e)) from None
        except archives.Outside as e:
            raise InvalidDatasetError(f"{module_label or ConvertToImageDirectory.label}: {source.name} holds an entry "
                                      f"outside its own folder, refused: {e.name!r}") from None
        except archives.Unreadable as e:
            raise InvalidDatasetError(f"{module_label}: {source.name} is not a readable archive: {e}") from None
        for entry in entries:
            refuse_long_names(entry.name, source, module_label)
        if not entries:
            raise InvalidDatasetError(f"{module_label}: {source.name} is empty: no file in it")
        yield entries, ignored


def _too_many(source: Path, why: str) -> InvalidDatasetError:
    return InvalidDatasetError(f"{ConvertToImageDirectory.label}: {source.name} {why}, the most one archive may hold: "
                               "split it into several datasets")


def _folder_entries(source: Path) -> tuple[list[Entry], int]:
    entries, ignored = [], 0
    for dirpath, dirnames, filenames in os.walk(source):  # links to folders are not followed
        dirnames.sort()
        for f in sorted(filenames):
            p = Path(dirpath) / f
            if p.is_symlink() or not p.is_file() or (p.parent == source and f == META_FILE):
                ignored += 1
                continue
            entries.append(Entry(p.relative_to(source).as_posix(), p.stat().st_size, lambda p=p: _file_chunks(p)))
    if not entries:
        raise InvalidDatasetError(f"{ConvertToImageDirectory.label}: the folder {source} is empty: no file in it")
    return entries, ignored


class _Budget:
    """What extraction may write: at most `limit` bytes in all, and no more than MAX_RATIO times
    the compressed size of a zip entry, or of a whole archive (a tar is compressed as one stream:
    all of its files count against the size of the archive). Checked as each chunk is written,
    so that an archive whose headers lie is caught too."""

    def __init__(self, module_label: str, source: Path, limit: int, archive_size: int | None):
        self.module_label, self.source, self.limit, self.archive_size = module_label, source, limit, archive_size
        self.written = 0

    def extract(self, entry: Entry, target: Path) -> None:
        """Stream one entry into `target`, refusing it as soon as it goes past a limit."""
        entry_written = 0
        with target.open("wb") as dst:
            for chunk in entry.chunks():
                entry_written += len(chunk)
                self.written += len(chunk)
                self._check(entry, entry_written)
                dst.write(chunk)

    def _check(self, entry: Entry, entry_written: int) -> None:
        if self.written > self.limit:
            raise InvalidDatasetError(f"{self.module_label}: {self.source.name} expands past the limit of "
                                      f"{self.limit // MB} MB (parameter 'Maximum expanded size (MB)'), at {entry.name}")
        packed, expanded, what = entry.packed, entry_written, entry.name
        if packed is None:
            packed, expanded, what = self.archive_size, self.written, f"its files up to {entry.name}"
        if packed is not None and expanded > RATIO_FLOOR and expanded > MAX_RATIO * max(packed, 1):
            raise InvalidDatasetError(
                f"{self.module_label}: {self.source.name} is refused as a zip bomb: {what} expand to more than "
                f"{MAX_RATIO} times their compressed size ({_size(packed)} -> {_size(expanded)} so far; "
                f"the limit is a compression ratio of {MAX_RATIO}:1)")


def _file_chunks(path: Path) -> Iterator[bytes]:
    """A folder's file, CHUNK at a time; archives.Unreadable when it cannot be read."""
    try:
        with path.open("rb") as src:
            while chunk := src.read(CHUNK):
                yield chunk
    except OSError as e:
        raise archives.Unreadable(f"{type(e).__name__}: {e}", member=path.name) from None


def _size(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB else f"{n / 1024:.1f} KB"


def refuse_long_names(name: str, source: Path, module_label: str) -> None:
    """InvalidDatasetError naming a file or folder name the file system cannot hold (not an OSError)."""
    for part in name.replace("\\", "/").split("/"):
        if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX:
            raise InvalidDatasetError(
                f"{module_label or ConvertToImageDirectory.label}: {source.name} holds a file or folder name longer "
                f"than {NAME_MAX} bytes, more than a file system takes: {part[:60]!r}... ({len(part.encode('utf-8', 'surrogateescape'))} bytes, in {name[:120]!r})")


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


def to_rgb_file(source: Path, stem: Path) -> Path:
    """Write the image in `source` as 8-bit RGB to `stem` + .jpg (an RGB JPEG, moved as it is) or
    .png; return that path. Raises on anything unreadable, and on more than MAX_PIXELS pixels."""
    from PIL import Image, ImageOps

    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)  # a pixel bomb is unreadable here
        with Image.open(source) as img:
            if img.width * img.height > MAX_PIXELS:
                raise ValueError(f"{img.width} x {img.height} pixels, more than the {MAX_PIXELS:,} an image may have here")
            img.load()
            fmt, mode = img.format, img.mode
            keep = fmt == "JPEG" and mode == "RGB" and img.getexif().get(0x0112, 1) == 1
            rgb = None if keep else to_rgb(ImageOps.exif_transpose(img))
    target = stem.with_name(stem.name + (".jpg" if keep else ".png"))
    target.parent.mkdir(parents=True, exist_ok=True)
    if keep:
        shutil.move(source, target)
    else:
        rgb.save(target, "PNG")
    return target


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
