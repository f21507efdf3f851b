"""A sweep's trials on Optuna: HyperDrive's sampling and early-termination policies, with the
study kept in the project's own database so that every worker process shares it.

Sampling: `random` is Optuna's RandomSampler, `grid` a sampler of its own (trial n takes grid
point n, counted, never listed), `bayesian` its TPESampler. Each expression samples its
underlying variable with `trial.suggest_*` and then applies HyperDrive's transformation (exp for the log forms, round(x / q) * q for the q forms); the
normal forms sample the quantile u of the normal distribution and map it with its inverse CDF.

Early termination: Optuna's median and percentile pruners compare a trial only with COMPLETED
trials, so when `max_concurrent_runs` trials start together nothing could stop until one of them
finished. HyperDrive's policies compare every run at each evaluation interval; so do the pruners
here, with every other trial (running, completed or early terminated) that reported the same step.

The caller asks for a trial (`ask`), runs it, reports each epoch's primary metric (`report`, which
answers whether to stop it now) and tells how it ended (`tell`).
"""
from __future__ import annotations

import math
import os
import statistics
import threading
import time
from dataclasses import dataclass

import numpy as np
import optuna
import sqlalchemy.exc
from optuna.pruners import BasePruner, NopPruner
from optuna.samplers import BaseSampler, RandomSampler, TPESampler
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from designer.engine.sweep_config import Policy, SweepConfig, grid_size

EPSILON = 1e-9  # the normal forms sample a quantile in (EPSILON, 1 - EPSILON): inv_cdf(0) is -inf
STATES = {"completed": TrialState.COMPLETE, "early_terminated": TrialState.PRUNED,
          "failed": TrialState.FAIL, "cancelled": TrialState.FAIL}
COMPARED = (TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED)

_storages: dict[tuple[int, str], optuna.storages.RDBStorage] = {}
_storages_lock = threading.Lock()


def storage(url: str) -> optuna.storages.RDBStorage:
    """The process's RDBStorage for a SQLAlchemy URL ("sqlite:////abs/path.sqlite3",
    "postgresql+psycopg://user@host:port/db"), made once per process (a forked worker makes its
    own: a database connection does not cross a fork). Several worker processes share a SQLite
    file, so each waits up to 60 s for the file's lock."""
    key = (os.getpid(), url)
    with _storages_lock:
        if key not in _storages:
            _storages[key] = _new_storage(url)
        return _storages[key]


def _new_storage(url: str, attempts: int = 5) -> optuna.storages.RDBStorage:
    """Optuna creates its tables on a database's first use: two processes doing that at the same
    moment collide (one is refused: the version row or a table exists already); the loser finds
    them made and goes on."""
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {"pool_pre_ping": True}
    for attempt in range(attempts):
        try:
            return optuna.storages.RDBStorage(url, engine_kwargs=engine)
        except sqlalchemy.exc.SQLAlchemyError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.1 * (attempt + 1))
    raise AssertionError("unreachable")


def close_storages() -> None:
    """Close this process's database connections (a test's teardown; PostgreSQL's would otherwise
    be left open until the process exits)."""
    with _storages_lock:
        for key in [k for k in _storages if k[0] == os.getpid()]:
            _storages.pop(key).engine.dispose()


@dataclass
class Asked:
    number: int  # the trial's number in its sweep, from 0
    trial_id: int  # Optuna's id of the trial, for report()
    values: dict  # pipeline parameter -> value, cast to the parameter's type


def create_study(storage, name: str, config: SweepConfig) -> optuna.Study:
    """A new study for a sweep (its direction from primary_metric_goal); `name` must be new."""
    study = optuna.create_study(storage=storage, study_name=name, direction=StudyDirection[config.primary_metric_goal.upper()],
                                sampler=_sampler(config), pruner=pruner(config))
    study.set_user_attr("config", config.as_dict())
    return study


def load_study(storage, name: str, config: SweepConfig) -> optuna.Study:
    """The sweep's study, with the same sampler and pruner, in any process."""
    return optuna.load_study(study_name=name, storage=storage, sampler=_sampler(config), pruner=pruner(config))


def delete_study(storage, name: str) -> bool:
    """Remove a study with its trials from the storage; False when there was none of that name."""
    try:
        optuna.delete_study(study_name=name, storage=storage)
    except KeyError:
        return False
    return True


