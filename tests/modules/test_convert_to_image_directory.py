import csv
import io
import tarfile
import zipfile

import numpy as np
import pytest
import yaml
from PIL import Image

from modules.convert_to_image_directory import ConvertToImageDirectory
from sdk.errors import InvalidDatasetError
from tests.imagesets import digits_folder, make_archive
from tests.modules.runner import log_text, run_module


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    return digits_folder(tmp_path_factory.mktemp("digits") / "digits", per_class=2, size=16)


def convert(tmp_path, source, **params):
    return run_module(ConvertToImageDirectory, tmp_path / "convert", params, input_dataset=source)["image_directory"]


def index(out):
    with (out / "index.csv").open() as f:
        return [(r["path"], r["label"]) for r in csv.DictReader(f)]


def meta(out):
    return yaml.safe_load((out / "_meta.yaml").read_text())


def png_bytes(img, fmt="PNG"):
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


def zip_of(path, files: dict):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path


def tar_of(path, files: dict):
    with tarfile.open(path, "w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return path


RED = png_bytes(Image.new("RGB", (8, 8), (255, 0, 0)))


@pytest.mark.parametrize("fmt", ["zip", "tar", "tar.gz", "tar.bz2"])
def test_it_converts_every_archive_format_walking_into_the_wrapping_folder(tmp_path, digits, fmt):
    archive = make_archive(digits, tmp_path / f"digits.{fmt}", fmt, wrap="digits")
    out = convert(tmp_path, archive)
    m = meta(out)
    assert m["type"] == "ImageDirectory" and m["count"] == 20 and m["labeled"] is True
    assert m["classes"] == [str(d) for d in range(10)]
    rows = index(out)
    assert sorted({label for _, label in rows}) == m["classes"]
    for path, _ in rows:
        with Image.open(out / path) as img:
            assert img.mode == "RGB" and img.size == (16, 16)


def test_it_reads_a_folder_as_well(tmp_path, digits):
    out = convert(tmp_path, digits)
    assert meta(out)["count"] == 20


def test_it_ignores_macosx_hidden_files_and_non_images(tmp_path):
    archive = zip_of(tmp_path / "a.zip", {
        "cats/a.png": RED, "dogs/b.png": RED, "__MACOSX/cats/._a.png": b"junk", "cats/.hidden.png": b"junk",
        ".git/x.png": b"junk", "README.txt": b"hello", "dogs/notes.csv": b"a,b"})
    out = convert(tmp_path, archive)
    assert sorted(label for _, label in index(out)) == ["cats", "dogs"]
    assert "skipped" not in meta(out)


def test_a_single_folder_of_images_is_a_class_not_a_wrapper(tmp_path):
    out = convert(tmp_path, zip_of(tmp_path / "a.zip", {"cats/a.png": RED, "cats/b.png": RED}))
    assert meta(out)["classes"] == ["cats"]


def test_images_outside_a_class_folder_are_unlabeled(tmp_path):
    out = convert(tmp_path, zip_of(tmp_path / "a.zip", {"a.png": RED, "b.png": RED}))
    assert meta(out)["labeled"] is False and meta(out)["classes"] == []


def test_every_image_mode_becomes_8_bit_rgb(tmp_path):
    palette = Image.new("P", (4, 4), 1)
    palette.putpalette([0, 0, 0, 10, 20, 30] + [0] * 762)
    transparent = Image.new("RGBA", (4, 4), (0, 0, 0, 0))
    sixteen = Image.fromarray(np.full((4, 4), 65535 // 2, dtype=np.uint16))
    files = {
        "k/gray.png": png_bytes(Image.new("L", (4, 4), 77)),
        "k/rgb.bmp": png_bytes(Image.new("RGB", (4, 4), (1, 2, 3)), "BMP"),
        "k/rgba.png": png_bytes(transparent),
        "k/palette.gif": png_bytes(palette, "GIF"),
        "k/sixteen.png": png_bytes(sixteen),
        "k/sixteen_tiff.tif": png_bytes(sixteen, "TIFF"),
        "k/cmyk.jpg": png_bytes(Image.new("CMYK", (4, 4), (0, 0, 0, 0)), "JPEG"),
    }
    out = convert(tmp_path, zip_of(tmp_path / "modes.zip", files))
    pixels = {}
    for path, _ in index(out):
        with Image.open(out / path) as img:
            assert img.mode == "RGB", path
            pixels[path.split("_", 1)[1]] = img.getpixel((0, 0))
    assert pixels["gray.png"] == (77, 77, 77)
    assert pixels["rgb.png"] == (1, 2, 3)
    assert pixels["rgba.png"] == (255, 255, 255)  # transparent -> white background
    assert pixels["palette.png"] == (10, 20, 30)
    assert pixels["sixteen.png"] == (127, 127, 127)  # 32767 / 257
    assert pixels["sixteen_tiff.png"] == (127, 127, 127)
    assert len(pixels) == len(files)
    assert all(path.endswith(".png") for path, _ in index(out))  # a CMYK JPEG is converted too


def test_an_rgb_jpeg_is_kept_as_it_is(tmp_path):
    jpeg = png_bytes(Image.new("RGB", (8, 8), (9, 99, 199)), "JPEG")
    out = convert(tmp_path, zip_of(tmp_path / "a.zip", {"k/photo.jpg": jpeg}))
    (path, _), = index(out)
    assert (out / path).read_bytes() == jpeg


def test_a_corrupt_image_is_skipped_and_listed(tmp_path):
    truncated = RED[: len(RED) // 2]
    archive = zip_of(tmp_path / "a.zip", {"k/good.png": RED, "k/broken.png": truncated, "k/fake.jpg": b"not a jpeg"})
    out = convert(tmp_path, archive)
    m = meta(out)
    assert m["count"] == 1 and m["skipped_count"] == 2
    assert sorted(s["path"] for s in m["skipped"]) == ["k/broken.png", "k/fake.jpg"]
    log = log_text(tmp_path / "convert")
    assert "skipped 2 unreadable image(s)" in log and "k/broken.png" in log and "k/fake.jpg" in log
    # each reason names the file of the archive, not the scratch file it was read from
    assert "  k/fake.jpg: UnidentifiedImageError: cannot identify image file 'k/fake.jpg'" in log, log
    assert ".extracting" not in log and ".extracting" not in str(m["skipped"])


def test_it_fails_when_no_image_can_be_read(tmp_path):
    with pytest.raises(InvalidDatasetError, match=r"Convert to Image Directory: no image of a.zip could be read \(k/fake.jpg\)"):
        convert(tmp_path, zip_of(tmp_path / "a.zip", {"k/fake.jpg": b"not a jpeg"}))


@pytest.mark.parametrize("maker", [zip_of, tar_of])
def test_it_refuses_an_empty_archive(tmp_path, maker):
    archive = maker(tmp_path / ("empty.zip" if maker is zip_of else "empty.tar.gz"), {})
    with pytest.raises(InvalidDatasetError, match=rf"{archive.name} is empty"):
        convert(tmp_path, archive)


def test_it_refuses_an_archive_of_only_non_images(tmp_path):
    archive = zip_of(tmp_path / "docs.zip", {"a/readme.txt": b"x", "b/data.csv": b"1,2"})
    with pytest.raises(InvalidDatasetError, match=r"docs.zip holds no image: 2 file\(s\).*a/readme.txt"):
        convert(tmp_path, archive)


def test_it_refuses_an_unsupported_extension(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "images.rar").write_bytes(b"Rar!")
    with pytest.raises(InvalidDatasetError, match=r"images.rar: unsupported file type .rar; expected .zip"):
        convert(tmp_path, tmp_path / "in")


def test_it_refuses_a_damaged_archive(tmp_path):
    (tmp_path / "bad.zip").write_bytes(b"PK this is not a zip")
    with pytest.raises(InvalidDatasetError, match="bad.zip is not a readable archive"):
        convert(tmp_path, tmp_path / "bad.zip")


@pytest.mark.parametrize("maker", [zip_of, tar_of])
@pytest.mark.parametrize("entry", ["../evil.png", "k/../../evil.png", "/tmp/evil.png"])
def test_it_refuses_entries_outside_its_folder(tmp_path, maker, entry):
    archive = maker(tmp_path / ("a.zip" if maker is zip_of else "a.tar.gz"), {"k/good.png": RED, entry: RED})
    with pytest.raises(InvalidDatasetError, match=rf"holds an entry outside its own folder, refused: '{entry}'"):
        convert(tmp_path, archive)
    assert not list(tmp_path.parent.rglob("evil.png"))


def test_it_refuses_an_archive_that_expands_past_the_limit(tmp_path):
    archive = zip_of(tmp_path / "bomb.zip", {"k/good.png": RED, "k/zeros.bin": bytes(3 * 1024 * 1024)})
    assert archive.stat().st_size < 100_000
    with pytest.raises(InvalidDatasetError, match=r"bomb.zip expands to 3.0 MB, past the limit of 2 MB \(parameter 'Maximum expanded size \(MB\)'\)"):
        convert(tmp_path, archive, max_expanded_mb=2)
    assert not (tmp_path / "convert" / "image_directory" / "images").exists()


def test_links_in_a_tar_are_never_followed(tmp_path):
    with tarfile.open(tmp_path / "links.tar", "w") as t:
        info = tarfile.TarInfo("k/good.png")
        info.size = len(RED)
        t.addfile(info, io.BytesIO(RED))
        link = tarfile.TarInfo("k/passwd.png")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(link)
    out = convert(tmp_path, tmp_path / "links.tar")
    assert [p.split("_", 1)[1] for p, _ in index(out)] == ["good.png"]
