"""HTTP over a raw socket, as a client that sends its headers and then its body while it reads:
what the server answers and when, before or while the body is sent. Used by the request-limit
tests and bench/limits.py."""
import select
import socket
import time

MB = 2**20


def head(method, path, headers: dict) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    return "\r\n".join(lines).encode()


def exchange(port, request_head: bytes, body_size: int = 0, chunked=False, timeout=20.0):
    """Send the head, then up to `body_size` bytes of body (1 MB at a time, chunked if asked) while
    reading: (status, headers, body, bytes of body sent, seconds until the answer's end)."""
    sock = socket.create_connection(("127.0.0.1", port))
    started = time.monotonic()
    sock.sendall(request_head)
    sock.setblocking(False)
    block = b"x" * MB
    piece = (b"%x\r\n" % MB + block + b"\r\n") if chunked else block
    sent, answer, sending = 0, b"", body_size > 0
    deadline = started + timeout
    try:
        while time.monotonic() < deadline:
            readable, writable, _ = select.select([sock], [sock] if sending else [], [], 0.5)
            if readable:
                data = sock.recv(65536)
                answer += data
                if not data or complete(answer):
                    break
            if writable and sending:
                try:
                    sent += sock.send(piece if sent + MB <= body_size else piece[: body_size - sent])
                except (BlockingIOError, InterruptedError):
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    sending = False
                if sent >= body_size:
                    sending = False
        seconds = time.monotonic() - started
    finally:
        sock.close()
    status_line, _, rest = answer.partition(b"\r\n")
    if status_line.startswith(b"HTTP/1.1 100"):
        status_line, _, rest = rest.partition(b"\r\n\r\n")[2].partition(b"\r\n")
    raw_headers, _, body = rest.partition(b"\r\n\r\n")
    headers = dict(line.decode().lower().split(": ", 1) for line in raw_headers.split(b"\r\n") if b": " in line)
    return int(status_line.split()[1]), headers, body, sent, seconds


def complete(answer: bytes) -> bool:
    end = answer.find(b"\r\n\r\n")
    if end < 0 or answer.startswith(b"HTTP/1.1 100 ") and answer.count(b"\r\n\r\n") < 2:
        return False
    if answer.startswith(b"HTTP/1.1 100 "):
        answer = answer[end + 4:]
        end = answer.find(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in answer[:end].split(b"\r\n") if line.lower().startswith(b"content-length:")), None)
    return length is not None and len(answer) >= end + 4 + length
