"""`python -m designer.serving [--host H] [--port P] [--replicas N]` (designer/serving/__init__.py)."""
import argparse
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")

import uvicorn
from django.conf import settings  # settings only: each replica sets Django up itself (app.py)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m designer.serving", description="Real-time scoring endpoints (ONNX Runtime).")
    parser.add_argument("--host", default=settings.SERVING_HOST, help=f"address to listen on (SERVING_HOST, now {settings.SERVING_HOST})")
    parser.add_argument("--port", type=int, default=settings.SERVING_PORT, help=f"port (SERVING_PORT, now {settings.SERVING_PORT})")
    parser.add_argument("--replicas", type=int, default=settings.SERVING_REPLICAS,
                        help="processes accepting on the same port (SERVING_REPLICAS, now %(default)s)")
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error("--replicas must be at least 1")
    # the replicas are new processes: they read the count from the environment (settings.py)
    os.environ["SERVING_REPLICAS"] = str(args.replicas)
    print(f"Scoring endpoints: http://{args.host}:{args.port}/api/endpoints/<name>/score "
          f"({args.replicas} replica{'s' if args.replicas > 1 else ''})", flush=True)
    # the protocol by its import path: each replica imports it after its settings are read
    uvicorn.run("designer.serving.app:app", host=args.host, port=args.port, workers=args.replicas,
                http="designer.serving.protocol:BoundedHttpToolsProtocol", loop="uvloop", access_log=False,
                log_level="warning", timeout_graceful_shutdown=10, timeout_keep_alive=settings.SERVING_KEEP_ALIVE_SECONDS)


if __name__ == "__main__":
    main()
