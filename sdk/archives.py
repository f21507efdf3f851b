"""The one reader of uploaded archives (zip, tar, tar.gz, tar.bz2), for Convert to Image Directory
and the component uploads: `members()` lists an archive member by member, never extracting
anything itself (no extractall): each member says what it is (a file, a folder, a link, something
else), its size as its header says, and reads its bytes in chunks; a member whose name leaves the
archive's folder (an absolute path, a drive letter, `..`) is refused (`Outside`), and so is an
archive of more entries than the caller's limit (`TooMany`), a zip's counted from its end records
before zipfile reads its listing. The caller writes the bytes where it chooses and counts them
against its own limits as it writes (headers can lie). Everything the archive cannot give back
(not an archive, truncated, corrupt) is `Unreadable`, never zipfile's or tarfile's own error.

What a zip archive's listing holds is read from its end records alone (a few bytes), before
zipfile reads that listing: zipfile keeps about 0.5 KB of memory per entry (measured: 300,000
entries, 168 MB), so an upload of millions of empty entries would exhaust a process before any
count of ours.

The end of central directory record (and its zip64 form) are those of the ZIP specification
(APPNOTE 4.3.14-4.3.16); zipfile reads the same records, and walks the listing by its size.
"""
from __future__ import annotations

import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO

END = b"PK\x05\x06"  # end of central directory record: 22 bytes, then a comment of up to 65,535
ZIP64_LOCATOR = b"PK\x06\x07"  # 20 bytes, just before END
ZIP64_END = b"PK\x06\x06"
ENTRY_BYTES = 512  # allowed per entry on average: its 46 fixed bytes, a path of ~400 characters, extra fields


@dataclass(frozen=True)
class Listing:
    entries: int  # as the archive declares
    size: int  # bytes of the central directory, which zipfile reads entry by entry

    def too_long(self, max_entries: int) -> str | None:
        """Why zipfile should not read this listing, for a limit of `max_entries`; None: fine. Its
        size bounds it too, whatever count it declares: a listing holds at most size/46 entries."""
        if self.entries > max_entries:
            return f"holds more than {max_entries:,} entries (files and folders)"
        if self.size > max_entries * ENTRY_BYTES:
            return (f"lists its entries in {_size(self.size)}, more than {max_entries:,} entries of ordinary names "
                    f"take ({_size(max_entries * ENTRY_BYTES)})")
        return None


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MB" if n >= 2**20 else f"{n / 1024:,.0f} KB"


def zip_listing(f: BinaryIO) -> Listing | None:
    """The listing a zip archive declares (f: open for binary reading, seekable; read from its
    end, left at an unspecified position); None when no end record is found (zipfile says why)."""
    f.seek(0, 2)
    length = f.tell()
    start = max(0, length - (22 + 65_535))
    f.seek(start)
    tail = f.read()
    at = tail.rfind(END)
    if at < 0 or len(tail) - at < 22:
        return None
    entries, size = struct.unpack("<xxxxxxxxxxHI", tail[at:at + 16])
    if entries != 0xFFFF and size != 0xFFFFFFFF:
        return Listing(entries, size)
    # a zip64 archive: its locator lies just before the end record, and points at the zip64 one
    if start + at < 20:
        return Listing(entries, size)
    f.seek(start + at - 20)
    locator = f.read(20)
    if locator[:4] != ZIP64_LOCATOR:
        return Listing(entries, size)
    (offset,) = struct.unpack("<Q", locator[8:16])
    f.seek(min(offset, length))
    record = f.read(56)
    if record[:4] != ZIP64_END or len(record) < 56:
        return Listing(entries, size)
    entries64, size64 = struct.unpack("<QQ", record[32:48])
    return Listing(entries64, size64)


# ---------------------------------------------------------------- reading an archive member by member

FILE, FOLDER, LINK, OTHER = "file", "folder", "link", "other"
CHUNK = 1024 * 1024  # what a member's reading holds in memory at a time
# what zipfile, tarfile and their decompressors raise on a file that is not (or no longer) an archive
READ_ERRORS = (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, OSError, RuntimeError, NotImplementedError,
               ValueError)


class Unreadable(Exception):
    """The archive, or its member `member` (None: the archive itself), cannot be read; str(): why."""

    def __init__(self, why: str, member: str | None = None):
        super().__init__(why)
        self.member = member


class TooMany(Exception):
    """The archive holds more entries than the caller's limit; str(): why, as "holds more than..."."""


