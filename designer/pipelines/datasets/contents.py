"""What a dataset's archive holds, for the Data page: its images per class (the labels Convert to
Image Directory gives them: the class sub-folder, a wrapping folder walked into, `__MACOSX` and
hidden files left out), how many files, and a few images to preview, one class after another.

Read from the archive's listing (sdk/archives.py, the one reader of archives), never extracted:
once at upload, from the uploaded file, and kept with the dataset. A preview image is read back
from the stored archive: a zip's member directly (a bucket's archive through ranged reads), a
tar's by reading at most PREVIEW_SCAN members from its start, so that a preview costs a bounded
amount of work whatever the archive's size. Pillow only: the web process never imports torch.
"""
from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import BinaryIO

from modules import convert_to_image_directory as convert
from sdk import archives
from sdk.errors import InvalidDatasetError

PREVIEW = 12  # images shown per version
PREVIEW_SCAN = 2_000  # a tar's members read at most to reach a preview image (a tar is read from its start)
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # of one previewed image as stored in the archive
MAX_PIXELS = 50_000_000  # of one previewed image, decoded
THUMBNAIL = 160  # pixels, the longer side
UNLABELED = "(no class)"


def summarize(source: BinaryIO, filename: str) -> dict:
    """{"files", "images", "classes": {label: images}, "preview": [{"name", "label"}]} of the archive
    `source` (a seekable binary file named `filename`); {"error": why} when it cannot be listed."""
    try:
        with archives.members(source, filename, convert.MAX_ENTRIES) as listing:
            entries = [convert.Entry(m.name, m.size, m.chunks, m.packed) for m in listing if m.kind == archives.FILE]
    except (archives.TooMany, archives.Outside, archives.Unreadable) as e:
        return {"error": f"{filename}: {e}"}
    order = {e.name: i for i, e in enumerate(entries)}
    try:
        picked = convert.pick_images(entries, Path(filename), "")
    except InvalidDatasetError:
        picked = []
    classes = Counter(label or UNLABELED for _, label in picked)
    per_class: dict[str, list[str]] = {}
    tar = not filename.lower().endswith(".zip")
    for entry, label in picked:
        if not tar or order[entry.name] < PREVIEW_SCAN:
            per_class.setdefault(label or UNLABELED, []).append(entry.name)
    preview: list[dict] = []
    while len(preview) < PREVIEW and any(per_class.values()):
        for label in sorted(per_class):
            if per_class[label] and len(preview) < PREVIEW:
                preview.append({"name": per_class[label].pop(0), "label": label})
    return {"files": len(entries), "images": len(picked), "classes": dict(sorted(classes.items())), "preview": preview}


class NotPreviewable(ValueError):
    pass


def thumbnail(source: BinaryIO, filename: str, member: str) -> bytes:
    """A PNG thumbnail of the archive's image `member`; NotPreviewable (saying why) when it is not
    among the first PREVIEW_SCAN members of a tar, too large, or not a readable image."""
    try:
        with archives.members(source, filename, convert.MAX_ENTRIES) as listing:
            for i, m in enumerate(listing):
                if i >= PREVIEW_SCAN and not filename.lower().endswith(".zip"):
                    break
                if m.name == member and m.kind == archives.FILE:
                    if m.size > MAX_IMAGE_BYTES:
                        raise NotPreviewable(f"{member} is {m.size:,} bytes, more than a preview reads")
                    data = b"".join(_bounded(m.chunks()))
                    return _png(data, member)
    except (archives.TooMany, archives.Outside, archives.Unreadable) as e:
        raise NotPreviewable(f"{filename}: {e}") from None
    raise NotPreviewable(f"{filename} has no image {member!r} among its first {PREVIEW_SCAN:,} entries")


def _bounded(chunks):
    read = 0
    for chunk in chunks:
        read += len(chunk)
        if read > MAX_IMAGE_BYTES:  # its header said less: headers can lie
            raise NotPreviewable(f"an image of more than {MAX_IMAGE_BYTES:,} bytes")
        yield chunk


def _png(data: bytes, member: str) -> bytes:
    import warnings

    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as img:
                if img.width * img.height > MAX_PIXELS:
                    raise NotPreviewable(f"{member}: {img.width} x {img.height} pixels, more than a preview decodes")
                img.thumbnail((THUMBNAIL, THUMBNAIL))
                out = io.BytesIO()
                img.convert("RGBA" if "A" in img.getbands() else "RGB").save(out, "PNG")
                return out.getvalue()
    except NotPreviewable:
        raise
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombWarning, Image.DecompressionBombError) as e:
        raise NotPreviewable(f"{member} is not a readable image ({type(e).__name__})") from None


class StoredFile(io.RawIOBase):
    """A stored object as a seekable file, read through the store's ranged reads (a zip in a
    bucket is read from its end: its listing, then the one member, never the whole archive)."""

    def __init__(self, store, key: str, size: int):
        self.store, self.key, self.length, self.pos = store, key, size, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.length}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer):
        want = min(len(buffer), max(0, self.length - self.pos))
        if want == 0:
            return 0
        data = self.store.read_range(self.key, self.pos, want)
        buffer[:len(data)] = data
        self.pos += len(data)
        return len(data)
