from django.core.management.base import BaseCommand, CommandError

from designer.engine import graph
from designer.pipelines.catalogue import get_catalogue
from designer.pipelines.management.commands._common import owner, problems_text, read_pipeline_file
from designer.pipelines.models import Pipeline


class Command(BaseCommand):
    help = "Create a pipeline from a JSON file. Nothing is created unless the file is valid."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--owner", default="admin")

    def handle(self, *args, **opts):
        doc = read_pipeline_file(opts["file"])
        problems = graph.validate(doc, get_catalogue())
        if problems:
            raise CommandError(f"{opts['file']} cannot be imported, {len(problems)} problem(s):\n{problems_text(problems)}")
        p = Pipeline.objects.create(owner=owner(opts["owner"]), name=doc.get("name") or "Imported pipeline", draft=doc)
        self.stdout.write(str(p.id))
