"""Every status name, in one place: nodes, runs and the processes of a distributed node.

Models take their choices from here, the scheduler its decisions, the CLI its exit code and the
page its colours and "is it over" tests (sent in the page's boot data as `statuses`).
"""
from __future__ import annotations

# ---- a node of a run
PENDING = "pending"  # waiting for its inputs
QUEUED = "queued"  # handed to the workers
RUNNING = "running"
COMPLETED = "completed"
REUSED = "reused"  # an earlier run's output of the same inputs and parameters
FAILED = "failed"
CANCELLED = "cancelled"
NOT_RUN = "not_run"  # an input failed or was cancelled

NODE_STATUSES = (PENDING, QUEUED, RUNNING, COMPLETED, FAILED, REUSED, CANCELLED, NOT_RUN)
SUCCEEDED = frozenset({COMPLETED, REUSED})
TERMINAL = frozenset({COMPLETED, REUSED, FAILED, CANCELLED, NOT_RUN})
BLOCKING = frozenset({FAILED, CANCELLED, NOT_RUN})
ACTIVE = frozenset({PENDING, QUEUED, RUNNING})

# ---- a run
RUN_STATUSES = (QUEUED, RUNNING, COMPLETED, FAILED, CANCELLED)
RUN_FINISHED = frozenset({COMPLETED, FAILED, CANCELLED})

# ---- a sweep, and one trial of it (a run of the pipeline with sampled values)
EARLY_TERMINATED = "early_terminated"  # its policy stopped it mid-training; it kept its best epoch
SWEEP_STATUSES = (QUEUED, RUNNING, COMPLETED, FAILED, CANCELLED)
SWEEP_FINISHED = RUN_FINISHED
TRIAL_STATUSES = (QUEUED, RUNNING, COMPLETED, EARLY_TERMINATED, FAILED, CANCELLED)
TRIAL_FINISHED = frozenset({COMPLETED, EARLY_TERMINATED, FAILED, CANCELLED})



def shown_run_status(run_status: str, trial_status: str | None = None) -> str:
    """A run's status as every page writes it: the run of a sweep's trial that its policy stopped
    early is "early_terminated" (its run completed, keeping its best epoch), as on the sweep page."""
    return EARLY_TERMINATED if run_status == COMPLETED and trial_status == EARLY_TERMINATED else run_status


# ---- one worker's share of a distributed node (NodeLaunch)
RESERVED = "reserved"
EXITED = "exited"
LAUNCH_STATUSES = (RESERVED, RUNNING, EXITED)

# ---- the executor's events that change a node's status, as the page applies them live
EVENT_STATUS = {"node_queued": QUEUED, "node_started": RUNNING, "node_finished": COMPLETED, "node_failed": FAILED,
                "node_cancelled": CANCELLED, "node_reused": REUSED}


def choices(names) -> list[tuple[str, str]]:
    return [(x, x) for x in names]


def for_page() -> dict:
    """What the page script needs to know about statuses (boot data)."""
    return {"node": list(NODE_STATUSES), "run": list(RUN_STATUSES), "terminal": sorted(TERMINAL), "succeeded": sorted(SUCCEEDED),
            "run_finished": sorted(RUN_FINISHED), "active": sorted(ACTIVE), "event_status": EVENT_STATUS,
            "trial": list(TRIAL_STATUSES), "trial_finished": sorted(TRIAL_FINISHED)}

# ---- a registered model version: its copy is made at once; its packaging (the torch.export
# program and the ONNX graph an endpoint serves) runs on a worker
PREPARING = "preparing"
READY = "ready"
VERSION_STATUSES = (PREPARING, READY, FAILED)

# ---- a real-time endpoint, as its page and API show it (derived, never stored)
WAITING = "waiting"  # for its version's packaging, or for a serving process to load it
HEALTHY = "healthy"
UNAVAILABLE = "unavailable"  # no serving process has been seen lately
ENDPOINT_STATUSES = (WAITING, HEALTHY, UNAVAILABLE, FAILED)
