"""Per-install secret key (placeholder until the redaction work lands)."""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

import platformdirs


def load_install_key(path: Path | None = None) -> bytes:
    """Load (creating with mode 0600 on first use) the 32-byte install key."""
    env = os.environ.get("MEMLENS_INSTALL_KEY_FILE")
    p = path or (Path(env) if env else platformdirs.user_config_path("memlens") / "install.key")
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return p.read_bytes()
    with os.fdopen(fd, "wb") as f:
        f.write(os.urandom(32))
    return p.read_bytes()


def keyed_hash(data: bytes, key: bytes) -> str:
    """HMAC-SHA256 hex of data under key."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()
