"""A zip's listing is measured from its end records before zipfile reads it (sdk/archives.py):
the count it declares, and its size, which bounds the entries zipfile would find whatever the count says."""
import io
import struct
import zipfile

from sdk.archives import ENTRY_BYTES, zip_listing


def zip_of(count: int, comment: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for i in range(count):
            z.writestr(f"k/{i}.png", b"")
        z.comment = comment
    return buffer.getvalue()


def test_the_declared_count_and_size_are_read_from_the_end_also_past_a_comment_and_in_zip64():
    for count in (0, 3, 70_000):  # 70,000 > 65,535: zipfile writes zip64 end records
        listing = zip_listing(io.BytesIO(zip_of(count, comment=b"PK" * 100)))
        assert listing.entries == count and len(zipfile.ZipFile(io.BytesIO(zip_of(count))).infolist()) == count
        assert listing.size == sum(46 + len(f"k/{i}.png") for i in range(count))
    assert zip_listing(io.BytesIO(b"not a zip at all")) is None


def test_a_listing_that_lies_about_its_count_is_caught_by_its_size():
    data = bytearray(zip_of(2000))
    end = data.rfind(b"PK\x05\x06")
    data[end + 8:end + 12] = struct.pack("<HH", 1, 1)  # "one entry", over a listing of 2,000
    assert len(zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()) == 2000  # zipfile walks the listing by its size
    listing = zip_listing(io.BytesIO(bytes(data)))
    assert listing.entries == 1 and listing.size == 2000 * 46 + sum(len(f"k/{i}.png") for i in range(2000))
    assert listing.too_long(10) == "lists its entries in 108 KB, more than 10 entries of ordinary names take (5 KB)"
    assert listing.too_long(1000) is None and 1000 * ENTRY_BYTES > listing.size  # a lie within the bound: zipfile's cost is bounded
    assert zip_listing(io.BytesIO(zip_of(11))).too_long(10) == "holds more than 10 entries (files and folders)"
    assert zip_listing(io.BytesIO(zip_of(10))).too_long(10) is None


# ---------------------------------------------------------------- members(): the one reader of uploads

def tar_of(members: list[tuple[str, bytes | None, bytes]]) -> bytes:
    """(name, tar type or None for a file, content or link target)."""
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as t:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            if kind is None:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            else:
                info.type, info.linkname = kind, data.decode()
                t.addfile(info)
    return buffer.getvalue()


def listed(data: bytes, name: str, max_entries: int = 100) -> list[tuple]:
    from sdk import archives

    with archives.members(io.BytesIO(data), name, max_entries) as found:
        return [(m.name, m.kind, m.link, b"".join(m.chunks(3)) if m.kind == archives.FILE else None) for m in found]


def test_zip_and_tar_members_say_what_they_are_and_read_in_chunks_without_extracting():
    import tarfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("cats/a.png", b"abcdefg")
        z.writestr("cats/", b"")
        link = zipfile.ZipInfo("cats/l")
        link.external_attr = (0o120777 << 16)  # a symbolic link, as Info-ZIP stores one
        z.writestr(link, b"/etc/passwd")
    assert listed(buffer.getvalue(), "x.ZIP") == [("cats/a.png", "file", "", b"abcdefg"), ("cats/", "folder", "", None),
                                                  ("cats/l", "link", "", None)]
    tar = tar_of([("d/a.txt", None, b"hello"), ("d/s", tarfile.SYMTYPE, b"/etc"), ("d/h", tarfile.LNKTYPE, b"d/a.txt"),
                  ("d/fifo", tarfile.FIFOTYPE, b"")])
    assert listed(tar, "x.tar.gz") == [("d/a.txt", "file", "", b"hello"), ("d/s", "link", "/etc", None),
                                       ("d/h", "link", "d/a.txt", None), ("d/fifo", "other", "", None)]


def test_a_member_leaving_the_folder_too_many_entries_and_a_broken_archive_are_refused_by_kind():
    import pytest

    from sdk import archives

    for name in ("../evil", "a/../../evil", "/etc/passwd", "C:/x", "a\\..\\..\\b"):
        with pytest.raises(archives.Outside) as refused:
            listed(tar_of([(name, None, b"x")]), "t.tgz")
        assert refused.value.name == name
    assert archives.inside_path("./a//b/") == archives.PurePosixPath("a/b") and archives.inside_path("./") is None
    with pytest.raises(archives.TooMany, match="more than 3 entries"):  # a tar's, counted header by header
        listed(tar_of([(f"{i}.png", None, b"") for i in range(5)]), "t.tar.gz", max_entries=3)
    with pytest.raises(archives.TooMany, match="more than 3 entries"):  # a zip's, from its end records
        listed(zip_of(5), "z.zip", max_entries=3)
    for data, name in ((b"not a zip", "z.zip"), (b"nor a tar", "t.tar"), (tar_of([("a", None, b"x" * 100)])[:40], "t.tgz")):
        with pytest.raises(archives.Unreadable) as refused:
            listed(data, name)
        assert refused.value.member is None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("a.png", b"0123456789" * 10)
    broken = bytearray(buffer.getvalue())
    broken[broken.find(b"0123456789")] ^= 0xFF  # a bad CRC: the member, not the archive, is unreadable
    with pytest.raises(archives.Unreadable, match="CRC") as refused:
        listed(bytes(broken), "z.zip")
    assert refused.value.member == "a.png"
