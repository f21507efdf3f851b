"""The real-time scoring process: `python -m designer.serving [--host H] [--port P] [--replicas N]`.

It answers POST /api/endpoints/<name>/score (app.py) with ONNX Runtime, never torch: each
endpoint's registered version is loaded from its folder (model.onnx + preprocessing.json) into a
Deployment (deployments.py) that batches the requests arriving together; an endpoint deployed
with an entry script (the original's init() / run(raw_data)) is answered by that script in a
process of its own (scripts.py, script_host.py). A thread reads the
Endpoint rows every SERVING_POLL_SECONDS (config.py): a new endpoint, a version switch (loaded
beside the old one, then swapped in: no request fails), a regenerated key. Another writes the
process's heartbeat, counts, latency histogram and recent errors (stats.py) for the web app's
endpoint pages. Each process is a replica named machine:pid (the X-Served-By header).

Several replicas behind one address:
  - on one machine, `--replicas N` (or SERVING_REPLICAS): N processes accept on the same socket
    (uvicorn's workers), each with its own model copies and SERVING_THREADS (default: the cores
    shared among them);
  - on several machines, run the same command on each (same DATABASE_URL and ARTIFACT_STORE as the
    web app and workers: a bucket, or a folder they all mount) behind any HTTP load balancer, and set
    SERVING_URL to the balancer's address for the web app (its endpoint pages and redirects).
    Replicas share nothing but the database: any of them may answer any request; health check
    GET /healthz.
"""
