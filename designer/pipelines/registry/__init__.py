"""The model registry: registered models and their versions, lineage, packaging, pages and API."""
