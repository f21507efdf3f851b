"""Pipeline Designer: Django project (settings, urls, asgi, celery) and its engine."""
