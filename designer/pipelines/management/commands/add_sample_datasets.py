"""The sample datasets (designer/pipelines/datasets/samples.py) for a user: `make run` runs it after
ensure_admin, so that the tour's pipeline (examples/digits.json) submits as imported. Safe to run
again: a dataset of the sample's name is kept as it is."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from designer.pipelines.datasets import samples
from designer.pipelines.datasets import service as datasets
from designer.pipelines.management.commands._common import DEFAULT_OWNER, owner, ready_database


class Command(BaseCommand):
    help = (f"Add the sample dataset {samples.DIGITS!r} (scikit-learn's digits as a folder of PNGs per class, "
            "made here: no download) to a user who has no dataset of that name; prints what it did.")

    def add_arguments(self, parser):
        parser.add_argument("--owner", default=None, help=f"an existing user (default: {DEFAULT_OWNER}, "
                            "when there is one: `make run` never stops for want of it)")

    def handle(self, *args, **opts):
        ready_database(self.stderr)
        if opts["owner"] is None and get_user_model().objects.exclude(username=DEFAULT_OWNER).exists() \
                and not get_user_model().objects.filter(username=DEFAULT_OWNER).exists():
            self.stderr.write(f"No user named {DEFAULT_OWNER}: no sample dataset added "
                              "(add it to a user with `manage.py add_sample_datasets --owner NAME`).")
            return
        user = owner(opts["owner"] or DEFAULT_OWNER, self.stderr)
        ds, added = datasets.add_sample_digits(user)
        if added:
            self.stdout.write(f"Added the sample dataset {ds.name!r} (dataset {ds.id}) to {user.username}: "
                              "1,797 images of 10 classes, the one examples/digits.json names.")
        else:
            self.stdout.write(f"{user.username} has the sample dataset {ds.name!r} already (dataset {ds.id}).")
