"""Bounded requests, archives and processes (issues 10 and 31) against a real daphne, a real Celery
worker and a real serving process, each figure with its target.

    .venv/bin/python bench/limits.py        # REPEAT=5 CASES=all (or some of: small,anonymous,admin,downloads,zip,components,scoring)

0. `small`, issue 31's small inputs in this process (the web app's own code; tracemalloc's peak): a
   sweep configuration whose `sampling:` is a YAML alias of 10^10 values, a component.yaml with the
   same in its label, a grid sweep of 27,000,000 points, a duration of 1e10 minutes, a key given
   twice, a Learning rate of 1e308 in a run's pipeline: each refused in under a second (target)
   with its memory peak under 100 MB (target). With CASES=small nothing else is started.
1. `anonymous`: a 300 MB POST from a visitor who is not signed in, declared by its Content-Length,
   then without a declared length (chunked): the time from its first byte to the 413 (target: under
   1 s), how much of the body the client had sent by then, and what the server process wrote in all
   (files and sockets, /proc/<pid>/io): nothing of the body. The median and the worst of REPEAT tries.
2. `admin`: the same from a signed-in user who is not staff, to an /admin/ URL (the admin's dataset
   upload): refused as an anonymous body is (target: under 1 s, nothing written).
3. `downloads`: 8 simultaneous downloads of a 16 MB model version (a .tar.gz) through daphne, then of
   a 128 MB one: the time, and how much the web process's peak memory grew (target: under 100 MB
   whatever the model's size; the first burst also pays for what 8 threads at once allocate once).
4. `zip`: a 1 MB zip that expands to 1 GB, stored as a dataset and converted by Convert to Image
   Directory on a real worker (one pool process): how much the pool process's peak memory (VmHWM)
   grew (target: under 200 MB), and the error the node ends with. A small archive is converted
   first, so that what a conversion imports is loaded before the baseline.
5. `components`: on the same worker (given SECRET_KEY, DATABASE_URL, CELERY_BROKER_URL and
   CHANNEL_LAYER_URL), an uploaded component whose command records its environment and detaches
   two `sleep 600` (setsid: one keeps its environment, one empties it with `env -i`), then exits:
   which of the worker's secrets and service URLs the command saw (target: none), and whether each
   detached process was ended with its node (target: ended, the time from the command's exit).
6. `scoring`, bench/limits_serving.py on a real serving process with the documented limits: two
   clients sending back to back for 5 s a small request (the control), 64 PNGs of 6000 x 6000 (4.5 KB
   each; target: a 413 naming the limit and its setting in under 1 s), 12 PNGs of 2000 x 2000
   (under the pixel budget: decoded); then 1,000 + 100 slow clients dripping their headers or their
   body a byte at a time (target: cut off at SERVING_HEADER_SECONDS / SERVING_BODY_SECONDS).
   Meanwhile another client's small requests (target: a median within 3x its idle one) and the
   serving process's peak memory (target: growing by under 100 MB).
"""
import io
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.limits_serving import memory_mb, reset_peak, scoring  # noqa: E402 - after the path

REPEAT = int(os.environ.get("REPEAT", 5))
GROUPS = ("small", "anonymous", "admin", "downloads", "zip", "components", "scoring")
CASES = set(os.environ.get("CASES", "all").split(","))
MB = 2**20
ADMIN_UPLOAD = "/admin/pipelines/dataset/add/"


def wanted(*groups: str) -> bool:
    return "all" in CASES or bool(CASES & set(groups))


