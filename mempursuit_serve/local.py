"""``mempursuit serve`` as a child process on a free loopback port, for the examples, the
benchmark and the tests: started, waited for (``/ready``, bounded), and always stopped::

    with LocalService(workers=2) as service:
        requests.post(service.url + "/v1/rerank", json={...})
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["LocalService", "free_port", "worker_pids"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_pids(pid: int) -> list[int]:
    """The uvicorn worker processes under the supervisor ``pid`` (Linux: ``/proc``), leaving
    out multiprocessing's resource tracker."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if b"resource_tracker" not in cmd:
                out.append(child)
    return sorted(out)


class LocalService:
    """A ``mempursuit serve`` child process on 127.0.0.1.

    Parameters
    ----------
    *args : str
        More ``mempursuit serve`` arguments (``"--deadline", "2"``).
    workers : int
    env : dict, optional
        Added to this process's environment.
    ready_timeout : float
        Seconds to wait for ``/ready`` before giving up (the process is then stopped).
    log : path, optional
        Where the service's JSON log lines go (default: discarded).
    """

    def __init__(self, *args: str, workers: int = 1, env: dict[str, str] | None = None,
                 ready_timeout: float = 120.0, log: str | os.PathLike | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = ["--host", "127.0.0.1", "--port", str(self.port), "--workers",
                     str(workers), *args]
        self.env = {**os.environ, **(env or {})}
        self.ready_timeout = ready_timeout
        self.log = log
        self.process: subprocess.Popen | None = None

    def start(self) -> "LocalService":
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "mempursuit_core", "serve", *self.args], env=self.env,
                stdout=out, stderr=out, start_new_session=True)
        finally:
            if self.log:
                out.close()  # the child has its own copy
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mempursuit serve exited with {self.process.returncode}"
                                   + (f" (log: {self.log})" if self.log else ""))
            try:
                with urllib.request.urlopen(self.url + "/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"mempursuit serve was not ready within {self.ready_timeout} s")

    def post(self, path: str, body: dict, *, token: str | None = None,
             timeout: float = 60.0) -> tuple[int, dict]:
        """``(status, parsed JSON)`` of a POST (a 4xx / 5xx answer too)."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(self.url + path, json.dumps(body).encode(), headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def workers(self) -> list[int]:
        """The worker process ids (with ``workers > 1``)."""
        return worker_pids(self.process.pid) if self.process else []

    def stop(self) -> None:
        """Stop the service and its workers (SIGTERM, then SIGKILL after 10 s)."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        except ProcessLookupError:
            pass

    def __enter__(self) -> "LocalService":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