def ask(study: optuna.Study, config: SweepConfig, types: dict[str, str],
        ranges: dict[str, tuple[float | None, float | None]] | None = None) -> Asked:
    """A new trial and its values, each cast to its pipeline parameter's type ("int", "float",
    "bool", "string"); `ranges` (name -> (min, max), either None) clips the unbounded forms
    (normal, lognormal, and the q forms' rounding) into a parameter's declared range. The values
    are also the trial's user attribute "values". An exhausted() sweep has no more trials: a
    ValueError (also when another process took the last one meanwhile)."""
    if exhausted(study, config):
        raise ValueError(_no_more(config))
    trial = study.ask()
    if trial.number >= min(grid_size(config) or config.max_total_runs, config.max_total_runs):
        trial.set_user_attr("status", "surplus")  # another process asked for the last trial first
        study.tell(trial, state=TrialState.FAIL)
        raise ValueError(_no_more(config))
    values = {}
    for e in config.parameter_space:
        low, high = (ranges or {}).get(e.name, (None, None))
        values[e.name] = _cast(_draw(trial, e.name, e.expression, e.values), types.get(e.name), low, high)
    trial.set_user_attr("values", values)
    return Asked(trial.number, trial._trial_id, values)


def report(study: optuna.Study, config: SweepConfig, trial_id: int, step: int, value: float) -> bool:
    """Record a trial's primary metric at a step (an epoch, from 1), then the policy's verdict:
    True = stop this trial now. A step reported again takes its new value (the last of a step is
    the script's own, as the trial's ranking reads it: sweeps.primary_curve); a trial already told
    answers whether it was early terminated."""
    store = study._storage
    trial = store.get_trial(trial_id)
    if trial.state.is_finished():
        return trial.state == TrialState.PRUNED
    if trial.intermediate_values.get(int(step)) != float(value):
        store.set_trial_intermediate_value(trial_id, int(step), float(value))
        trial = store.get_trial(trial_id)
    return study.pruner.prune(study, trial)


def tell(study: optuna.Study, number: int, state: str, value: float | None) -> None:
    """Finish a trial: completed (with its value: its best primary metric), early_terminated
    (Optuna's PRUNED), failed or cancelled (Optuna's FAIL; the trial's user attribute "status"
    keeps which). A completed trial without a finite value counts as failed for the sampler.
    A trial already finished is left as it is."""
    if state not in STATES:
        raise ValueError(f"unknown trial state {state!r} (one of {', '.join(STATES)})")
    store = study._storage
    trial = store.get_trial(store.get_trial_id_from_study_id_trial_number(study._study_id, number))
    if trial.state.is_finished():
        return
    store.set_trial_user_attr(trial._trial_id, "status", state)
    final = STATES[state]
    if final == TrialState.COMPLETE and (value is None or math.isnan(value)):
        final = TrialState.FAIL
    study.tell(number, float(value) if final == TrialState.COMPLETE and value is not None else None, state=final, skip_if_finished=True)


def exhausted(study: optuna.Study, config: SweepConfig) -> bool:
    """The sweep has asked for max_total_runs trials, or for every point of its grid."""
    return len(study.get_trials(deepcopy=False)) >= min(grid_size(config) or config.max_total_runs, config.max_total_runs)


def _no_more(config: SweepConfig) -> str:
    size = grid_size(config)
    if size is not None and size <= config.max_total_runs:
        return f"the grid's {size} points have all been asked"
    return f"max_total_runs ({config.max_total_runs}) trials have been asked"


def best_value(values: list[float], goal: str) -> float | None:
    """A trial's value: the best of the primary metric values it reported (NaN ignored)."""
    finite = [v for v in values if v is not None and not math.isnan(v)]
    if not finite:
        return None
    return max(finite) if goal == "maximize" else min(finite)


# -- sampling ---------------------------------------------------------------------------------------------

class _Grid(BaseSampler):
    """HyperDrive's grid sampling without the grid in memory: trial number n takes grid point n
    (grid_point: counted by mixed radix, never listed; in the order the values are
    declared, parameters by name), so trials asked together, in any process, never share a point.
    Optuna's GridSampler lists (and shuffles) every point when it is made: 27 million points were
    4 GB. Nothing stops the study once the grid is done (Study.stop is for Study.optimize's loop,
    which ask-and-tell has not): the caller asks exhausted()."""

    def __init__(self, config: SweepConfig):
        size = grid_size(config)
        assert size is not None, "a grid sampler for a sweep that samples no grid"
        self._config, self._size = config, size
        self._points: dict[int, dict] = {}

    def _point(self, trial: FrozenTrial) -> dict:
        number = trial.number % self._size  # a surplus trial (ask() fails it) takes any point
        if number not in self._points:
            if len(self._points) > 64:
                self._points.clear()
            self._points[number] = grid_point(self._config, number)
        return self._points[number]

    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._point(trial)[param_name]


