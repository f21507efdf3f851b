"""Datasets: a user's uploaded image archives and folders, their names, pages and API."""
