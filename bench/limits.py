"""Bounded requests and archives (issue 10, item 4) against a real daphne and a real Celery worker.

    .venv/bin/python bench/limits.py        # REPEAT=5

0. Issue 31's small inputs, in this process (the web app's own code; tracemalloc's peak): a sweep
   configuration whose `sampling:` is a YAML alias of 10^10 values, a component.yaml with the same in
   its label, a grid sweep of 27,000,000 points, a duration of 1e10 minutes: each refused in under
   a second (target) with its memory peak under 100 MB (target). `CASES=small` runs these only.
1. A 300 MB POST from a visitor who is not signed in, declared by its Content-Length: the time
   from its first byte to the 413 (target: under 1 s), how much of the body the client had sent by
   then, and what the server process wrote in all (files and sockets, /proc/<pid>/io): nothing of
   the body. The median and the worst of REPEAT tries.
2. The same without a declared length (chunked): refused as it streams.
3. A 1 MB zip that expands to 1 GB, stored as a dataset and converted by Convert to Image Directory
   on a real worker (one pool process): how much the pool process's peak memory (VmHWM) grew
   (target: under 200 MB), and the error the node ends with. A small archive is converted first, so
   that what a conversion imports is loaded before the baseline.
"""
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
REPEAT = int(os.environ.get("REPEAT", 5))
MB = 2**20


def main():
    data = Path(tempfile.mkdtemp(prefix="bench-limits-", dir=ROOT / "var"))
    (data / "static").mkdir()  # STATIC_ROOT: WhiteNoise warns when it is missing
    os.environ.update(DESIGNER_DATA_DIR=str(data), ARTIFACT_ROOT=str(data / "artifacts"), DEBUG="true",
                      DJANGO_SETTINGS_MODULE="designer.settings")
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL"):
        os.environ.pop(name, None)  # the embedded defaults, in this bench's own folder
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from tests.servers import Daphne
    from tests.workers import CeleryWorker

    small_inputs(data)
    if os.environ.get("CASES") == "small":
        return
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench")
    web = Daphne(dict(os.environ, TMPDIR=str(data)), name="daphne-bench-limits")
    worker = CeleryWorker("bench-limits", concurrency=1, log_dir=data)
    try:
        web.wait_ready()
        worker.wait_ready()
        anonymous_posts(web, data)
        bomb(worker, user, data)
    finally:
        web.stop()
        worker.stop()


def _measured(call) -> tuple[str, float, float]:
    import tracemalloc

    tracemalloc.start()
    started = time.perf_counter()
    try:
        call()
        answer = "accepted"
    except ValueError as e:  # SweepConfigInvalid, ComponentError
        answer = str(e).splitlines()[0].rsplit("component.yaml: ", 1)[-1][:140]
    seconds, (_, peak) = time.perf_counter() - started, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return answer, seconds, peak / MB


def small_inputs(data: Path):
    from designer.engine import sweep_config, sweep_text
    from sdk import component

    bomb = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10))
    base = ("parameter_space:\n  - {name: lr, expression: choice, values: [0.1, 0.01]}\nprimary_metric_name: score\n"
            "primary_metric_goal: maximize\nmax_total_runs: 2\n")
    grid = "sampling: grid\nparameter_space:\n" + "".join(
        f"  - {{name: p{k}, expression: choice, values: [{', '.join(str(i + 1) for i in range(300))}]}}\n" for k in range(3)) \
        + base.split("\n", 2)[2]
    folder = data / "bomb-component"
    folder.mkdir()
    (folder / "component.yaml").write_text(bomb + "kind: bomb\ncommand: python x.py\nlabel: *l9\n")
    cases = [("sweep config_yaml, sampling: an alias of 10^10 values", bomb + base + "sampling: *l9\n",
              lambda text: sweep_config.check(sweep_text.parse_text(text), None, None)),
             ("component.yaml, label: an alias of 10^10 values", (folder / "component.yaml").read_text(),
              lambda _: component.load(folder / "component.yaml")),
             ("grid sweep of 300 x 300 x 300 = 27,000,000 points", grid,
              lambda text: sweep_config.check(sweep_text.parse_text(text), None, None)),
             ("max_duration_minutes: 1e10", "sampling: random\n" + base + "max_duration_minutes: 1e10\n",
              lambda text: sweep_config.check(sweep_text.parse_text(text), None, None))]
    for what, text, call in cases:
        answer, seconds, peak = _measured(lambda call=call, text=text: call(text))
        print(f"{what} ({len(text.encode()) / 1024:.1f} KB): {seconds * 1000:.0f} ms (target < 1000 ms), memory peak "
              f"{peak:.1f} MB (target < 100 MB)\n  {answer}", flush=True)


