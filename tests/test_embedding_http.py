"""The openai-compatible embedder against a real HTTP server on 127.0.0.1.

The server (http.server.ThreadingHTTPServer on an ephemeral port, in a thread) serves
``POST /v1/embeddings`` with switchable behaviour: healthy, slow, malformed JSON, wrong
dimension, wrong count, HTTP 429/500/401/404. Back-off sleeps are injected, so no test
waits for a real retry delay; every request loop is bounded by ``max_retries``.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memlens.core.embedders.registry import (
    EmbedderConfigError,
    EmbeddingError,
    OpenAICompatibleEmbedder,
    _parse_retry_after,
    make_embedder,
)

DIM = 8
SECRET = "sk-test-SECRET-0123456789"


def server_vector(text: str, dim: int = DIM) -> list[float]:
    """The deterministic (unnormalised) vector the fake server returns for a text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [(digest[i] - 127.5) / 10.0 for i in range(dim)]


@dataclass
class FakeEmbeddingServer:
    """State shared with the request handler."""

    mode: str = "healthy"
    script: list[str] = field(default_factory=list)  # per-request modes, consumed first
    dim: int = DIM
    retry_after: str = "7"
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def next_mode(self) -> str:
        with self.lock:
            return self.script.pop(0) if self.script else self.mode


def _make_handler(state: FakeEmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

        def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, code: int, doc: object, headers: dict[str, str] | None = None) -> None:
            self._send(code, json.dumps(doc).encode("utf-8"), headers)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            mode = state.next_mode()
            try:
                payload = json.loads(raw)
            except json.JSONDecodeError:
                payload = {"unparseable": raw.decode("utf-8", "replace")}
            with state.lock:
                state.requests.append({"path": self.path, "mode": mode, **payload})
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.path != "/v1/embeddings" or mode == "404":
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            texts = payload.get("input", [])
            if isinstance(texts, str):
                texts = [texts]
            data: list[dict[str, Any]] = [
                {"object": "embedding", "index": i, "embedding": server_vector(t, state.dim)}
                for i, t in enumerate(texts)
            ]
            if mode == "healthy":
                self._json(200, {"object": "list", "data": data, "model": payload.get("model")})
            elif mode == "shuffled":
                self._json(200, {"object": "list", "data": list(reversed(data))})
            elif mode == "slow":
                state.release.wait(1.5)  # longer than the client's timeout
                try:
                    self._json(200, {"data": data})
                except OSError:
                    pass
            elif mode == "malformed":
                self._send(200, b'{"data": [{"embedding": [0.1, 0.2')
            elif mode == "not-object":
                self._json(200, [1, 2, 3])
            elif mode == "wrong-dim":
                for item in data:
                    item["embedding"] = item["embedding"] + [0.5]
                self._json(200, {"data": data})
            elif mode == "wrong-count":
                self._json(200, {"data": data[:-1]})
            elif mode == "bad-index":
                for item in data:
                    item["index"] = 0
                self._json(200, {"data": data})
            elif mode == "strings":
                for item in data:
                    item["embedding"] = ["0.1"] * state.dim
                self._json(200, {"data": data})
            elif mode == "429":
                self._json(
                    429,
                    {"error": {"message": "rate limited"}},
                    {"Retry-After": state.retry_after},
                )
            elif mode == "500":
                self._json(500, {"error": {"message": "model crashed"}})
            elif mode == "401":
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                self._json(401, {"error": {"message": f"Incorrect API key provided: {key}"}})
            else:
                raise AssertionError(f"unknown mode {mode}")

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client hanging up on a slow response is expected


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    state = FakeEmbeddingServer()
    httpd = _QuietServer(("127.0.0.1", 0), _make_handler(state))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


