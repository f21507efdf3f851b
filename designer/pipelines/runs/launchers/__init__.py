"""How work is started, watched and stopped: one boundary (base.Launcher: launch, check health,
terminate), three implementations.

    inline.py       a node run in this process (run_pipeline --inline)
    celery.py       a node sent to the Celery workers (through the outbox)
    distributed.py  the processes of a distributed node, across workers (node 0's side;
                    member.py is the other nodes' side)

The run logic (runs.py, execute.py) calls the verbs and never knows which launcher it has.
"""
