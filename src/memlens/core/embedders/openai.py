"""The OpenAI-compatible HTTP embedder."""

from __future__ import annotations

import base64
import email.utils
import http.client
import ipaddress
import json
import math
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

from memlens.core.embedders.base import (
    BaseEmbedder,
    EmbedderConfigError,
    EmbeddingError,
    _prefix_tag,
    batched,
)

# --------------------------------------------------------------------------- openai-compatible

_RETRY_STATUS: Final = frozenset({408, 429})
_MAX_RESPONSE_BYTES: Final = 256 * 1024 * 1024
_PROBE_TEXT: Final = "memlens dimension probe"


def _is_loopback(host: str) -> bool:
    if host.lower() in {"localhost", "localhost.localdomain"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Parse a Retry-After header (seconds or an HTTP date) into seconds from now."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = datetime.now(UTC).timestamp() if now is None else now
        seconds = when.timestamp() - current
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _split_base_url(base_url: str) -> urllib.parse.SplitResult:
    parsed = urllib.parse.urlsplit(base_url.strip())
    if parsed.scheme not in {"http", "https"} or not parsed.hostname:
        raise EmbedderConfigError(
            f"openai embedder: base_url must be an http(s) URL such as "
            f"http://127.0.0.1:11434/v1, got {base_url!r}"
        )
    return parsed


def _check_options(
    *, model: str, dim: int | None, timeout: float, max_retries: int, batch_size: int
) -> None:
    if not model.strip():
        raise EmbedderConfigError("openai embedder: option 'model' must not be empty")
    if dim is not None and dim <= 0:
        raise EmbedderConfigError(f"openai embedder: dim must be positive, got {dim}")
    if not timeout > 0:
        raise EmbedderConfigError(f"openai embedder: timeout must be positive, got {timeout}")
    if max_retries < 0:
        raise EmbedderConfigError(f"openai embedder: max_retries must be 0 or more, got {max_retries}")
    if batch_size < 1:
        raise EmbedderConfigError(f"openai embedder: batch_size must be at least 1, got {batch_size}")


def _netloc(parsed: urllib.parse.SplitResult, base_url: str) -> str:
    """Host and port of ``parsed``, without the credentials."""
    try:
        port = f":{parsed.port}" if parsed.port else ""
    except ValueError:
        raise EmbedderConfigError(
            f"openai embedder: base_url has an invalid port: {base_url!r}"
        ) from None
    host = parsed.hostname or ""
    return (f"[{host}]" if ":" in host else host) + port


def _basic_auth(parsed: urllib.parse.SplitResult) -> str | None:
    """The Basic auth credentials (base64) given in the URL, if any."""
    if parsed.username is None:
        return None
    user = urllib.parse.unquote(parsed.username)
    password = urllib.parse.unquote(parsed.password or "")
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


class _Retryable(Exception):
    """One attempt failed in a way a retry may fix (raised and caught inside the embedder)."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.retry_after = retry_after


def _error_excerpt(exc: urllib.error.HTTPError) -> str:
    """The start of an HTTP error body, on one line (empty if it cannot be read)."""
    try:
        excerpt = exc.read(2000).decode("utf-8", "replace")
    except Exception:
        excerpt = ""
    finally:
        exc.close()
    return " ".join(excerpt.split())[:300]


def _rejection_hint(code: int) -> str:
    """What to check when the server rejects a request with ``code``."""
    if code in (401, 403):
        return "; check the API key (option api_key, or MEMLENS_OPENAI_API_KEY / OPENAI_API_KEY)"
    if code == 404:
        return "; check base_url (usually ending in /v1) and the model name"
    return ""


class OpenAICompatibleEmbedder(BaseEmbedder):
    """Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Works with OpenAI, Ollama (``http://127.0.0.1:11434/v1``), LM Studio
    (``http://127.0.0.1:1234/v1``), llama.cpp's server and similar. Uses only the
    standard library. Texts are sent in batches of ``batch_size``; connection errors,
    timeouts, HTTP 408/429 and 5xx are retried up to ``max_retries`` times with
    exponential back-off and jitter (a ``Retry-After`` header is honoured, capped at
    ``max_retry_after`` seconds); other 4xx answers fail at once. Every response is
    validated (JSON shape, one finite float vector per input, indices, dimension).

    Error messages name the endpoint but never the API key. Vectors are assumed to be
    determined by the model name and dimension: the fingerprint does not include the
    URL, so moving a server to another port does not re-embed everything.
    """

    name = "openai"
    version = "1"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 64,
        query_prefix: str = "",
        document_prefix: str = "",
        backoff_base: float = 0.5,
        max_backoff: float = 20.0,
        max_retry_after: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        """Configure the client (no request is made here).

        Args:
            base_url: Endpoint root, e.g. ``http://127.0.0.1:11434/v1``; a URL that
                already ends in ``/embeddings`` is used as is.
            model: The model name the server expects.
            api_key: Bearer token, if the server wants one.
            dim: Expected dimension; when None it is discovered by the first request
                (or a probe when :attr:`dim` is read first) and then fixed.
            timeout: Socket timeout per request, in seconds.
            max_retries: Retries after the first attempt (0 disables retrying).
            batch_size: Texts per request.
            query_prefix: Text put before queries (e.g. ``"search_query: "``).
            document_prefix: Text put before documents (e.g. ``"search_document: "``).
            backoff_base: First back-off delay in seconds (doubles per retry).
            max_backoff: Cap on one back-off delay.
            max_retry_after: Cap on a server's ``Retry-After`` delay.
            sleep: Function used to wait between retries (injectable for tests).
            rng: Random source for jitter (injectable for tests).

        Raises:
            EmbedderConfigError: If an argument is invalid.
        """
        parsed = _split_base_url(base_url)
        _check_options(
            model=model, dim=dim, timeout=timeout, max_retries=max_retries, batch_size=batch_size
        )
        path = parsed.path.rstrip("/")
        if not path.endswith("/embeddings"):
            path = path + "/embeddings"
        host = parsed.hostname or ""
        netloc = _netloc(parsed, base_url)
        # Credentials in the URL become a Basic auth header; they never appear in messages.
        self._basic_auth = _basic_auth(parsed)
        self._secrets = [x for x in (api_key, parsed.password) if x]
        self._url = urllib.parse.urlunsplit((parsed.scheme, netloc, path, parsed.query, ""))
        # For messages: no credentials, no query string.
        self._endpoint = f"{parsed.scheme}://{netloc}{path}"
        self.model = model
        self._api_key = api_key or None
        self._dim: int | None = dim
        self._dim_configured = dim is not None
        self._timeout = float(timeout)
        self._max_retries = max_retries
        self._batch_size = batch_size
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._backoff_base = backoff_base
        self._max_backoff = max_backoff
        self._max_retry_after = max_retry_after
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._dim_lock = threading.Lock()
        self.requests_made = 0  # HTTP requests sent, retries included (for tests/stats)
        handlers: list[urllib.request.BaseHandler] = []
        if _is_loopback(host):
            handlers.append(urllib.request.ProxyHandler({}))  # never proxy a local server
        self._opener = urllib.request.build_opener(*handlers)

    # -- properties

    @property
    def endpoint(self) -> str:
        """The embeddings URL as shown in messages (no credentials)."""
        return self._endpoint

    @property
    def dim(self) -> int:
        """Vector dimension; discovered with one probe request if not configured.

        Raises:
            EmbeddingError: If the probe request fails.
        """
        if self._dim is None:
            self._request_batch([_PROBE_TEXT])
        assert self._dim is not None
        return self._dim

    def fingerprint(self) -> str:
        """Return e.g. ``openai:v1:model=nomic-embed-text:dim=768``."""
        fp = f"openai:v{self.version}:model={self.model}:dim={self.dim}"
        return fp + _prefix_tag(self._document_prefix, self._query_prefix)

    def _extra_info(self) -> dict[str, object]:
        return {
            "endpoint": self._endpoint,
            "api_key": "set" if self._api_key else "not set",
            "dim_source": "configured" if self._dim_configured else "discovered",
            "batch_size": self._batch_size,
            "timeout_s": self._timeout,
            "max_retries": self._max_retries,
            "semantic": True,
        }

    def info(self) -> dict[str, object]:
        """Return details for display; never raises.

        When the dimension is not yet known a probe request is made; if it fails,
        ``dim`` and ``fingerprint`` are None and ``error`` says why.
        """
        try:
            return super().info()
        except EmbeddingError as exc:
            details: dict[str, object] = {
                "name": self.name,
                "model": self.model,
                "dim": None,
                "metric": self.metric,
                "version": self.version,
                "fingerprint": None,
                "error": str(exc),
            }
            details.update(self._extra_info())
            return details

    def __repr__(self) -> str:
        return f"<OpenAICompatibleEmbedder model={self.model!r} endpoint={self._endpoint!r}>"

    # -- embedding

    def _embed(self, texts: list[str], *, query: bool) -> npt.NDArray[Any]:
        import numpy as np

        prefix = self._query_prefix if query else self._document_prefix
        rows: list[npt.NDArray[np.float64]] = []
        for batch in batched([prefix + t for t in texts], self._batch_size):
            rows.append(self._request_batch(batch))
        return np.vstack(rows)

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _fail(self, message: str, *, transient: bool = False) -> EmbeddingError:
        return EmbeddingError(
            self._scrub(f"embedding endpoint {self._endpoint}: {message}"), transient=transient
        )

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self._max_retry_after)
        ceiling = min(self._max_backoff, self._backoff_base * (2.0**attempt))
        return self._rng.uniform(ceiling / 2.0, ceiling)

    def _headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "memlens",
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        elif self._basic_auth:
            headers["Authorization"] = f"Basic {self._basic_auth}"
        return headers

    def _post(self, payload: bytes) -> bytes:
        headers = self._headers()
        attempts = self._max_retries + 1
        problem = "no attempt made"
        for attempt in range(attempts):
            request = urllib.request.Request(self._url, data=payload, headers=headers, method="POST")
            self.requests_made += 1
            try:
                return self._send(request)
            except _Retryable as retry:
                problem, retry_after = retry.problem, retry.retry_after
            if attempt + 1 < attempts:
                self._sleep(self._backoff(attempt, retry_after))
        tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
        raise self._fail(f"failed after {tries}: {problem}", transient=True)

    def _send(self, request: urllib.request.Request) -> bytes:
        """Make one request; return the body, or raise `_Retryable` or a final `EmbeddingError`."""
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                body: bytes = response.read(_MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise self._http_error(exc) from None
        except TimeoutError:
            raise _Retryable(f"timed out after {self._timeout:g} s") from None
        except urllib.error.URLError as exc:
            raise _Retryable(self._url_error_problem(exc.reason)) from None
        except ValueError as exc:  # e.g. a control character in a header value
            raise self._fail(f"invalid request: {exc}") from None
        except ConnectionRefusedError:
            raise _Retryable("connection refused (is the server running?)") from None
        except (ConnectionError, http.client.HTTPException, OSError) as exc:
            raise _Retryable(f"connection failed ({type(exc).__name__}: {exc})") from None
        if len(body) > _MAX_RESPONSE_BYTES:
            raise self._fail(f"response larger than {_MAX_RESPONSE_BYTES // (1024 * 1024)} MiB")
        return body

    def _url_error_problem(self, reason: object) -> str:
        if isinstance(reason, TimeoutError):
            return f"timed out after {self._timeout:g} s"
        if isinstance(reason, ConnectionRefusedError):
            return "connection refused (is the server running?)"
        return f"cannot connect ({reason})"

    def _http_error(self, exc: urllib.error.HTTPError) -> Exception:
        """A `_Retryable` for HTTP 408/429/5xx, else the `EmbeddingError` to raise at once."""
        code = exc.code
        reason = exc.reason if isinstance(exc.reason, str) else ""
        excerpt = _error_excerpt(exc)
        status = f"HTTP {code} {reason}".rstrip()
        if code in _RETRY_STATUS or 500 <= code <= 599:
            return _Retryable(
                status + (f" ({excerpt})" if excerpt else ""),
                _parse_retry_after(exc.headers.get("Retry-After")),
            )
        detail = f": {excerpt}" if excerpt else ""
        return self._fail(f"request rejected with {status}{detail}{_rejection_hint(code)}")

    def _request_batch(self, texts: list[str]) -> npt.NDArray[np.float64]:
        payload = json.dumps(
            {"model": self.model, "input": texts, "encoding_format": "float"},
            ensure_ascii=False,
        ).encode("utf-8")
        body = self._post(payload)
        return self._parse(body, len(texts))

    def _parse(self, body: bytes, expected: int) -> npt.NDArray[np.float64]:
        import numpy as np

        data = self._data_list(body, expected)
        vectors: list[list[float] | None] = [None] * expected
        for pos, item in enumerate(data):
            index, emb = self._parse_item(pos, item, vectors)
            vectors[index] = emb
        self._check_dim({len(v) for v in vectors if v is not None})
        matrix = np.asarray(vectors, dtype=np.float64)
        if not np.all(np.isfinite(matrix)):
            raise self._fail("returned non-finite numbers")
        return matrix

    def _data_list(self, body: bytes, expected: int) -> list[Any]:
        """The response's ``data`` list, checked to hold ``expected`` items."""
        try:
            doc = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise self._fail(f"returned invalid JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise self._fail("returned JSON that is not an object")
        if "error" in doc and "data" not in doc:
            raise self._fail(f"returned an error: {str(doc['error'])[:300]}")
        data = doc.get("data")
        if not isinstance(data, list):
            raise self._fail("response has no 'data' list")
        if len(data) != expected:
            raise self._fail(f"returned {len(data)} embeddings for {expected} inputs")
        return data

    def _parse_item(
        self, pos: int, item: object, vectors: list[list[float] | None]
    ) -> tuple[int, list[float]]:
        """Validate ``data[pos]``; return its index and its embedding."""
        if not isinstance(item, dict):
            raise self._fail(f"data[{pos}] is not an object")
        index = item.get("index", pos)
        if isinstance(index, bool) or not isinstance(index, int):
            raise self._fail(f"data[{pos}].index is not an integer")
        if not 0 <= index < len(vectors) or vectors[index] is not None:
            raise self._fail(f"data[{pos}].index {index} is out of range or repeated")
        emb = item.get("embedding")
        if not isinstance(emb, list) or not emb:
            raise self._fail(f"data[{pos}].embedding is not a non-empty list of numbers")
        for value in emb:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._fail(f"data[{pos}].embedding contains a non-number")
        return index, emb

    def _check_dim(self, lengths: set[int]) -> None:
        """Fix the dimension on first use, and check every later answer against it."""
        if len(lengths) != 1:
            raise self._fail(f"returned embeddings of different lengths {sorted(lengths)}")
        (length,) = lengths
        with self._dim_lock:
            if self._dim is None:
                self._dim = length
        if length != self._dim:
            origin = "configured" if self._dim_configured else "discovered"
            raise self._fail(f"returned {length}-dimensional embeddings, expected {self._dim} ({origin} dim)")
