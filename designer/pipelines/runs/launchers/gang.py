"""One distributed job as node 0 sees it: the node run, Node count x Process count per node, the
worker that is node 0, and where the job's logs and rank state files are.

Logs (the node's `logs/` folder, names from sdk.layout): MPI_LOG for the launchers (what node 0
decided, and every torchrun's own output) and driver_log(rank) per process (supervision.rank).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from designer.pipelines.models import NodeLaunch, NodeRun, Worker
from designer.pipelines.runs import artifacts
from sdk import layout
from supervision import launch


@dataclass
class Gang:
    nr: NodeRun
    me: Worker  # node 0: this worker (its row, or an unsaved one describing this process)
    label: str  # the module's label, as every error names it
    n: int  # Node count
    p: int  # Process count per node
    logs: Path

    @classmethod
    def of(cls, nr: NodeRun, me: Worker, ctx) -> Gang:
        return cls(nr, me, ctx.module.label, ctx.run_settings["node_count"],
                   ctx.run_settings["process_count_per_node"], ctx.logs_dir())

    @property
    def mpi_log(self) -> Path:
        return self.logs / layout.MPI_LOG

    @property
    def state_dir(self) -> Path:
        return artifacts.ranks_dir(artifacts.node_dir(self.nr.run_id, self.nr.node_id))

    @property
    def rendezvous_id(self) -> str:
        return f"designer-{self.nr.pk}"

    def say(self, text: str) -> None:
        launch.append_log(self.mpi_log, f"launcher: {text}")

    def members(self, **filters) -> list[NodeLaunch]:
        """The job's nodes other than node 0 (their rows, fresh)."""
        return list(NodeLaunch.objects.filter(noderun=self.nr, index__gt=0, **filters).select_related("worker"))