class _SeededPerTrial(BaseSampler):
    """A seeded sampler whose seed is derived from the sweep's seed and the trial's number: the
    same seed gives the same trials whichever worker process asks for them, and two processes
    that load the study never draw the same values (a RandomSampler(seed) in each would)."""

    def __init__(self, make, seed: int):
        self._make, self._seed = make, seed
        self._by_number: dict[int, BaseSampler] = {}

    def _for(self, trial: FrozenTrial) -> BaseSampler:
        if trial.number not in self._by_number:
            if len(self._by_number) > 64:
                self._by_number.clear()
            seed = int(np.random.SeedSequence([self._seed, trial.number]).generate_state(1)[0])
            self._by_number[trial.number] = self._make(seed=seed)
        return self._by_number[trial.number]

    def infer_relative_search_space(self, study, trial):
        return self._for(trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        return self._for(trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._for(trial).sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study, trial) -> None:
        self._for(trial).before_trial(study, trial)

    def after_trial(self, study, trial, state, values) -> None:
        self._for(trial).after_trial(study, trial, state, values)


def _sampler(config: SweepConfig) -> BaseSampler:
    if config.sampling == "grid":
        return _Grid(config)
    make = RandomSampler if config.sampling == "random" else TPESampler
    return make() if config.seed is None else _SeededPerTrial(make, config.seed)


def _draw(trial: optuna.Trial, name: str, expression: str, values: tuple):
    """One value of a HyperDrive expression (its meaning as HyperDrive documents it)."""
    if expression == "choice":
        return trial.suggest_categorical(name, list(values))
    if expression == "randint":  # 0 .. upper - 1
        return trial.suggest_int(name, 0, int(values[0]) - 1)
    if expression in ("uniform", "quniform", "loguniform", "qloguniform"):
        x = trial.suggest_float(name, values[0], values[1])
    else:  # normal, qnormal, lognormal, qlognormal: [mu, sigma, q?]
        x = statistics.NormalDist(values[0], values[1]).inv_cdf(trial.suggest_float(name, EPSILON, 1 - EPSILON))
    if "log" in expression:
        x = math.exp(min(x, 709.0))
    if expression.startswith("q"):
        x = float(f"{round(x / values[2]) * values[2]:.12g}")  # 0.30000000000000004 -> 0.3
    return x


def _cast(value, ptype: str | None, low: float | None, high: float | None):
    if ptype in ("int", "float") or (ptype is None and isinstance(value, (int, float)) and not isinstance(value, bool)):
        value = min(max(value, low if low is not None else value), high if high is not None else value)
    if ptype == "int":
        return int(round(value))
    return {"float": float, "bool": bool, "string": str}.get(ptype or "", lambda v: v)(value)


# -- early termination -------------------------------------------------------------------------------------

def pruner(config: SweepConfig) -> BasePruner:
    """The Optuna pruner of a sweep's policy."""
    kind = {"BanditPolicy": BanditPolicy, "MedianStoppingPolicy": MedianStoppingPolicy,
            "TruncationSelectionPolicy": TruncationSelectionPolicy}.get(config.policy.type)
    return NopPruner() if kind is None else kind(config.policy, config.primary_metric_goal)


class _HyperDrivePolicy(BasePruner):
    """A HyperDrive early-termination policy on Optuna's pruner interface. At a step s (an
    epoch) with s >= max(delay_evaluation, 1) and s % evaluation_interval == 0, the trial is
    compared with every other trial, running, completed or early terminated, at s: its value at s,
    or, for a trial that has not reached s yet, its latest (HyperDrive judges every run at an
    interval by what it has reported so far; trials running side by side would otherwise seldom
    meet at the same step); with none to compare with it goes on. A trial whose metric at s is NaN (its training
    diverged) stops; another trial's NaN counts as the worst value."""

    def __init__(self, policy: Policy, goal: str):
        self.policy, self.maximize = policy, goal == "maximize"

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        step = trial.last_step
        if step is None or step < max(self.policy.delay_evaluation, 1) or step % self.policy.evaluation_interval:
            return False
        others = [t for t in study.get_trials(deepcopy=False, states=COMPARED)
                  if t.number != trial.number and _at(t, step) is not None]
        return bool(others) and (math.isnan(trial.intermediate_values[step]) or self._stop(trial, others, step))

    def score(self, value: float) -> float:
        """Higher is better whatever the goal; NaN (a diverged trial) is the worst."""
        if math.isnan(value):
            return -math.inf
        return value if self.maximize else -value

    def _stop(self, trial: FrozenTrial, others: list[FrozenTrial], step: int) -> bool:
        raise NotImplementedError


def _at(trial: FrozenTrial, step: int) -> float | None:
    """The trial's value at `step`, else its latest before it, else None."""
    if step in trial.intermediate_values:
        return trial.intermediate_values[step]
    earlier = [s for s in trial.intermediate_values if s < step]
    return trial.intermediate_values[max(earlier)] if earlier else None


class BanditPolicy(_HyperDrivePolicy):
    """HyperDrive's BanditPolicy: stop a trial whose best primary metric so far falls outside the
    slack of the best trial's (each trial's best up to this step): with slack_factor, (maximize)
    value < best / (1 + slack_factor), (minimize) value > best * (1 + slack_factor); with
    slack_amount, value < best - slack_amount, (minimize) value > best + slack_amount. The best
    includes the trial itself. Its best, not its latest: one noisy epoch does not end a good trial."""

    def _stop(self, trial, others, step) -> bool:
        value = self._best(trial, step)
        assert value is not None  # prune() asks only when the trial's value at `step` is a number
        finite = [v for v in [value] + [self._best(t, step) for t in others] if v is not None]
        best = max(finite) if self.maximize else min(finite)
        factor, amount = self.policy.slack_factor, self.policy.slack_amount
        if factor is not None:
            return value < best / (1 + factor) if self.maximize else value > best * (1 + factor)
        assert amount is not None  # a BanditPolicy has slack_factor or slack_amount (sweep_config)
        return value < best - amount if self.maximize else value > best + amount

    def _best(self, trial: FrozenTrial, step: int) -> float | None:
        values = [v for s, v in trial.intermediate_values.items() if s <= step and not math.isnan(v)]
        return (max(values) if self.maximize else min(values)) if values else None


class MedianStoppingPolicy(_HyperDrivePolicy):
    """HyperDrive's MedianStoppingPolicy: stop a trial whose best primary metric so far is worse
    than the median of the running averages (the mean of the values reported up to this step) of
    the other trials."""

    def _stop(self, trial, others, step) -> bool:
        best = max(self.score(v) for s, v in trial.intermediate_values.items() if s <= step)
        averages = [statistics.fmean(self.score(v) for s, v in t.intermediate_values.items() if s <= step) for t in others]
        return best < statistics.median(averages)


class TruncationSelectionPolicy(_HyperDrivePolicy):
    """HyperDrive's TruncationSelectionPolicy: at each evaluation, stop a trial whose primary
    metric is strictly worse than the truncation_percentage-th percentile (counted from the worst)
    of every trial's value at that step, its own included, e.g. truncation_percentage 20 stops
    the lowest fifth (maximize)."""

    def _stop(self, trial, others, step) -> bool:
        own = self.score(trial.intermediate_values[step])
        at_step = [v for t in others if (v := _at(t, step)) is not None]  # prune() compares only such trials
        scores = [s for s in [own] + [self.score(v) for v in at_step] if math.isfinite(s)]
        percentage = self.policy.truncation_percentage
        assert percentage is not None  # a TruncationSelectionPolicy has one (sweep_config)
        return len(scores) >= 2 and own < float(np.percentile(scores, percentage))


def grid_point(config: SweepConfig, index: int) -> dict:
    """The grid's point number `index` (from 0), without listing the grid: parameters by name, the
    last one varying fastest (itertools.product's order), each through its choices as declared."""
    space = sorted(config.parameter_space, key=lambda e: e.name)
    point = {}
    for e in reversed(space):
        index, i = divmod(index, len(e.values))
        point[e.name] = e.values[i]
    return {e.name: point[e.name] for e in space}