def main():
    if CASES - {"all", *GROUPS}:
        sys.exit(f"CASES: {', '.join(sorted(CASES - {'all', *GROUPS}))} unknown; groups: {', '.join(GROUPS)}")
    (ROOT / "var").mkdir(exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="bench-limits-", dir=ROOT / "var"))
    (data / "static").mkdir()  # STATIC_ROOT: WhiteNoise warns when it is missing
    # one key for this process and the servers it starts (the sessions it makes must be theirs)
    os.environ.update(DESIGNER_DATA_DIR=str(data), ARTIFACT_ROOT=str(data / "artifacts"), DEBUG="true",
                      DJANGO_SETTINGS_MODULE="designer.settings", SECRET_KEY="bench-limits-" + os.urandom(24).hex())
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL"):
        os.environ.pop(name, None)  # the embedded defaults, in this bench's own folder
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from tests.servers import Daphne
    from tests.workers import CeleryWorker

    if wanted("small"):
        small_inputs(data)
    if not wanted(*GROUPS[1:]):
        return
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench")
    web = Daphne(dict(os.environ, TMPDIR=str(data)), name="daphne-bench-limits") \
        if wanted("anonymous", "admin", "downloads") else None
    # the worker has what a production worker has, which a command must not see (a Redis at that
    # URL or not: nothing here listens to the worker's nudges)
    worker = CeleryWorker("bench-limits", concurrency=1, log_dir=data, extra_env={
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "CHANNEL_LAYER_URL": "redis://127.0.0.1:6379/13"}
    ) if wanted("zip", "components") else None
    try:
        for process in (web, worker):
            if process:
                process.wait_ready()
        if wanted("anonymous"):
            posts(web, data, "anonymous", "/api/datasets")
        if wanted("admin"):
            posts(web, data, "signed-in non-staff", ADMIN_UPLOAD, {"Cookie": f"sessionid={_session(user)}"})
        if wanted("downloads"):
            downloads(web, user, data)
        if wanted("zip"):
            bomb(worker, user, data)
        if wanted("components"):
            components(worker, user, data)
    finally:
        for process in (web, worker):
            if process:
                process.stop()
    if wanted("scoring"):
        scoring(user, data)


def _measured(call) -> tuple[str, float, float]:
    import tracemalloc

    tracemalloc.start()
    started = time.perf_counter()
    try:
        call()
        answer = "accepted"
    except ValueError as e:  # SweepConfigInvalid, ComponentError, PipelineInvalid
        answer = str(e).splitlines()[0].rsplit("component.yaml: ", 1)[-1][:140]
    seconds, (_, peak) = time.perf_counter() - started, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return answer, seconds, peak / MB


def small_inputs(data: Path):
    from designer.engine import graph, sweep_config, sweep_text
    from designer.pipelines.catalogue.service import get_catalogue
    from sdk import component
    from tests.pipes import node, pipeline

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
    learning = json.dumps(pipeline([node("train", "train_pytorch_model", learning_rate=1e308)], []))

    def sweep(text):
        sweep_config.check(sweep_text.parse_text(text), None, None)

    def run(text):  # what submitting a run checks (runs.submit), on the installation's catalogue
        graph.check(graph.upgrade(json.loads(text)), get_catalogue(), None, None)

    cases = [("sweep config_yaml, sampling: an alias of 10^10 values", bomb + base + "sampling: *l9\n", sweep),
             ("component.yaml, label: an alias of 10^10 values", (folder / "component.yaml").read_text(),
              lambda _: component.load(folder / "component.yaml")),
             ("grid sweep of 300 x 300 x 300 = 27,000,000 points", grid, sweep),
             ("max_duration_minutes: 1e10", "sampling: random\n" + base + "max_duration_minutes: 1e10\n", sweep),
             ("sweep config_yaml, max_total_runs given twice", "sampling: random\n" + base + "max_total_runs: 5\n", sweep),
             ("a run's pipeline, Train PyTorch Model's Learning rate 1e308", learning, run)]
    for what, text, call in cases:
        answer, seconds, peak = _measured(lambda call=call, text=text: call(text))
        print(f"{what} ({len(text.encode()) / 1024:.1f} KB): {seconds * 1000:.0f} ms (target < 1000 ms), memory peak "
              f"{peak:.1f} MB (target < 100 MB)\n  {answer}", flush=True)


def posts(web, data: Path, who: str, path: str, extra: dict | None = None):
    """A 300 MB POST to `path`, declared then chunked, REPEAT times each."""
    from tests.rawhttp import exchange, head

    size = 300 * MB
    for chunked in (False, True):
        what = "no declared length (chunked)" if chunked else "Content-Length 300 MB"
        headers = {**(extra or {}), "Content-Type": "multipart/form-data; boundary=x"}
        headers.update({"Transfer-Encoding": "chunked"} if chunked else {"Content-Length": size})
        seconds, sent, statuses = [], [], set()
        written, files = _written(web.proc.pid), _files(data)
        for _ in range(REPEAT):
            status, _, body, body_sent, took = exchange(web.port, head("POST", path, headers), body_size=size,
                                                        chunked=chunked, timeout=60)
            statuses.add(status)
            seconds.append(took)
            sent.append(body_sent)
        grew = (_written(web.proc.pid) - written) / REPEAT
        new = sorted(_files(data) - files)
        print(f"{who} 300 MB POST to {path}, {what}: answered {sorted(statuses)} in {1000 * statistics.median(seconds):.0f} ms "
              f"(median of {REPEAT}; worst {1000 * max(seconds):.0f} ms; target < 1000 ms: "
              f"{statistics.median(seconds):.3f}x of it); body sent by then {statistics.median(sent) / MB:.0f} MB; "
              f"the server wrote {grew / 1024:.1f} KB per request; files made: {new or 'none'}\n"
              f"  {body.decode(errors='replace').strip()[:200]}", flush=True)


