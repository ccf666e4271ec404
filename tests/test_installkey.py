"""Install key: created once with 0600 outside the database, reused, race-safe."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlens.core.ingest import installkey
from memlens.core.ingest.installkey import (
    KEY_SIZE,
    InstallKeyError,
    InstallKeyPermissionWarning,
    default_key_path,
    keyed_hash,
    load_install_key,
)

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@posix_only
def test_created_with_0600_in_private_dir(tmp_path: Path) -> None:
    p = tmp_path / "cfg" / "memlens" / "install.key"
    key = load_install_key(p)
    assert len(key) == KEY_SIZE
    assert p.read_bytes() == key
    assert mode(p) == 0o600
    assert mode(p.parent) == 0o700
    # no temporary files left behind
    assert sorted(x.name for x in p.parent.iterdir()) == ["install.key"]


def test_reused_on_later_calls(tmp_path: Path) -> None:
    p = tmp_path / "install.key"
    first = load_install_key(p)
    assert load_install_key(p) == first
    assert load_install_key(p) == first


def test_keys_are_random(tmp_path: Path) -> None:
    assert load_install_key(tmp_path / "a.key") != load_install_key(tmp_path / "b.key")


def test_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "env" / "k.bin"
    monkeypatch.setenv("MEMLENS_INSTALL_KEY_FILE", str(p))
    assert default_key_path() == p
    key = load_install_key()
    assert p.read_bytes() == key


def test_default_path_is_user_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMLENS_INSTALL_KEY_FILE", raising=False)
    monkeypatch.setattr(installkey.platformdirs, "user_config_path", lambda app: tmp_path / app)
    assert default_key_path() == tmp_path / "memlens" / "install.key"
    key = load_install_key()
    assert (tmp_path / "memlens" / "install.key").read_bytes() == key


def test_wrong_size_refused(tmp_path: Path) -> None:
    p = tmp_path / "install.key"
    p.write_bytes(b"x" * 10)
    os.chmod(p, 0o600)
    old = time.time() - 3600
    os.utime(p, (old, old))  # not a key being written right now
    with pytest.raises(InstallKeyError, match="expected 32"):
        load_install_key(p)
    p.write_bytes(os.urandom(64))
    os.utime(p, (old, old))
    with pytest.raises(InstallKeyError, match="64 bytes"):
        load_install_key(p)


def test_directory_refused(tmp_path: Path) -> None:
    p = tmp_path / "install.key"
    p.mkdir()
    with pytest.raises(InstallKeyError):
        load_install_key(p)


@posix_only
def test_dangling_symlink_refused(tmp_path: Path) -> None:
    p = tmp_path / "install.key"
    p.symlink_to(tmp_path / "missing")
    with pytest.raises(InstallKeyError, match="symbolic link"):
        load_install_key(p)


@posix_only
def test_loose_permissions_fixed_with_warning(tmp_path: Path) -> None:
    p = tmp_path / "install.key"
    key = load_install_key(p)
    os.chmod(p, 0o644)
    with pytest.warns(InstallKeyPermissionWarning, match="0644"):
        assert load_install_key(p) == key
    assert mode(p) == 0o600


@posix_only
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_foreign_owner_refused(tmp_path: Path) -> None:
    p = tmp_path / "install.key"
    load_install_key(p)
    os.chown(p, 54321, 54321)
    with pytest.raises(InstallKeyError, match="belongs to user id 54321"):
        load_install_key(p)


def test_keyed_hash_is_hmac_sha256() -> None:
    key = bytes(range(32))
    data = b"password: hunter2\n"
    assert keyed_hash(data, key) == hmac.new(key, data, hashlib.sha256).hexdigest()
    assert len(keyed_hash(data, key)) == 64


def test_keyed_hash_depends_on_key(tmp_path: Path) -> None:
    data = b"password: hunter2\n"
    k1 = load_install_key(tmp_path / "1.key")
    k2 = load_install_key(tmp_path / "2.key")
    assert keyed_hash(data, k1) != keyed_hash(data, k2)
    # and it is not the plain hash someone could recompute without the key
    assert keyed_hash(data, k1) != hashlib.sha256(data).hexdigest()
    assert keyed_hash(data, k1) == keyed_hash(data, k1)


def test_keyed_hash_rejects_empty_key() -> None:
    with pytest.raises(ValueError):
        keyed_hash(b"x", b"")


_RACER = """
import os, sys, time
from pathlib import Path
from memlens.core.ingest.installkey import load_install_key
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
print(load_install_key(Path(sys.argv[1])).hex())
"""


@pytest.mark.parametrize("round_", range(3))
def test_concurrent_creation_gives_one_key(tmp_path: Path, round_: int) -> None:
    """Processes released at the same instant all end up with the same key."""
    p = tmp_path / "cfg" / "install.key"
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(p), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    time.sleep(0.5)  # let every process import and start polling
    go.touch()
    keys = set()
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        keys.add(out.strip())
    assert len(keys) == 1
    assert bytes.fromhex(keys.pop()) == p.read_bytes()
    assert [x.name for x in p.parent.iterdir()] == ["install.key"]


def test_fallback_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_link(src: object, dst: object) -> None:
        raise OSError(1, "Operation not permitted")  # EPERM, as on some FUSE mounts

    monkeypatch.setattr(installkey.os, "link", no_link)
    p = tmp_path / "install.key"
    key = load_install_key(p)
    assert p.read_bytes() == key
    assert load_install_key(p) == key
    assert [x.name for x in tmp_path.iterdir()] == ["install.key"]
