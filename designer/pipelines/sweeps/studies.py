"""A sweep's Optuna study, stored in the project's own database (the tables Optuna creates beside
Django's), so that every worker and the web app read and write the same study.

On SQLite (the embedded default) the study lives in a file beside Django's (`<database>-optuna`):
SQLite lets one connection write at a time, and Optuna writes through its own connection while
a Django transaction (starting a trial) holds the file."""
from __future__ import annotations

import threading

from django.db import connection
from sqlalchemy.engine import URL

from designer.engine import tuning
from designer.engine.sweep_config import SweepConfig
from designer.pipelines.models import Sweep

_studies: dict[str, object] = {}
_lock = threading.Lock()


def storage_url() -> str:
    """The SQLAlchemy URL of the database Django uses now (the test database, in tests)."""
    d = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{d['NAME']}-optuna"
    return URL.create("postgresql+psycopg", username=d.get("USER") or None, password=d.get("PASSWORD") or None,
                      host=d.get("HOST") or None, port=int(d["PORT"]) if d.get("PORT") else None,
                      database=d["NAME"]).render_as_string(hide_password=False)


def create(study_name: str, config: SweepConfig):
    study = tuning.create_study(tuning.storage(storage_url()), study_name, config)
    with _lock:
        _studies[study_name] = study
    return study


def load(sweep: Sweep, config: SweepConfig):
    """The sweep's study (kept per process: its sampler and pruner are built once)."""
    with _lock:
        study = _studies.get(sweep.study_name)
    if study is None:
        study = tuning.load_study(tuning.storage(storage_url()), sweep.study_name, config)
        with _lock:
            _studies[sweep.study_name] = study
    return study


def delete(study_name: str) -> bool:
    """Remove a sweep's study (its trials, values and attributes) from Optuna's tables."""
    with _lock:
        _studies.pop(study_name, None)
    return tuning.delete_study(tuning.storage(storage_url()), study_name)
