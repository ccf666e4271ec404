"""Keyed syntaxes of issue 16 that name the key and the value apart (memlens.core.redact.keyed):
XML elements, key/value attribute pairs, setter calls, typed declarations, Makefile operators,
YAML block scalars, Markdown table cells and hex tokens after a cue word in prose."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memlens.core.redact.engine import redact
from memlens.core.redact.keyed import name_kind
from memlens.core.redact.rules import _is_placeholder, _looks_random
from tests.conftest import run_cli

PW = "Zk8q!Lm3vRt9w"  # a password: mixed, a symbol, no structure
TOK = "pQ4nV8zL2rT6wX0yB3cD7fG1"  # a generated token

POSITIVE: list[tuple[str, str, str]] = [
    ("xml-element", "<password>{v}</password>", PW),
    ("xml-namespaced", "<db:password>{v}</db:password>", PW),
    ("xml-dotted", "  <spring.datasource.password>{v}</spring.datasource.password>", PW),
    ("xml-camel", "<apiKey>{v}</apiKey>", TOK),
    ("xml-attributes", '<secret id="1">{v}</secret>', TOK),
    ("dotnet-add", '<add key="ApiKey" value="{v}" />', TOK),
    ("dotnet-add-pw", "<add key='DbPassword' value='{v}'/>", PW),
    ("spring-property", '<property name="db.password" value="{v}"/>', PW),
    ("json-name-value", '{{"name": "DB_PASSWORD", "value": "{v}"}}', PW),
    ("k8s-env", "env:\n  - name: API_TOKEN\n    value: {v}\n", TOK),
    ("k8s-env-quoted", "  - name: DB_PASSWORD\n    value: \"{v}\"\n", PW),
    ("java-setproperty", 'System.setProperty("db.password", "{v}");', PW),
    ("go-setenv", 'os.Setenv("API_TOKEN", "{v}")', TOK),
    ("php-define", "define('DB_PASSWORD', '{v}');", PW),
    ("python-setdefault", 'os.environ.setdefault("SECRET_KEY", "{v}")', TOK),
    ("go-var", 'var apiKey string = "{v}"', TOK),
    ("go-const", 'const dbPassword string = "{v}"', PW),
    ("typescript", 'const apiKey: string = "{v}";', TOK),
    ("typescript-optional", "  clientSecret?: string = '{v}'", TOK),
    ("kotlin", 'val dbPassword: String = "{v}"', PW),
    ("python-annotated", 'API_TOKEN: str = "{v}"', TOK),
    ("make-conditional", "API_TOKEN ?= {v}", TOK),
    ("make-posix", "DB_PASSWORD ::= {v}", PW),
    ("yaml-literal", "password: |\n  {v}\nuser: app\n", PW),
    ("yaml-folded-nested", "db:\n  password: >-\n    {v}\n  user: app\n", PW),
    ("yaml-list-item", "- token: |\n    {v}\n", TOK),
    ("table-column", "| user | password |\n|---|---|\n| admin | {v} |", PW),
    ("table-column-code", "| Service | API key | Owner |\n| :-- | :-- | --- |\n| ci | `{v}` | ops |", TOK),
    ("table-row", "| Setting | Value |\n|---|---|\n| DB_PASSWORD | {v} |", PW),
    ("table-row-token", "| name | value |\n| --- | --- |\n| `GITHUB_TOKEN` | {v} |", TOK),
    ("hex-prose", "The OAuth token is {v} for the deploy bot.", "3f9a1c7e5b2d8f4a6c0e9b7d5f3a1c8e2b4d6f80"),
    ("hex-prose-key", "Use API key {v} on staging.", "9b2e4d6f8a0c1e3f5a7b9d1c3e5f7a9b"),
    ("hex-prose-upper", "secret: see below\nbot token {v}", "3F9A1C7E5B2D8F4A6C0E9B7D5F3A1C8E2B4D6F80"),
]


@pytest.mark.parametrize("name,template,value", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_keyed_value_is_redacted(name: str, template: str, value: str) -> None:
    text = template.format(v=value)
    out = redact(text).text
    assert value not in out, out
    assert "[REDACTED:" in out
    # only the value goes: the key and the syntax around it stay
    start = out.index("[REDACTED:")
    assert out.replace(out[start : out.index("]", start) + 1], value) == text


NEGATIVE = [
    "<password>${DB_PASSWORD}</password>",
    "<token>{{ .Values.token }}</token>",
    "<password>%DB_PASSWORD%</password>",
    '<add key="ApiKey" value="$(ApiKey)" />',
    "API_TOKEN ?= $(shell cat .token)",
    "<password>true</password>",
    "<password/>\n<name>Alice</name>",
    "<token><value>nested</value></token>",
    '<add key="LogLevel" value="Verbose" />',
    '<add key="ApiKeyHeader" value="X-Api-Key" />',
    "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password\n",
    '- name: DB_PASSWORD\n  value: "${DB_PASSWORD}"\n',
    'System.setProperty("java.awt.headless", "true");',
    "scrypt('password', 'salt', 64, (err, key) => {});",
    "const key = scryptSync(password, 'salt', 24);",
    'hkdf("sha512", "key", "salt", "info", 64)',
    'var tokenType string = "bearer"',
    'const apiKeyHeader string = "X-Api-Key"',
    'const passwordLabel: string = "Password"',
    'if token == "": return',
    "CFLAGS ?= -O2 -Wall",
    "PREFIX ::= /usr/local",
    "description: |\n  The password policy requires 12 characters.\n",
    "token: |\n  Ask the on-call engineer for it.\n",
    "| field | type |\n|---|---|\n| password | string |\n| token | string |",
    "| Variable | Description |\n|---|---|\n| DB_PASSWORD | The database password |",
    "| Name | Value |\n|---|---|\n| API_KEY | string |\n| DB_PASSWORD | required |",
    "| user | password |\n|---|---|\n| admin | `${ADMIN_PASSWORD}` |\n| bob | - |",
    "| Token | Count |\n|---|---|\n| the | 1,204 |",
    "Reverted commit 3f9a1c7e5b2d8f4a6c0e9b7d5f3a1c8e2b4d6f80 because it broke the token refresh.",
    "the token refresh fix landed in 3f9a1c7e5b2d8f4a6c0e9b7d5f3a1c8e2b4d6f80",
    "The secret's SHA-256 is 3f9a1c7e5b2d8f4a6c0e9b7d5f3a1c8e2b4d6f803f9a1c7e5b2d8f4a6c0e9b7d.",
    "token budget: run 3f9a1c7e5b2d8f4a6c0e9b7d5f3a1c8e2b4d6f80 (a commit) used 40k tokens",
    "The token is valid. Eleven words later, on the same line, 3f9a1c7e5b2d8f4a6c0e9b7d5f3a1c8e",
    "See https://github.com/a/b/commit/3f9a1c7e5b2d8f4a6c0e9b7d5f3a1c8e2b4d6f80 (token fix)",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_non_secrets_in_these_syntaxes_are_kept(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    "name,kind",
    [
        ("password", "password"), ("db.password", "password"), ("DB_PASSWORD", "password"),
        ("dbpwd", None), ("db_pwd", "password"), ("cwd", None), ("apikey", "secret"),
        ("api key", "secret"), ("x:clientsecret", "secret"), ("github_token", "secret"),
        ("credentials", "secret"), ("monkey", None), ("token_url", None),
        ("password_policy", None), ("hotkey", None), ("password2", "password"),
    ],
)
def test_name_kind(name: str, kind: str | None) -> None:
    assert name_kind(name.lower()) == kind


# No ".", "*" or "-": a dotted value reads as code (CONFIG.key), a "***" run as a mask and
# a leading "-" as a flag, as in `key = value` (tests/test_redact.py covers those).
_VALUE_CHARS = string.ascii_letters + string.digits + "!#%+_~^"


@settings(max_examples=150, deadline=None)
@given(
    value=st.text(_VALUE_CHARS, min_size=12, max_size=40).filter(
        lambda v: any(c.isdigit() for c in v) and any(c.isupper() for c in v)
        and any(c.islower() for c in v)
    ),
    case=st.sampled_from([p for p in POSITIVE if not p[0].startswith("hex")]),
)
def test_no_random_password_survives_any_keyed_syntax(value: str, case: tuple[str, str, str]) -> None:
    """Any value under a password key; a random-looking one under a token/secret/API key.
    Placeholders (``xxxx``, ``your_token``, ...) are kept here as in ``key = value``."""
    _, template, _ = case
    assume(not _is_placeholder(value))
    assume(_looks_random(value) or "pass" in template.lower())
    out = redact(template.format(v=value)).text
    assert value not in out, out


def _stored_texts(db: Path) -> str:
    """Every compressed column of the database, decompressed (a grep of the file misses them)."""
    from memlens.core.store import db as dbm
    from tests.test_purge import PACKED

    conn = dbm.connect(db, readonly=True, migrate=False)
    try:
        return "\n".join(dbm.unpack_text(r[0]) or "" for table, col in PACKED
                         for r in conn.execute(f"SELECT {col}_z FROM {table}"))
    finally:
        conn.close()


def test_keyed_secrets_leave_no_byte_through_the_cli(tmp_path: Path) -> None:
    """Plant every syntax above in a memory file; ingest, edit, ingest again, rechunk and
    search through the real CLI: no value is in the database file, its WAL, a decompressed
    column or any output."""
    mem = tmp_path / "home" / ".claude" / "projects" / "-srv-app" / "memory"
    mem.mkdir(parents=True)
    values = {
        name: (f"{i:02d}" + "a7c3e9f1b5d2" * 3 + "4e") if name.startswith("hex")
        else f"Vq{i:02d}x7Lp!R3mZ8tW"
        for i, (name, _, _) in enumerate(POSITIVE)
    }
    sections = [f"## {name}\n\n{template.format(v=values[name])}\n" for name, template, _ in POSITIVE]
    (mem / "MEMORY.md").write_text("# Index\n\n- [config](config.md) config notes\n")
    (mem / "config.md").write_text("# Config notes\n\n" + "\n".join(sections))
    db = tmp_path / "memlens.db"
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / ".claude")}

    def run(*args: str) -> str:
        r = run_cli(*args, "--db", str(db), "--json", env=env)
        assert r.returncode == 0, r.stderr
        return r.stdout + r.stderr

    outputs = [run("ingest", str(mem))]
    with (mem / "config.md").open("a") as f:
        f.write("\n## later\n\nmore notes\n")
    outputs.append(run("ingest", str(mem)))
    outputs.append(run("rechunk", "--all", "--strategy", "windows"))
    search = run("search", "config notes later")
    outputs.append(search)
    assert json.loads(search)["hits"], "the planted file must be searchable"
    raw = b"".join(Path(str(db) + s).read_bytes() for s in ("", "-wal") if Path(str(db) + s).exists())
    stored = _stored_texts(db)
    assert "[REDACTED:" in stored
    leaked = [n for n, v in values.items()
              if v.encode() in raw or v in stored or any(v in o for o in outputs)]
    assert leaked == []
