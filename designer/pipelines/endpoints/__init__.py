"""Real-time endpoints: a registered model version served, its keys, entry scripts, pages and API."""
