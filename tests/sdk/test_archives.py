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
