from django.core.management.base import BaseCommand, CommandError

from designer.pipelines import drafts
from designer.pipelines.management.commands._common import (
    DEFAULT_OWNER,
    owner,
    problems_text,
    read_pipeline_file,
    ready_database,
)


class Command(BaseCommand):
    help = "Create a pipeline from a JSON file. Nothing is created unless the file is valid."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--owner", default=DEFAULT_OWNER, help="an existing user (default: admin)")

    def handle(self, *args, **opts):
        doc = read_pipeline_file(opts["file"])
        ready_database(self.stderr)
        user = owner(opts["owner"], self.stderr)
        try:
            p = drafts.import_document(user, doc, what=opts["file"])
        except drafts.DraftError as e:
            raise CommandError(f"{opts['file']} cannot be imported, {len(e.problems)} problem(s):\n{problems_text(e.problems)}")
        self.stdout.write(str(p.id))
