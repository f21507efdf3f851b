from django.core.management.base import BaseCommand, CommandError

from designer.pipelines.authoring import drafts
from designer.pipelines.management.commands._common import (
    DEFAULT_OWNER,
    owner,
    problems_text,
    read_pipeline_file,
    ready_database,
)


class Command(BaseCommand):
    help = ("Create a pipeline from a JSON file and print its id. A file that cannot be read creates nothing; "
            "one with problems (no dataset chosen, a value to fix) is imported and its problems printed.")

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--owner", default=DEFAULT_OWNER, help="an existing user (default: admin)")

    def handle(self, *args, **opts):
        doc = read_pipeline_file(opts["file"])
        ready_database(self.stderr)
        user = owner(opts["owner"], self.stderr)
        try:
            p, found = drafts.import_document(user, doc, what=opts["file"])
        except drafts.DraftError as e:
            raise CommandError(f"{e}, {len(e.problems or [])} problem(s):\n{problems_text(e.problems or [])}")
        if found:
            self.stderr.write(f"Imported as pipeline {p.id}, with {len(found)} problem(s) to fix before it runs "
                              f"(in the designer, or run_pipeline --set):\n{problems_text(found)}")
        self.stdout.write(str(p.id))
