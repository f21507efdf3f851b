"""Process supervision: the processes a node starts, watched and ended. Torch-free, Django-free.

    supervision/command.py   a component's command: a clean environment, its metrics relayed, its
                             timeout, its stop request and grace, every process it started ended
    supervision/launch.py    one node of a distributed job: torchrun (or a per-node command) as a
                             child process, its log, a clean stop; what its ranks left behind
    supervision/rank.py      one process of a distributed job (`python -m supervision.rank MODULE`):
                             its own driver log, its failure recorded, a watcher for a kill
    supervision/reaper.py    a child subreaper: what a command detached ends with it
    supervision/stopping.py  a stop request and its grace period (a sweep's early termination)

The launchers (designer/pipelines/runs/launchers/) and modules/_component.py use it in the Celery
worker; torchrun runs supervision.rank in each rank's process. It imports only the SDK, so none
of these processes loads torch or Django for it: training/ is the torch side alone.
"""
