"""Archive bombs: about 1 MB of zip or tar.gz that expands to `size` bytes of zeros (1 GB), with
one real image beside it in the zip. Used by the archive-limit tests and bench/limits.py."""
import io
import tarfile
import zipfile

from PIL import Image

GB = 1024**3
CHUNK = b"\0" * 2**20


class Zeros(io.RawIOBase):
    """`size` zero bytes, read as a file (tarfile.addfile streams it)."""

    def __init__(self, size):
        self.left = size

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), self.left)
        b[:n] = bytes(n)
        self.left -= n
        return n


def zip_bomb(path, size=GB):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("k/fine.png", png(Image.new("RGB", (4, 4), "red")))
        with z.open("k/zeros.png", "w", force_zip64=True) as f:
            for _ in range(size // len(CHUNK)):
                f.write(CHUNK)
    return path


def tar_bomb(path, size=GB):
    with tarfile.open(path, "w:gz", compresslevel=9) as t:
        info = tarfile.TarInfo("k/zeros.png")
        info.size = size
        t.addfile(info, io.BufferedReader(Zeros(size), 2**20))
    return path


def png(img) -> bytes:
    """An image as PNG bytes."""
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()