def downloads(web, user, data: Path, count: int = 8):
    from django.conf import settings

    from designer.engine import statuses
    from designer.pipelines.models import ModelVersion, RegisteredModel
    from tests.registry.test_downloads import download

    session = _session(user)
    for size in (16 * MB, 128 * MB):
        name = f"big-{size // MB}"
        registered = RegisteredModel.objects.create(owner=user, name=name)
        folder = Path(settings.ARTIFACT_ROOT) / f"models/{user.id}/{registered.id}/1"
        folder.mkdir(parents=True)
        (folder / "model.pt").write_bytes(os.urandom(size))  # weights hardly compress
        (folder / "model.yaml").write_text("classes: [a, b]\n")
        ModelVersion.objects.create(model=registered, version=1, folder=folder.relative_to(settings.ARTIFACT_ROOT).as_posix(),
                                    status=statuses.READY)
        path = f"/api/models/{name}/versions/1/download"
        first: list = []
        download(web.port, path, session, first)  # what a download imports is loaded before the baseline
        before = reset_peak(web.proc.pid)
        out: list = []
        threads = [threading.Thread(target=download, args=(web.port, path, session, out)) for _ in range(count)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        took = time.monotonic() - started
        grew = memory_mb(web.proc.pid, "VmHWM") - before
        good = sum(o == first[0] and o[0] == 200 for o in out)
        print(f"{count} simultaneous downloads of a {size / MB:.0f} MB model version ({first[0][2] / MB:.0f} MB .tar.gz each) "
              f"through daphne: {good} of {count} whole and 200 in {took:.1f} s; web process VmRSS {before:.0f} MB before, "
              f"its peak grew by {grew:.0f} MB (target < 100 MB whatever the size: {grew / 100:.2f}x of it)", flush=True)
        (folder / "model.pt").unlink()


def bomb(worker, user, data: Path):
    from tests.bombs import zip_bomb
    from tests.imagesets import digits_folder, make_archive

    pool = _pool_process(worker.proc.pid)
    small = make_archive(digits_folder(data / "digits", per_class=3), data / "digits.zip", "zip")
    status, error = _convert(user, small)
    assert status == "completed", error
    before = memory_mb(pool, "VmHWM")
    archive = zip_bomb(data / "bomb.zip")
    started = time.monotonic()
    status, error = _convert(user, archive)
    took = time.monotonic() - started
    after = memory_mb(pool, "VmHWM")
    assert _pool_process(worker.proc.pid) == pool, "the pool process was replaced: its figure would be another's"
    print(f"zip bomb ({archive.stat().st_size / MB:.2f} MB expanding to 1024 MB) on a worker: {status} in {took:.1f} s "
          f"(submit to end); pool process peak memory {before:.0f} -> {after:.0f} MB, grew by {after - before:.0f} MB "
          f"(target < 200 MB: {(after - before) / 200:.2f}x of it)\n  {error}", flush=True)


def _convert(user, archive: Path) -> tuple[str, str]:
    from django.core.management import call_command

    from designer.pipelines.runs import service as runs
    from tests.pipes import link, node, pipeline

    out = io.StringIO()
    call_command("add_dataset", str(archive), owner=user.username, stdout=out)
    doc = pipeline([node("dataset", "dataset", dataset=int(out.getvalue())), node("convert", "convert_to_image_directory")],
                   [link("dataset", "convert", "dataset", "input_dataset")], name=archive.name)
    convert = _finished(runs.submit(user, doc)).nodes.get(node_id="convert")
    return convert.status, convert.error


def _finished(run, timeout: float = 600):
    from designer.pipelines.models import Run

    deadline = time.monotonic() + timeout
    while not (run := Run.objects.get(pk=run.pk)).finished:
        assert time.monotonic() < deadline, f"run {run.pk} still {run.status}"
        time.sleep(0.2)
    return run


COMPONENT = """\
kind: leaky_script
label: Leaky script
category: Bench components
version: 1
command: python leaky.py {params.folder} {outputs.out}
outputs:
  out: {type: AnyDirectory, label: Out}
params:
  folder: {type: string, default: ""}
"""
# prints its environment, writes the names and its pid and those of two detached `sleep 600`, then exits
SCRIPT = """\
import json, os, pathlib, subprocess, sys
print(json.dumps(dict(os.environ)), flush=True)
kept = subprocess.Popen(["sleep", "600"], start_new_session=True)
emptied = subprocess.Popen(["env", "-i", "sleep", "600"], start_new_session=True)
pathlib.Path(sys.argv[1], "seen.tmp").write_text(json.dumps(
    {"environment": sorted(os.environ), "command": os.getpid(), "kept": kept.pid, "emptied": emptied.pid}))
os.rename(pathlib.Path(sys.argv[1], "seen.tmp"), pathlib.Path(sys.argv[1], "seen.json"))
pathlib.Path(sys.argv[2], "done.txt").write_text("done")
"""
SECRETS = ("SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL")


def components(worker, user, data: Path, watch: float = 10.0):
    """The component runs once; its detached processes are watched until `watch` seconds after
    its node's recorded end."""
    from designer.pipelines.runs import service as runs
    from tests.conftest import may_add_components, stored_component
    from tests.pipes import node, pipeline

    may_add_components(user)
    stored_component(user, "leaky_script", "Leaky script", {"component.yaml": COMPONENT, "leaky.py": SCRIPT})
    environ = Path(f"/proc/{worker.proc.pid}/environ").read_bytes().decode(errors="replace").split("\0")
    had = [name for name in SECRETS if any(v.startswith(name + "=") for v in environ)]
    (data / "leaky").mkdir()
    watcher = _Watcher(data / "leaky" / "seen.json")
    started = time.monotonic()
    nr = _finished(runs.submit(user, pipeline([node("leaky", "leaky_script", folder=str(data / "leaky"))], []))).nodes.get()
    took = time.monotonic() - started
    node_end = nr.finished_at.timestamp()
    seen, ended = watcher.until(node_end + watch)
    leaked = sorted(set(SECRETS) & set(seen["environment"]))
    print(f"a component's command (uploaded: Leaky script) on a worker: node {nr.status} in {took:.1f} s (submit to end); "
          f"the worker had {', '.join(had) or 'none of ' + ', '.join(SECRETS)}; the command saw of them: "
          f"{', '.join(leaked) or 'none'} (target: none); its {len(seen['environment'])} variables: "
          f"{', '.join(seen['environment'])}", flush=True)
    for name, how in (("kept", "keeping its environment"), ("emptied", "its environment emptied (env -i)")):
        if name in ended:
            print(f"  `sleep 600` detached (setsid), {how}: ended {(ended[name] - ended['command']) * 1000:.0f} ms after the "
                  f"command exited ({(ended[name] - node_end) * 1000:+.0f} ms from the node's recorded end) (target: ended "
                  f"with its node)", flush=True)
        else:
            print(f"  `sleep 600` detached (setsid), {how}: STILL RUNNING {watch:g} s after its node ended (target: ended "
                  f"with its node): TARGET MISSED", flush=True)
            os.kill(seen[name], signal.SIGKILL)  # this bench's own leftover, by its pid


class _Watcher(threading.Thread):
    """Once the command has written its pids (`path`), when each of its processes is seen ended
    (time.time(), looked at every 5 ms)."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.seen, self.ended = path, None, {}
        self.stopping = threading.Event()
        self.start()

    def run(self):
        from tests.supervision.test_command import alive

        while not self.stopping.is_set() and len(self.ended) < 3:
            if self.seen is None and self.path.exists():
                self.seen = json.loads(self.path.read_text())
            for name in ("command", "kept", "emptied") if self.seen else ():
                if name not in self.ended and not alive(self.seen[name]):
                    self.ended[name] = time.time()
            time.sleep(0.005)

    def until(self, when: float) -> tuple[dict, dict]:
        self.join(max(0.0, when - time.time()))
        self.stopping.set()
        self.join()
        assert self.seen is not None, f"the command wrote no {self.path.name}"
        return self.seen, dict(self.ended)


def _session(user) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def _pool_process(pid: int) -> int:
    """The worker's one pool process (prefork, concurrency 1)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def _files(folder: Path) -> set[str]:
    return {str(p) for p in folder.rglob("*") if p.is_file() and not p.name.endswith(("-journal", "-wal", "-shm", ".log"))}


def _written(pid: int) -> int:
    with open(f"/proc/{pid}/io") as f:
        return int(dict(line.split(": ") for line in f.read().splitlines())["wchar"])


if __name__ == "__main__":
    main()
