"""bench/limits.py's scoring rows (issue 31, case 3) on a real serving process (`python -m
designer.serving`, started by the tests' own helper with the settings' defaults), and the process
figures the two files share: a process's memory (VmRSS) and the growth of its peak (VmHWM, reset
through /proc/<pid>/clear_refs before each case so that a peak of the model's loading does not count).

Each case runs while "another client" sends small requests (one PNG of 40 x 30) back to back;
its median latency is judged against its idle one, measured just before (20 in a row).
"""
import io
import socket
import statistics
import threading
import time
from pathlib import Path

MB = 2**20
ATTACK_SECONDS = 5.0  # how long the expensive requests are sent back to back
LATENCY_TARGET = 3.0  # another client's median latency within 3x its idle one
DRIP_SECONDS = 0.5  # a slow client sends a byte every DRIP_SECONDS
HEADER_DRIPPERS, BODY_DRIPPERS = 1000, 100


def scoring(user, data: Path):
    import torch
    from django.conf import settings

    from tests.serving.helpers import Model, Serving, deploy, multipart, png, register, score_url

    torch.set_num_threads(1)  # the model's export, here: the machine's cores are the serving process's
    endpoint = deploy(register(user, Model(data / "model", seed=0), "bench-limits"), "bench-limits")
    server = Serving(data)  # the documented limits: settings.py's defaults, unless the environment says otherwise
    try:
        server.wait_up()
        server.wait_serving(endpoint)
        url, key = score_url(server, endpoint), endpoint.primary_key
        # the control: the same two clients sending the other client's own small request
        expensive(server, url, key, "control: 1 PNG of 40 x 30", (png(seed=3), "image/png"), 200, None)
        expensive(server, url, key, "64 PNGs of 6000 x 6000 (2.3 gigapixels)",
                  multipart([("image", f"big{i}.png", tiny_png(6000)) for i in range(64)]), 413, 1.0)
        expensive(server, url, key, "12 PNGs of 2000 x 2000 (48 megapixels, under SERVING_MAX_REQUEST_PIXELS: decoded)",
                  multipart([("image", f"big{i}.png", tiny_png(2000)) for i in range(12)]), 200, None)
        slow_clients(server, endpoint, settings.SERVING_HEADER_SECONDS, settings.SERVING_BODY_SECONDS)
    finally:
        server.stop()


def expensive(server, url: str, key: str, what: str, request: tuple[bytes, str], expected: int, seconds_target: float | None):
    """Two clients (processes of their own, as other machines would be) send `request` (body,
    content type) back to back for ATTACK_SECONDS; each answer should be `expected` (413: naming
    the limit and its setting), within `seconds_target` where one is given."""
    import multiprocessing

    body, ctype = request
    count = body.count(b"filename=") or 1
    probe = _Prober(url, key)
    idle = probe.idle()
    before = reset_peak(server.proc.pid)
    probe.start()
    context = multiprocessing.get_context("fork")
    pipes = [context.Pipe(duplex=False) for _ in range(2)]
    attackers = [context.Process(target=_attack, args=(url, body, ctype, key, sending)) for _, sending in pipes]
    for a in attackers:
        a.start()
    answers = [answer for receiving, _ in pipes for answer in receiving.recv()]
    for a in attackers:
        a.join()
    latencies = probe.stop()
    grew = memory_mb(server.proc.pid, "VmHWM") - before
    times = [seconds for seconds, _, _ in answers]
    median = statistics.median(times)
    statuses = sorted({status for _, status, _ in answers})
    judged = f"; target {expected} in < {seconds_target * 1000:.0f} ms: {median / seconds_target:.3f}x of it" if seconds_target \
        else f"; target {expected}"
    print(f"{what}, {len(body) / 1024:.1f} KB body ({len(body) / count / 1024:.1f} KB per PNG), 2 clients back to back for "
          f"{ATTACK_SECONDS:g} s: {len(answers)} answered {statuses} in {median * 1000:.0f} ms (median; worst "
          f"{max(times) * 1000:.0f} ms{judged})" + _missed(statuses == [expected] and median < (seconds_target or float("inf")))
          + f"\n  {answers[0][2] or 'no error'}", flush=True)
    _judge_latency(latencies, idle)
    _judge_memory("serving process", before, grew)


def _attack(url: str, body: bytes, ctype: str, key: str, results):
    """In a process of its own: the request again and again for ATTACK_SECONDS; (seconds, status,
    error) of each answer sent back through `results`."""
    from tests.serving.helpers import request

    answers = []
    deadline = time.monotonic() + ATTACK_SECONDS
    while time.monotonic() < deadline:
        started = time.perf_counter()
        status, document, _ = request(url, body, ctype, key=key)
        answers.append((time.perf_counter() - started, status, (document or {}).get("error", "")))
    results.send(answers)


