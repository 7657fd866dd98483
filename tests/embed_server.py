"""An OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1 (http.server in a thread), with
scripted failures, shared by the tests of ``--embedder openai:MODEL``."""

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

DIM = 8


def hash_vector(text: str, dim: int = DIM) -> list[float]:
    raw = np.frombuffer(hashlib.sha256(text.encode()).digest()[: 4 * dim], dtype=np.uint32)
    v = raw.astype(np.float64) / 2**32 - 0.5
    return (v / np.linalg.norm(v)).astype(np.float32).tolist()


class Server:
    """An OpenAI-compatible /v1/embeddings server; ``plan`` scripts the next answers."""

    def __init__(self, vectors=hash_vector):
        self.vectors = vectors
        self.plan: list = []          # per request: None (serve), int status, ("sleep", s), ("dim", d)
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append({"path": self.path, "body": body,
                                           "auth": self.headers.get("Authorization")})
                    step = outer.plan.pop(0) if outer.plan else None
                if self.path not in ("/v1/embeddings",):
                    return self._send(404, {"error": "not found"})
                if isinstance(step, tuple) and step[0] == "sleep":
                    time.sleep(step[1])
                    step = None
                if isinstance(step, int):
                    headers = {"Retry-After": "1"} if step == 429 else {}
                    return self._send(step, {"error": {"message": f"scripted {step}"}}, headers)
                dim = step[1] if isinstance(step, tuple) and step[0] == "dim" else None
                data = []
                for i, t in enumerate(body["input"]):
                    v = outer.vectors(t)
                    if dim is not None:
                        v = (list(v) * 4)[:dim]
                    data.append({"object": "embedding", "index": i, "embedding": v})
                data.reverse()  # answers may come in any order: index decides
                self._send(200, {"object": "list", "data": data, "model": body["model"]})

            def _send(self, status, obj, headers=None):
                raw = json.dumps(obj).encode()
                try:
                    self.send_response(status)
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def texts(self) -> list[str]:
        return [t for r in self.requests for t in r["body"]["input"]]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
