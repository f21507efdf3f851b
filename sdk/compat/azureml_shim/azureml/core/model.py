"""`from azureml.core.model import Model` (sdk/compat) for the original's entry scripts:
`Model.get_model_path(name)` in init() is where the endpoint's registered version lies. Only
that: registering and deploying are the designer's (its Models and Endpoints pages, its API)."""
from __future__ import annotations

import os
from pathlib import Path

META_FILE = "_meta.yaml"  # the designer's own file in every output folder (sdk/layout.py)


class Model:
    @staticmethod
    def get_model_path(model_name: str, version: int | None = None, _workspace=None) -> str:
        """The version's folder (AZUREML_MODEL_DIR, set by the serving process for an endpoint's
        entry script); the one file in it when the model is one file, as the original answers for
        a model registered from a file."""
        folder = os.environ.get("AZUREML_MODEL_DIR")
        if not folder:
            raise RuntimeError(f"Model.get_model_path({model_name!r}): no model is deployed here (AZUREML_MODEL_DIR "
                               "is set for an endpoint's entry script only)")
        entries = [p for p in Path(folder).iterdir() if p.name != META_FILE]
        return str(entries[0]) if len(entries) == 1 and entries[0].is_file() else folder
