"""Convert to Image Directory reads archives in bounded memory: a zip (or tar.gz) bomb is refused
while it is written, naming the limit, in a process whose peak memory hardly grows; names too long
for a file system and images of too many pixels are named, never an OSError."""
import io
import json
import subprocess
import sys
import tarfile
import textwrap
import time
import zipfile

import pytest
from PIL import Image

from modules.convert_to_image_directory import MAX_PIXELS, MAX_RATIO, NAME_MAX, ConvertToImageDirectory
from sdk.errors import InvalidDatasetError
from tests.bombs import png, tar_bomb, zip_bomb
from tests.conftest import ROOT
from tests.modules.runner import log_text, run_module

# run in a fresh process, so that its peak memory (ru_maxrss) is that of this conversion alone
MEASURE = textwrap.dedent("""
    import json, resource, sys, time
    import numpy, PIL.Image  # what a conversion imports anyway, loaded before the baseline
    from sdk.errors import InvalidDatasetError
    from modules.convert_to_image_directory import ConvertToImageDirectory
    from tests.modules.runner import run_module
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    try:
        run_module(ConvertToImageDirectory, sys.argv[2], input_dataset=sys.argv[1])
        error = None
    except InvalidDatasetError as e:
        error = str(e)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"error": error, "seconds": time.monotonic() - started, "before_mb": before / 1024,
                      "after_mb": after / 1024, "grew_mb": (after - before) / 1024}))
""")


@pytest.mark.parametrize(("maker", "name"), [(zip_bomb, "bomb.zip"), (tar_bomb, "bomb.tar.gz")])
def test_a_1_mb_archive_expanding_to_1_gb_is_refused_in_bounded_memory(tmp_path, maker, name):
    bomb = maker(tmp_path / name)
    assert bomb.stat().st_size < 2 * 2**20  # about 1 MB
    node = tmp_path / "convert"
    out = subprocess.run([sys.executable, "-c", MEASURE, str(bomb), str(node)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\n{name}: {bomb.stat().st_size / 2**20:.2f} MB -> 1024 MB; refused in {figures['seconds']:.1f} s, "
          f"peak memory {figures['before_mb']:.0f} -> {figures['after_mb']:.0f} MB, grew by {figures['grew_mb']:.0f} MB "
          "(target: under 200 MB)")
    assert figures["error"] is not None and f"{name} is refused as a zip bomb" in figures["error"]
    assert f"the limit is a compression ratio of {MAX_RATIO}:1" in figures["error"]
    assert figures["grew_mb"] < 200
    leftovers = [p for p in node.rglob("*") if p.is_file() and p.stat().st_size > 2**20]
    assert leftovers == []  # the partly written entry is removed


def test_an_archive_within_the_ratio_converts(tmp_path):
    """Uncompressed images compress well, but far less than a bomb."""
    photo = Image.effect_noise((600, 600), 40).convert("RGB")  # a 1 MB BMP, compressing a few times
    archive = tmp_path / "bmps.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        buf = io.BytesIO()
        photo.save(buf, "BMP")
        z.writestr("k/a.bmp", buf.getvalue())
    out = run_module(ConvertToImageDirectory, tmp_path / "convert", input_dataset=archive)["image_directory"]
    assert len(list((out / "images").rglob("*.png"))) == 1
    assert not (out / ".extracting").exists()


@pytest.mark.parametrize("fmt", ["zip", "tar"])
@pytest.mark.parametrize("where", ["folder", "file"])
def test_a_name_too_long_for_a_file_system_is_named(tmp_path, fmt, where):
    long = "é" * 150  # 300 bytes in UTF-8
    entry = f"{long}/a.png" if where == "folder" else f"k/{long}.png"
    archive = tmp_path / f"long.{fmt}"
    data = png(Image.new("RGB", (4, 4), "red"))
    if fmt == "zip":
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("ok/b.png", data)
            z.writestr(entry, data)
    else:
        with tarfile.open(archive, "w") as t:
            for name in ("ok/b.png", entry):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    with pytest.raises(InvalidDatasetError) as e:
        run_module(ConvertToImageDirectory, tmp_path / "convert", input_dataset=archive)
    assert f"long.{fmt} holds a file or folder name longer than {NAME_MAX} bytes, more than a file system takes: " \
           f"'{'é' * 60}'... (3" in str(e.value)
    assert "OSError" not in log_text(tmp_path / "convert")


def test_a_label_folder_of_255_bytes_is_fine(tmp_path):
    archive = tmp_path / "ok.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for label in ("a" * NAME_MAX, "b"):
            z.writestr(f"{label}/x.png", png(Image.new("RGB", (4, 4), "red")))
    out = run_module(ConvertToImageDirectory, tmp_path / "convert", input_dataset=archive)["image_directory"]
    assert len(list((out / "images").rglob("*.png"))) == 2


def test_an_image_of_too_many_pixels_is_skipped_naming_the_limit(tmp_path):
    side = int(MAX_PIXELS**0.5) + 100
    archive = tmp_path / "huge.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("k/huge.png", png(Image.new("1", (side, side))))  # small as a file, big decoded
        z.writestr("k/fine.png", png(Image.new("RGB", (4, 4), "red")))
    started = time.monotonic()
    out = run_module(ConvertToImageDirectory, tmp_path / "convert", input_dataset=archive)["image_directory"]
    assert time.monotonic() - started < 30
    assert len(list((out / "images").rglob("*.png"))) == 1
    assert f"k/huge.png: ValueError: {side} x {side} pixels, more than the {MAX_PIXELS:,} an image may have here" \
           in log_text(tmp_path / "convert")


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
def test_an_archive_of_more_entries_than_the_limit_is_refused_before_reading_them_all(tmp_path, monkeypatch, fmt):
    from modules import convert_to_image_directory as convert

    monkeypatch.setattr(convert, "MAX_ENTRIES", 5)
    archive = tmp_path / f"many.{fmt}"
    if fmt == "zip":
        with zipfile.ZipFile(archive, "w") as z:
            for i in range(7):
                z.writestr(f"k/{i}.png", b"")
    else:
        with tarfile.open(archive, "w:gz") as t:
            for i in range(7):
                t.addfile(tarfile.TarInfo(f"k/{i}.png"), io.BytesIO(b""))
    with pytest.raises(InvalidDatasetError, match=f"many.{fmt} holds more than 5 entries .files and folders., the most "
                                                  "one archive may hold: split it into several datasets"):
        run_module(ConvertToImageDirectory, tmp_path / "convert", input_dataset=archive)
    monkeypatch.setattr(convert, "MAX_ENTRIES", 7)  # at the limit: converted (empty files are skipped as unreadable)
    with pytest.raises(InvalidDatasetError, match="no image of many.* could be read"):
        run_module(ConvertToImageDirectory, tmp_path / "convert2", input_dataset=archive)