def anonymous_posts(web, data: Path):
    from tests.rawhttp import exchange, head

    size = 300 * MB
    for chunked in (False, True):
        what = "no declared length (chunked)" if chunked else "Content-Length 300 MB"
        headers = {"Content-Type": "multipart/form-data; boundary=x"}
        headers.update({"Transfer-Encoding": "chunked"} if chunked else {"Content-Length": size})
        seconds, sent, statuses = [], [], set()
        written, files = _written(web.proc.pid), _files(data)
        for _ in range(REPEAT):
            status, _, _, body_sent, took = exchange(web.port, head("POST", "/api/datasets", headers), body_size=size,
                                                     chunked=chunked, timeout=60)
            statuses.add(status)
            seconds.append(took)
            sent.append(body_sent)
        grew = (_written(web.proc.pid) - written) / REPEAT
        new = sorted(_files(data) - files)
        print(f"anonymous 300 MB POST, {what}: answered {sorted(statuses)} in {1000 * statistics.median(seconds):.0f} ms "
              f"(median of {REPEAT}; worst {1000 * max(seconds):.0f} ms; target < 1000 ms: "
              f"{statistics.median(seconds):.3f}x of it); body sent by then {statistics.median(sent) / MB:.0f} MB; "
              f"the server wrote {grew / 1024:.1f} KB per request; files made: {new or 'none'}", flush=True)


def bomb(worker, user, data: Path):
    from tests.bombs import zip_bomb
    from tests.imagesets import digits_folder, make_archive

    pool = _pool_process(worker.proc.pid)
    small = make_archive(digits_folder(data / "digits", per_class=3), data / "digits.zip", "zip")
    status, error = _convert(user, small)
    assert status == "completed", error
    before = _peak_mb(pool)
    archive = zip_bomb(data / "bomb.zip")
    started = time.monotonic()
    status, error = _convert(user, archive)
    took = time.monotonic() - started
    after = _peak_mb(pool)
    assert _pool_process(worker.proc.pid) == pool, "the pool process was replaced: its figure would be another's"
    print(f"zip bomb ({archive.stat().st_size / MB:.2f} MB expanding to 1024 MB) on a worker: {status} in {took:.1f} s "
          f"(submit to end); pool process peak memory {before:.0f} -> {after:.0f} MB, grew by {after - before:.0f} MB "
          f"(target < 200 MB: {(after - before) / 200:.2f}x of it)\n  {error}", flush=True)


def _convert(user, archive: Path) -> tuple[str, str]:
    from django.core.management import call_command

    from designer.pipelines import runs
    from designer.pipelines.models import Run
    from tests.pipes import link, node, pipeline

    out = io.StringIO()
    call_command("add_dataset", str(archive), owner=user.username, stdout=out)
    doc = pipeline([node("dataset", "dataset", dataset=int(out.getvalue())), node("convert", "convert_to_image_directory")],
                   [link("dataset", "convert", "dataset", "input_dataset")], name=archive.name)
    run = runs.submit(user, doc)
    deadline = time.monotonic() + 600
    while not (run := Run.objects.get(pk=run.pk)).finished:
        assert time.monotonic() < deadline, f"run {run.pk} still {run.status}"
        time.sleep(0.2)
    convert = run.nodes.get(node_id="convert")
    return convert.status, convert.error


def _pool_process(pid: int) -> int:
    """The worker's one pool process (prefork, concurrency 1)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def _peak_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024


def _files(folder: Path) -> set[str]:
    return {str(p) for p in folder.rglob("*") if p.is_file() and not p.name.endswith(("-journal", "-wal", "-shm", ".log"))}


def _written(pid: int) -> int:
    with open(f"/proc/{pid}/io") as f:
        return int(dict(line.split(": ") for line in f.read().splitlines())["wchar"])


if __name__ == "__main__":
    main()