def slow_clients(server, endpoint, header_seconds: float, body_seconds: float):
    """HEADER_DRIPPERS connections drip their headers, BODY_DRIPPERS their body (after whole
    headers), a byte every DRIP_SECONDS, all at once: when is each cut off?"""
    port, name, key = server.port, endpoint.name, endpoint.primary_key
    start = f"POST /api/endpoints/{name}/score HTTP/1.1\r\nHost: x\r\n".encode()
    whole = start + f"Authorization: Bearer {key}\r\nContent-Type: image/png\r\nContent-Length: 1000\r\n\r\n".encode()
    probe = _Prober(f"http://127.0.0.1:{port}/api/endpoints/{name}/score", key)
    idle = probe.idle()
    before = reset_peak(server.proc.pid)
    probe.start()
    headers = [_Dripper(port, start) for _ in range(HEADER_DRIPPERS)]
    bodies = [_Dripper(port, whole) for _ in range(BODY_DRIPPERS)]
    deadline = time.monotonic() + max(header_seconds, body_seconds) + 30
    while time.monotonic() < deadline and any(d.ended is None for d in headers + bodies):
        for d in headers + bodies:
            d.drip()
        time.sleep(DRIP_SECONDS)
    latencies = probe.stop()
    grew = memory_mb(server.proc.pid, "VmHWM") - before
    for what, drippers, limit, setting in (("headers", headers, header_seconds, "SERVING_HEADER_SECONDS"),
                                           ("body", bodies, body_seconds, "SERVING_BODY_SECONDS")):
        ended = [d.ended for d in drippers if d.ended is not None]
        answers = sorted({d.answer for d in drippers if d.ended is not None})
        worst = max(ended) if ended else float("nan")
        print(f"{len(drippers)} clients dripping their {what} a byte every {DRIP_SECONDS:g} s: {len(ended)} cut off, after "
              f"{statistics.median(ended) if ended else float('nan'):.1f} s (median; worst {worst:.1f} s; target: {setting} = "
              f"{limit:g} s, {worst / limit:.2f}x of it); still open: {len(drippers) - len(ended)}; answers: {answers}"
              + _missed(len(ended) == len(drippers) and worst < limit + 2), flush=True)
        for d in drippers:
            d.close()
    _judge_latency(latencies, idle)
    _judge_memory("serving process", before, grew)


def tiny_png(side: int) -> bytes:
    """A PNG of one colour (1 bit a pixel): a few KB that declare side x side pixels."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("1", (side, side), 0).save(out, "PNG", optimize=True)
    return out.getvalue()


class _Prober:
    """Another client: small requests (one PNG of 40 x 30), one after the other, on a thread."""

    def __init__(self, url: str, key: str):
        from tests.serving.helpers import png

        self.url, self.key, self.image = url, key, png(seed=3)
        self.latencies: list[float] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def once(self) -> float:
        from tests.serving.helpers import request

        started = time.perf_counter()
        status, document, _ = request(self.url, self.image, "image/png", key=self.key)
        assert status == 200, (status, document)
        return time.perf_counter() - started

    def idle(self) -> float:
        for _ in range(5):  # warm-up
            self.once()
        return statistics.median(self.once() for _ in range(20))

    def _run(self):
        while not self.stopping.is_set():
            self.latencies.append(self.once())

    def start(self):
        self.thread.start()
        return self

    def stop(self) -> list[float]:
        self.stopping.set()
        self.thread.join(120)
        return self.latencies


class _Dripper:
    """A connection that sent `first` and sends a byte more at each drip(); `ended`: seconds from
    its first byte until the server answered or closed it, `answer` its status line."""

    def __init__(self, port: int, first: bytes):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.started = time.monotonic()
        self.sock.sendall(first)
        self.sock.setblocking(False)
        self.ended: float | None = None
        self.answer = ""

    def drip(self):
        if self.ended is not None:
            return
        try:
            data = self.sock.recv(4096)
            self._end(data.split(b"\r\n", 1)[0].decode(errors="replace") if data else "closed")
            return
        except BlockingIOError:
            pass
        except OSError:
            self._end("reset")
            return
        try:
            self.sock.send(b"X")
        except BlockingIOError:
            pass
        except OSError:
            self._end("reset")

    def _end(self, answer: str):
        self.ended, self.answer = time.monotonic() - self.started, answer

    def close(self):
        self.sock.close()


def _judge_latency(latencies: list[float], idle: float):
    median = statistics.median(latencies) if latencies else float("nan")
    worst = max(latencies) if latencies else float("nan")
    print(f"  another client meanwhile: {len(latencies)} small requests, median {median * 1000:.1f} ms (worst "
          f"{worst * 1000:.0f} ms), {median / idle:.2f}x its idle {idle * 1000:.1f} ms (target < {LATENCY_TARGET:g}x)"
          + _missed(median / idle < LATENCY_TARGET), flush=True)


def _judge_memory(what: str, before: float, grew: float):
    print(f"  {what} memory: VmRSS {before:.0f} MB before, its peak grew by {grew:.0f} MB (target < 100 MB: "
          f"{grew / 100:.2f}x of it)" + _missed(grew < 100), flush=True)


def _missed(met: bool) -> str:
    return "" if met else ": TARGET MISSED"


# ------------------------------------------------------------------ process figures (bench/limits.py's too)


def memory_mb(pid: int, field: str) -> float:
    """VmRSS (now) or VmHWM (the peak) of a process, in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith(field + ":")).split()[1]) / 1024


def reset_peak(pid: int) -> float:
    """Set the process's VmHWM back to its VmRSS (what it holds now), which is returned."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return memory_mb(pid, "VmRSS")