class Outside(Exception):
    """A member's name leads outside the archive's folder: `name`, and whether it is `absolute`."""

    def __init__(self, name: str, absolute: bool):
        super().__init__(f"{name!r} {'has an absolute path' if absolute else 'leads outside its folder (..)'}")
        self.name, self.absolute = name, absolute


def inside_path(name: str) -> PurePosixPath | None:
    """A member's path inside the archive's folder (backslashes read as slashes, empty and `.` parts
    dropped); None for the folder itself; Outside for an absolute path, a drive letter or `..`."""
    text = name.replace("\\", "/")
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise Outside(name, absolute=True)
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Outside(name, absolute=False)
    return PurePosixPath(*parts) if parts else None


@dataclass(frozen=True)
class Member:
    name: str  # as the archive lists it
    path: PurePosixPath | None  # inside_path(name)
    kind: str  # FILE, FOLDER, LINK or OTHER (a device, a pipe)
    size: int  # as its header says
    packed: int | None = None  # its compressed size (zip); None: compressed with the whole archive (tar)
    link: str = ""  # where a LINK points
    hard: bool = False  # a tar's hard link
    opener: Callable[[], IO[bytes] | None] | None = None

    def chunks(self, size: int = CHUNK) -> Iterator[bytes]:
        """The member's bytes, `size` at a time (a FILE only); Unreadable when the archive cannot
        give them back (bad CRC, truncated, an unsupported compression)."""
        assert self.opener is not None and self.kind == FILE, self
        try:
            src = self.opener()
            if src is None:
                raise tarfile.ReadError("no data in the archive for this member")
            with src:
                while chunk := src.read(size):
                    yield chunk
        except READ_ERRORS as e:
            raise Unreadable(f"{type(e).__name__}: {e}", member=self.name) from None


def _is_zip(name: str) -> bool:
    return name.lower().endswith(".zip")


@contextmanager
def members(source: Path | BinaryIO, name: str, max_entries: int) -> Iterator[Iterator[Member]]:
    """The members of the archive `source` (a path, or a seekable binary file), zip or tar as its
    file `name` says, one at a time; the archive stays open for reading inside the `with`."""
    try:
        if _is_zip(name):
            archive: zipfile.ZipFile | tarfile.TarFile = _open_zip(source, max_entries)
        else:
            archive = tarfile.open(source, "r:*") if isinstance(source, Path) else tarfile.open(fileobj=source, mode="r:*")
    except READ_ERRORS as e:
        raise Unreadable(f"{type(e).__name__}: {e}") from None
    with archive:
        yield _zip_members(archive, max_entries) if isinstance(archive, zipfile.ZipFile) else _tar_members(archive, max_entries)


def _open_zip(source: Path | BinaryIO, max_entries: int) -> zipfile.ZipFile:
    if isinstance(source, Path):
        with source.open("rb") as f:
            listing = zip_listing(f)
    else:
        source.seek(0)
        listing = zip_listing(source)
        source.seek(0)
    why = listing.too_long(max_entries) if listing is not None else None
    if why:
        raise TooMany(why)
    return zipfile.ZipFile(source)


def _too_many(max_entries: int) -> TooMany:
    return TooMany(f"holds more than {max_entries:,} entries (files and folders)")


def _zip_members(z: zipfile.ZipFile, max_entries: int) -> Iterator[Member]:
    infos = z.infolist()
    if len(infos) > max_entries:
        raise _too_many(max_entries)
    for info in infos:
        mode = info.external_attr >> 16
        if info.is_dir():
            kind = FOLDER
        elif stat.S_ISLNK(mode):
            kind = LINK
        elif stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # no type bits: a plain file (zip tools often set none)
            kind = OTHER
        else:
            kind = FILE
        yield Member(info.filename, inside_path(info.filename), kind, info.file_size, info.compress_size,
                     opener=partial(z.open, info))


def _tar_members(t: tarfile.TarFile, max_entries: int) -> Iterator[Member]:
    count = 0
    try:
        for m in t:  # header by header: stopped at the limit, not after reading them all
            count += 1
            if count > max_entries:
                raise _too_many(max_entries)
            kind = FOLDER if m.isdir() else LINK if m.issym() or m.islnk() else FILE if m.isreg() else OTHER
            yield Member(m.name, inside_path(m.name), kind, m.size, link=m.linkname, hard=m.islnk(),
                         opener=partial(t.extractfile, m))
    except READ_ERRORS as e:
        raise Unreadable(f"{type(e).__name__}: {e}") from None