class SleepRecorder:
    """Injected instead of time.sleep: records the delays, never waits."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def make(server: FakeEmbeddingServer, sleeper: SleepRecorder | None = None, **options: Any) -> Any:
    opts: dict[str, object] = {
        "base_url": server.url,
        "model": "test-embed",
        "sleep": sleeper or SleepRecorder(),
        "timeout": 2.0,
    }
    opts.update(options)
    return make_embedder("openai", opts)


def expected(texts: list[str], dim: int = DIM) -> np.ndarray:
    raw = np.array([server_vector(t, dim) for t in texts], dtype=np.float64)
    return (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- healthy


def test_healthy_round_trip(server: FakeEmbeddingServer) -> None:
    e = make(server)
    texts = ["alpha", "beta gamma", "δέλτα 🚀"]
    vecs = e.embed_documents(texts)
    assert vecs.shape == (3, DIM)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(vecs, expected(texts), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # dim discovered from the first response, no separate probe
    assert e.dim == DIM
    assert len(server.requests) == 1
    body = server.requests[0]
    assert body["model"] == "test-embed"
    assert body["input"] == texts
    assert server.headers[0]["content-type"] == "application/json"
    assert "authorization" not in server.headers[0]
    assert e.fingerprint() == f"openai:v1:model=test-embed:dim={DIM}"
    info = e.info()
    assert info["endpoint"] == server.url + "/embeddings"
    assert info["dim"] == DIM and info["dim_source"] == "discovered"


def test_query_and_prefixes(server: FakeEmbeddingServer) -> None:
    e = make(server, query_prefix="search_query: ", document_prefix="search_document: ")
    q = e.embed_query("where is the lock")
    assert q.shape == (DIM,)
    np.testing.assert_allclose(q, expected(["search_query: where is the lock"])[0], atol=1e-6)
    e.embed_documents(["doc"])
    assert server.requests[-1]["input"] == ["search_document: doc"]
    assert ":prefix=" in e.fingerprint()


def test_dim_probe_when_read_before_embedding(server: FakeEmbeddingServer) -> None:
    e = make(server)
    assert e.dim == DIM
    assert len(server.requests) == 1
    assert e.dim == DIM  # fixed after discovery: no second probe
    assert len(server.requests) == 1


def test_configured_dim_needs_no_request(server: FakeEmbeddingServer) -> None:
    e = make(server, dim=DIM)
    assert e.dim == DIM
    assert e.fingerprint().endswith(f":dim={DIM}")
    assert server.requests == []


def test_empty_texts_are_not_sent(server: FakeEmbeddingServer) -> None:
    e = make(server)
    vecs = e.embed_documents(["", "real text", "  "])
    assert server.requests[0]["input"] == ["real text"]
    assert not vecs[0].any() and not vecs[2].any()
    np.testing.assert_allclose(vecs[1], expected(["real text"])[0], atol=1e-6)


def test_out_of_order_indices_are_respected(server: FakeEmbeddingServer) -> None:
    server.mode = "shuffled"
    texts = ["one", "two", "three"]
    np.testing.assert_allclose(make(server).embed_documents(texts), expected(texts), atol=1e-6)


def test_batching(server: FakeEmbeddingServer) -> None:
    e = make(server, batch_size=2)
    texts = [f"text {i}" for i in range(5)]
    vecs = e.embed_documents(texts)
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert [t for r in server.requests for t in r["input"]] == texts
    np.testing.assert_allclose(vecs, expected(texts), atol=1e-6)


def test_api_key_from_option_and_env(server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    make(server, api_key=SECRET).embed_documents(["x"])
    assert server.headers[-1]["authorization"] == f"Bearer {SECRET}"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MEMLENS_OPENAI_API_KEY", "from-env")
    make(server).embed_documents(["x"])
    assert server.headers[-1]["authorization"] == "Bearer from-env"


def test_url_credentials_become_basic_auth(server: FakeEmbeddingServer) -> None:
    url = server.url.replace("http://", "http://alice:pa55word@")
    e = make(server, base_url=url)
    e.embed_documents(["x"])
    assert server.headers[-1]["authorization"].startswith("Basic ")
    assert "pa55word" not in str(e.info()["endpoint"])
    assert "pa55word" not in repr(e)


# --------------------------------------------------------------------------- failures


def test_server_down_fails_after_retries(server: FakeEmbeddingServer) -> None:
    sleeper = SleepRecorder()
    url = f"http://127.0.0.1:{closed_port()}/v1"
    e = make(server, sleeper, base_url=url, max_retries=2)
    with pytest.raises(EmbeddingError) as info:
        e.embed_documents(["hello"])
    message = str(info.value)
    assert url + "/embeddings" in message
    assert "connection refused" in message
    assert "3 attempts" in message
    assert info.value.transient is True
    assert len(sleeper.delays) == 2
    assert e.requests_made == 3


def test_slow_server_times_out(server: FakeEmbeddingServer) -> None:
    server.mode = "slow"
    sleeper = SleepRecorder()
    e = make(server, sleeper, timeout=0.3, max_retries=1)
    with pytest.raises(EmbeddingError, match=r"timed out after 0\.3 s") as info:
        e.embed_documents(["hello"])
    assert info.value.transient is True
    assert len(server.requests) == 2  # first try + one retry
    assert len(sleeper.delays) == 1


@pytest.mark.parametrize(
    ("mode", "fragment"),
    [
        ("malformed", "invalid JSON"),
        ("not-object", "not an object"),
        ("wrong-count", "returned 1 embeddings for 2 inputs"),
        ("bad-index", "out of range or repeated"),
        ("strings", "non-number"),
    ],
)
def test_invalid_responses_fail_without_retry(server: FakeEmbeddingServer, mode: str, fragment: str) -> None:
    server.mode = mode
    sleeper = SleepRecorder()
    with pytest.raises(EmbeddingError) as info:
        make(server, sleeper).embed_documents(["a", "b"])
    message = str(info.value)
    assert fragment in message
    assert server.url + "/embeddings" in message
    assert info.value.transient is False
    assert len(server.requests) == 1
    assert sleeper.delays == []


def test_wrong_dimension_against_configured_dim(server: FakeEmbeddingServer) -> None:
    with pytest.raises(EmbeddingError, match=r"returned 8-dimensional .* expected 16 \(configured"):
        make(server, dim=16).embed_documents(["a"])


def test_dimension_change_after_discovery(server: FakeEmbeddingServer) -> None:
    e = make(server)
    e.embed_documents(["a"])
    server.mode = "wrong-dim"
    with pytest.raises(EmbeddingError, match=r"returned 9-dimensional .* expected 8 \(discovered"):
        e.embed_documents(["b"])


def test_429_then_success_honours_retry_after(server: FakeEmbeddingServer) -> None:
    server.script = ["429", "healthy"]
    server.retry_after = "7"
    sleeper = SleepRecorder()
    vecs = make(server, sleeper).embed_documents(["a", "b"])
    np.testing.assert_allclose(vecs, expected(["a", "b"]), atol=1e-6)
    assert sleeper.delays == [7.0]
    assert [r["mode"] for r in server.requests] == ["429", "healthy"]


def test_retry_after_is_capped(server: FakeEmbeddingServer) -> None:
    server.script = ["429", "healthy"]
    server.retry_after = "86400"
    sleeper = SleepRecorder()
    make(server, sleeper, max_retry_after=30).embed_documents(["a"])
    assert sleeper.delays == [30.0]


def test_500_always_fails_after_max_retries(server: FakeEmbeddingServer) -> None:
    server.mode = "500"
    sleeper = SleepRecorder()
    e = make(server, sleeper, max_retries=3, backoff_base=0.5, max_backoff=20)
    with pytest.raises(EmbeddingError) as info:
        e.embed_documents(["a"])
    message = str(info.value)
    assert "failed after 4 attempts" in message
    assert "HTTP 500" in message and "model crashed" in message
    assert server.url + "/embeddings" in message
    assert info.value.transient is True
    assert len(server.requests) == 4
    # exponential back-off with jitter: attempt i waits in [b*2^i/2, b*2^i]
    assert len(sleeper.delays) == 3
    for i, delay in enumerate(sleeper.delays):
        ceiling = 0.5 * 2**i
        assert ceiling / 2 <= delay <= ceiling


def test_no_retries_when_disabled(server: FakeEmbeddingServer) -> None:
    server.mode = "500"
    sleeper = SleepRecorder()
    with pytest.raises(EmbeddingError, match="failed after 1 attempt:"):
        make(server, sleeper, max_retries=0).embed_documents(["a"])
    assert sleeper.delays == []
    assert len(server.requests) == 1


def test_401_fails_at_once_without_leaking_the_key(server: FakeEmbeddingServer) -> None:
    server.mode = "401"
    sleeper = SleepRecorder()
    e = make(server, sleeper, api_key=SECRET)
    with pytest.raises(EmbeddingError) as info:
        e.embed_documents(["a"])
    message = str(info.value)
    assert "HTTP 401" in message
    assert "API key" in message
    assert server.url + "/embeddings" in message
    assert SECRET not in message  # the server echoed it; we scrub it
    info_text = str(e.info())  # info() never raises; it reports the failure
    assert "HTTP 401" in info_text
    assert SECRET not in repr(e) and SECRET not in info_text
    assert info.value.transient is False
    assert len(server.requests) == 2  # the embed request and info()'s probe; no retries
    assert sleeper.delays == []


def test_404_hints_at_base_url(server: FakeEmbeddingServer) -> None:
    sleeper = SleepRecorder()
    e = make(server, sleeper, base_url=server.url.removesuffix("/v1") + "/wrong")
    with pytest.raises(EmbeddingError, match="HTTP 404.*check base_url"):
        e.embed_documents(["a"])
    assert sleeper.delays == []


def test_full_embeddings_url_is_accepted(server: FakeEmbeddingServer) -> None:
    e = make(server, base_url=server.url + "/embeddings/")
    e.embed_documents(["a"])
    assert server.requests[0]["path"] == "/v1/embeddings"


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"base_url": "ftp://example/v1", "model": "m"}, "http(s) URL"),
        ({"base_url": "not a url", "model": "m"}, "http(s) URL"),
        ({"base_url": "http://127.0.0.1:1/v1"}, "needs option 'model'"),
        ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "batch_size": 0}, "batch_size"),
        ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "timeout": -1}, "timeout"),
        ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "max_retries": -1}, "max_retries"),
        ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "sleep": 3}, "callable"),
        ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "colour": "red"}, "colour"),
    ],
)
def test_bad_configuration(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, object], fragment: str
) -> None:
    monkeypatch.delenv("MEMLENS_OPENAI_MODEL", raising=False)
    with pytest.raises(EmbedderConfigError) as info:
        make_embedder("openai", options)
    assert fragment in str(info.value)


def test_construction_makes_no_request() -> None:
    e = make_embedder("openai", {"base_url": f"http://127.0.0.1:{closed_port()}/v1", "model": "m"})
    assert isinstance(e, OpenAICompatibleEmbedder)
    assert e.requests_made == 0


def test_parse_retry_after() -> None:
    assert _parse_retry_after(None) is None
    assert _parse_retry_after("3") == 3.0
    assert _parse_retry_after("-5") == 0.0
    assert _parse_retry_after("soon") is None
    # an HTTP date 10 s after "now"
    assert _parse_retry_after("Thu, 01 Jan 1970 00:00:10 GMT", now=0.0) == pytest.approx(10.0)
