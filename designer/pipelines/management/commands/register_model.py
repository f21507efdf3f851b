"""Register the model that a node of a run output (Train PyTorch Model, Export to ONNX, or a
component's output declared as a model) as the
next version of a name; print the version. The run must belong to --owner (a stranger's run is
"no run", as in the API)."""
from django.core.management.base import BaseCommand, CommandError

from designer.pipelines.management.commands._common import DEFAULT_OWNER, owner, ready_database
from designer.pipelines.registry import service as registry


class Command(BaseCommand):
    help = "Register a run's trained model: register_model RUN NODE --name NAME; prints NAME:VERSION."

    def add_arguments(self, parser):
        parser.add_argument("run", type=int, help="the run's id")
        parser.add_argument("node", help="the id of its Train PyTorch Model, Export to ONNX or component node")
        parser.add_argument("--output", default=None, help="the output port, where a component has several model outputs")
        parser.add_argument("--name", required=True, help=f"the model's name ({registry.NAME_RULE})")
        parser.add_argument("--description", default="")
        parser.add_argument("--tag", action="append", default=[], metavar="NAME=VALUE", help="a tag (repeat for more)")
        parser.add_argument("--owner", default=DEFAULT_OWNER, help="the run's owner (default: admin)")

    def handle(self, *args, **opts):
        ready_database(self.stderr)
        user = owner(opts["owner"], self.stderr)
        tags = {}
        for item in opts["tag"]:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise CommandError(f"--tag {item!r}: write NAME=VALUE")
            tags[name] = value
        try:
            version = registry.register(user, opts["run"], opts["node"], opts["name"], opts["description"], tags,
                                        opts["output"])
        except registry.RegistryError as e:
            raise CommandError(str(e))
        self.stdout.write(f"{version.model.name}:{version.version}")
        self.stderr.write(f"registered {version.model.name} version {version.version} from run {opts['run']}, node "
                          f"{opts['node']!r} ({version.format}); "
                          + ("a worker packages it for download and endpoints" if version.status == "preparing"
                             else "ready: deploy it with an entry script") + f" (status: {version.status})")
