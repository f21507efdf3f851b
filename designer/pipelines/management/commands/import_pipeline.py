from django.core.management.base import BaseCommand, CommandError

from designer.engine import graph
from designer.pipelines.catalogue import get_catalogue
from designer.pipelines.management.commands._common import (
    DEFAULT_OWNER,
    owner,
    problems_text,
    read_pipeline_file,
    ready_database,
)
from designer.pipelines.models import Pipeline


class Command(BaseCommand):
    help = "Create a pipeline from a JSON file. Nothing is created unless the file is valid."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--owner", default=DEFAULT_OWNER, help="an existing user (default: admin)")

    def handle(self, *args, **opts):
        doc = read_pipeline_file(opts["file"])
        ready_database(self.stderr)
        user = owner(opts["owner"], self.stderr)
        problems = graph.validate(doc, get_catalogue())
        if problems:
            raise CommandError(f"{opts['file']} cannot be imported, {len(problems)} problem(s):\n{problems_text(problems)}")
        p = Pipeline.objects.create(owner=user, name=doc.get("name") or "Imported pipeline", draft=doc)
        self.stdout.write(str(p.id))
