"""Checks shared by the data modules (not a module itself)."""
from __future__ import annotations

from modules.base import NotInRangeValueError


def check_params(ctx) -> None:
    """Validate every parameter again at run time: a pipeline is validated when submitted, but a
    module may also be run directly (tests, scripts). Raises NotInRangeValueError naming it."""
    module = ctx.module
    for p in module.params:
        error = p.check(ctx.params.get(p.name))
        if error:
            raise NotInRangeValueError(f"{module.label}: parameter {p.label!r}: {error}")
