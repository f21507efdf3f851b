"""Store an archive, or a folder (zipped on the way), as a dataset (the next version of a name the
owner has already); print its id."""
import tempfile
import zipfile
from pathlib import Path

from django.core.files import File
from django.core.management.base import BaseCommand, CommandError

from designer.pipelines.datasets import service as datasets
from designer.pipelines.management.commands._common import DEFAULT_OWNER, owner, ready_database


class Command(BaseCommand):
    help = ("Add an image archive (.zip, .tar, .tar.gz, .tar.bz2) or folder as a dataset (a name the owner has "
            "already: its next version); prints the dataset id.")

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--owner", default=DEFAULT_OWNER, help="an existing user (default: admin)")
        parser.add_argument("--name", default="", help="the dataset's name (default: the archive's file name); "
                            "one the owner already has gets its next version")

    def handle(self, *args, **opts):
        path = Path(opts["path"])
        ready_database(self.stderr)
        user = owner(opts["owner"], self.stderr)
        # as the API: a name the owner already has gets its next version (a folder is named as its archive)
        name = datasets.name_of(opts["name"].strip(), f"{path.name}.zip" if path.is_dir() else path.name)
        with tempfile.TemporaryDirectory() as tmp:
            if path.is_dir():
                archive = Path(tmp) / f"{path.name}.zip"
                with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
                    for f in sorted(p for p in path.rglob("*") if p.is_file()):
                        z.write(f, f.relative_to(path).as_posix())
                path = archive
            elif not path.is_file():
                raise CommandError(f"{path}: no such file or folder")
            with path.open("rb") as f:
                upload = File(f, name=path.name)
                try:
                    datasets.check_archive(upload, path.name)
                except datasets.NotAnArchive as e:
                    raise CommandError(str(e))
                ds = datasets.store(user, name, upload)
        self.stderr.write(f"dataset {ds.name!r} version {ds.version} (id {ds.id})")
        self.stdout.write(str(ds.id))
