"""What a zip archive's listing holds, read from its end records alone (a few bytes), before
zipfile reads that listing: zipfile keeps about 0.5 KB of memory per entry (measured: 300,000
entries, 168 MB), so an upload of millions of empty entries would exhaust a process before any
count of ours. Checked against limits by Convert to Image Directory and the component uploads.

The end of central directory record (and its zip64 form) are those of the ZIP specification
(APPNOTE 4.3.14-4.3.16); zipfile reads the same records, and walks the listing by its size.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

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
