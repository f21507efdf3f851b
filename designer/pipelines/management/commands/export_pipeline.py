from django.core.management.base import BaseCommand, CommandError

from designer.engine import jsontext
from designer.pipelines.authoring.drafts import export_text
from designer.pipelines.management.commands._common import ready_database
from designer.pipelines.models import Pipeline


class Command(BaseCommand):
    help = "Write a stored pipeline to a JSON file (canonical form: stable byte for byte)."

    def add_arguments(self, parser):
        parser.add_argument("pipeline", help="pipeline id")
        parser.add_argument("file", help="output file, or - for standard output")

    def handle(self, *args, **opts):
        ready_database(self.stderr)
        pk = jsontext.whole_number(opts["pipeline"])
        p = Pipeline.objects.filter(pk=pk).first() if pk is not None else None
        if p is None:
            raise CommandError(f"no pipeline with id {opts['pipeline']!r}")
        text = export_text(p)
        if opts["file"] == "-":
            self.stdout.write(text, ending="")
        else:
            with open(opts["file"], "w", encoding="utf-8") as f:
                f.write(text)
            self.stderr.write(f"pipeline {p.id} ({p.name}) written to {opts['file']}")
