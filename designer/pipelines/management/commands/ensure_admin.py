import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the first user (admin) if there is no user with a password yet, and say how to sign in."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument("--password", default="", help="default: a random one, printed once")

    def handle(self, *args, **opts):
        User = get_user_model()
        if any(u.has_usable_password() for u in User.objects.filter(is_superuser=True)):
            return
        password = opts["password"] or secrets.token_urlsafe(9)
        user, _ = User.objects.get_or_create(username=opts["username"])
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        self.stdout.write(f"Created the first user: sign in as {user.username} / {password} (change it in /admin/).")
