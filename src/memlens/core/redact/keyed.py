"""Keyed syntaxes beyond ``key = value``: XML, key/value pairs, typed declarations, tables.

`memlens.core.redact.scan._ASSIGN` finds a secret-ish key followed by an
operator and a value. Many formats name the key and the value apart instead;
this module finds those (issue 16), on the lowercased copy of the text that
`redact_scan._scan_folded` already builds:

* XML elements: ``<password>VALUE</password>``, ``<db:apiKey>VALUE</db:apiKey>``;
* key/value pairs: ``<add key="ApiKey" value="VALUE"/>`` (.NET), ``<property
  name="db.password" value="VALUE"/>`` (Spring), ``{"name": "API_TOKEN", "value":
  "VALUE"}`` and the Kubernetes ``- name: DB_PASSWORD`` / ``value: VALUE`` lines;
* calls with the key and the value as the first two string arguments:
  ``System.setProperty("db.password", "VALUE")``, ``os.Setenv("API_TOKEN", "VALUE")``,
  ``define('DB_PASSWORD', 'VALUE')``;
* typed declarations: Go ``var apiKey string = "VALUE"``, TypeScript ``const apiKey:
  string = "VALUE"``, Kotlin ``val dbPassword: String = "VALUE"``;
* YAML block scalars: ``password: |`` with the value on the indented lines below;
* Markdown table cells: a column headed ``Password``/``Token``/``API key``, or a row
  whose first cell is such a key (``| DB_PASSWORD | VALUE |``);
* 32-64 digit hex in prose a few words after ``token``/``secret``/``API key``/
  ``password`` when nothing near it says commit, hash or digest.

A key is secret-ish when its last word is password/passwd/passphrase/pwd,
secret, token or credential(s), or ``key`` after one of
`redact_scan._KEY_PREFIXES` (``apiKey``, ``ACCESS_KEY``, ``client-key``);
``token_url`` or ``password_policy`` are not. Values go through the same checks as
assignments (placeholders, code references, paths, template variables).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memlens.core.redact.keyed_vendors import scan_vendor_keyed
from memlens.core.redact.rules import (
    _PRIO_GENERIC,
    _assignment_value_ok,
    _Candidate,
    _looks_fake,
    _looks_random,
)

_PRIO_KEYED = _PRIO_GENERIC + 1  # as `redact_scan`'s assignments
# A table cell or a hex token named only by its context: any detector that also
# matched it (a token rule, the random-token fallback) names it.
_PRIO_CONTEXT = 97

# The last word of a key name, lowercased (camelCase is folded: "apikey").
_NAME_END = re.compile(
    r"(?:(?P<pw>password|passwd|passphrase|pwd)|(?P<sec>secret|token|credentials?)"
    r"|(?P<pre>[a-z]+)[_.\- ]?key)s?[0-9]{0,2}$"
)
_KEY_PREFIXES = frozenset(
    {
        "api", "access", "private", "secret", "signing", "encryption", "master", "account",
        "client", "app", "auth", "license", "service", "sharedaccess", "subscription",
        "consumer", "webhook", "secretaccess", "storage", "deploy", "admin",
    }
)  # fmt: skip
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def _name_start(low: str, end: int) -> int:
    """Where the identifier that ends at ``end`` in ``low`` starts."""
    while end > 0 and low[end - 1] in _NAME_CHARS:
        end -= 1
    return end


def name_kind(name: str) -> str | None:
    """``"password"``, ``"secret"`` or None for a lowercased key name such as ``db.password``."""
    name = name.strip(" \t*`'\"_")
    name = name.rsplit(":", 1)[-1]  # an XML namespace
    m = _NAME_END.search(name)
    if m is None:
        return None
    if m.group("pw"):
        if m.group("pw") == "pwd" and m.start() > 0 and name[m.start() - 1].isalnum():
            return None  # "cwd", "oldpwd"... only "pwd", "db_pwd", "dbPwd"
        return "password"
    if m.group("sec"):
        return "secret"
    pre = m.group("pre")
    return "secret" if any(pre.endswith(p) for p in _KEY_PREFIXES) else None


# A reference filled in elsewhere: $VAR, ${VAR}, $(cmd), {{ x }}, %VAR%, %(x)s, <x>, #{x}, @x@.
_TEMPLATE = re.compile(
    r"\$\{?[A-Za-z_][\w.:\-]*\}?|\$\(.*\)|\$\{.*\}|\{\{.*\}\}|%[A-Za-z_]\w*%|%\(\w+\)[sd]"
    r"|<[^<>]*>|#\{.*\}|@[A-Za-z_][\w.]*@?"
)


def _value_ok(value: str, kind: str) -> bool:
    """Whether a value found under a secret-ish key is a credential, not a template or a word."""
    v = value.strip()
    if not v or _TEMPLATE.fullmatch(v):
        return False
    return _assignment_value_ok(v, 0, len(v), password=kind == "password", quoted=True)


def _add(out: list[_Candidate], text: str, s: int, e: int, kind: str) -> None:
    while s < e and text[s] in " \t":
        s += 1
    while e > s and text[e - 1] in " \t\r":
        e -= 1
    if e > s and _value_ok(text[s:e], kind):
        out.append((s, e, _PRIO_KEYED, kind))


# XML elements: found from the closing tag, whose name is checked first -------------

_CLOSE_TAG = re.compile(r"</(?P<tag>[a-z_][a-z0-9_.:\-]{0,79}+)>")


def _scan_xml_elements(text: str, low: str, out: list[_Candidate]) -> None:
    for m in _CLOSE_TAG.finditer(low):
        tag = m.group("tag")
        kind = name_kind(tag)
        if kind is None:
            continue
        # the opening tag on the same line, or two lines up with the value alone on
        # the line between (``<token>`` newline value newline ``</token>``)
        line = low.rfind("\n", 0, m.start()) + 1
        multi = not low[line : m.start()].strip(" \t") and line > 0
        if multi:
            line = low.rfind("\n", 0, low.rfind("\n", 0, line - 1)) + 1
        opening = low.rfind("<" + tag, line, m.start())
        if opening < 0:
            continue
        gt = low.find(">", opening, m.start())
        if gt < 0 or low[opening + 1 + len(tag)] not in "> \t" or low[gt - 1] == "/":
            continue
        if "<" in low[gt + 1 : m.start()]:
            continue  # nested elements, not a value
        s, e = gt + 1, m.start()
        if multi:
            inner = low[s:e]
            if not inner.startswith(("\n", "\r\n")) or inner.strip().count("\n"):
                continue  # the value must be one line of its own
            s += len(inner) - len(inner.lstrip())
            e -= len(inner) - len(inner.rstrip())
        _add(out, text, s, e, kind)


# key/value pairs: .NET appSettings, Spring properties, Kubernetes env ------------

_PAIR = re.compile(
    r"(?<![a-z0-9_])(?:key|name)[\"']?[ \t]*[=:][ \t]*(?P<q1>[\"']?)"
    r"(?P<k>[a-z_][a-z0-9_.\-]{0,79}+)(?P=q1)[ \t]*,?[ \t]*(?:\r?\n[ \t]*)?"
    r"[\"']?value[\"']?[ \t]*[=:][ \t]*"
    r"(?:\"(?P<dq>[^\"\r\n]{1,1024}+)\"|'(?P<sq>[^'\r\n]{1,1024}+)'"
    r"|(?P<uq>[^\s\"'<>,}\]]{1,1024}+))"
)


_VALUE_KEY = re.compile(r"value[\"']?[ \t]*[=:]")


def _pair_at(low: str, ws: int, v: int) -> re.Match[str] | None:
    """The `_PAIR` match that starts at a ``key``/``name`` in ``low[ws:v]`` and covers ``v``."""
    for word in ("key", "name"):
        pos = low.find(word, ws, v)
        while pos >= 0:
            m = _PAIR.match(low, pos)
            if m is not None and m.start() < v < m.end():
                return m
            pos = low.find(word, pos + 1, v)
    return None


def _scan_pairs(text: str, low: str, out: list[_Candidate]) -> None:
    done = -1
    for v in _VALUE_KEY.finditer(low):
        if v.start() < done:
            continue
        line = low.rfind("\n", 0, v.start())
        line = low.rfind("\n", 0, line) + 1 if line > 0 else 0  # the line above too
        m = _pair_at(low, max(line, v.start() - 200), v.start())
        if m is None:
            continue
        done = m.end()
        kind = name_kind(m.group("k"))
        if kind is None:
            continue
        group = next(g for g in ("dq", "sq", "uq") if m.start(g) >= 0)
        _add(out, text, *m.span(group), kind)


# calls: f("db.password", "VALUE") --------------------------------------------------

_CALL = re.compile(
    r"\([ \t]*(?P<q1>[\"'])(?P<k>[a-z_][a-z0-9_.\-]{0,79}+)(?P=q1)[ \t]*,[ \t]*"
    r"(?:\"(?P<dq>(?:[^\"\\\r\n]|\\.){1,1024}+)\"|'(?P<sq>(?:[^'\\\r\n]|\\.){1,1024}+)')"
    r"[ \t]*[),]"
)


_SETTER = re.compile(
    r"(?:set|put|env|define|add|config|store|save|header|propert|param|option|secret|cred"
    r"|keychain|keyring|write|update|insert|register|with)[a-z0-9_]*$"
)


def _scan_calls(text: str, low: str, out: list[_Candidate]) -> None:
    for m in _CALL.finditer(low):
        kind = name_kind(m.group("k"))
        if kind is None:
            continue
        if not _SETTER.search(low, _name_start(low, m.start()), m.start()):
            continue  # scrypt('password', 'salt'): the password is the argument itself
        _add(out, text, *m.span("dq" if m.start("dq") >= 0 else "sq"), kind)


# typed declarations: var apiKey string = "VALUE", const apiKey: string = "VALUE" --

_TYPED_EQ = re.compile(r"=(?<![=!<>:+\-*/%&|^?]=)(?![=>~])[ \t]*[\"'`]")
_TYPED_HEAD = re.compile(
    r"(?:password|passwd|passphrase|pwd|secret|token|credentials?|key)[0-9]{0,2}"
    r"(?P<type>[ \t]*\??:[ \t]*[a-z_][a-z0-9_.<>\[\]?|]{0,40}+|[ \t]++[a-z_*\[\]][a-z0-9_.\[\]*]{0,40}+)"
    r"[ \t]*$"
)
_TYPED_VALUE = re.compile(
    r"=[ \t]*(?:\"(?P<dq>(?:[^\"\\\r\n]|\\.){1,1024}+)\"|'(?P<sq>(?:[^'\\\r\n]|\\.){1,1024}+)'"
    r"|`(?P<bq>[^`\r\n]{1,1024}+)`)"
)
_CORES = ("pass", "pwd", "secret", "token", "credential", "key")


def _scan_typed(text: str, low: str, out: list[_Candidate]) -> None:
    """Found from each ``= "``: the declaration must end right before it, on its line."""
    for eq in _TYPED_EQ.finditer(low):
        line = low.rfind("\n", 0, eq.start()) + 1
        head_s = max(line, eq.start() - 120)
        segment = low[head_s : eq.start()]
        if not any(core in segment for core in _CORES):
            continue
        m = _TYPED_HEAD.search(low, head_s, eq.start())
        value = _TYPED_VALUE.match(low, eq.start()) if m is not None else None
        if m is None or value is None:
            continue
        end = m.start("type")
        kind = name_kind(low[_name_start(low, end) : end])
        if kind is None or m.group("type").strip(" \t?:") in ("is", "was", "and", "or", "not"):
            continue
        group = next(g for g in ("dq", "sq", "bq") if value.start(g) >= 0)
        _add(out, text, *value.span(group), kind)


# YAML block scalars: password: |  (value on the indented lines below) -------------

_YAML_KEY = re.compile(r"[a-z0-9_.\-]{1,80}")
_BLOCK = re.compile(r":[ \t]*[|>][+\-]?[1-9]?[+\-]?[ \t]*(?:#[^\r\n]*)?(?=\r?\n)")


def _scan_yaml_blocks(text: str, low: str, out: list[_Candidate]) -> None:
    for m in _BLOCK.finditer(low):
        line = low.rfind("\n", 0, m.start()) + 1
        head = low[line : m.start()]
        key = head.strip().lstrip("-").strip().strip("\"'")
        kind = name_kind(key)
        if kind is None or not _YAML_KEY.fullmatch(key):
            continue
        indent = len(head) - len(head.lstrip(" \t"))
        pos = low.find("\n", m.end()) + 1
        start = end = -1
        while pos < len(low):
            nl = low.find("\n", pos)
            nl = len(low) if nl < 0 else nl
            row = low[pos:nl]
            if row.strip():
                if len(row) - len(row.lstrip(" \t")) <= indent:
                    break
                if start < 0:
                    start = pos + len(row) - len(row.lstrip(" \t"))
                end = nl
            pos = nl + 1
        if start < 0:
            continue
        lines = [r.strip() for r in text[start:end].splitlines() if r.strip()]
        if len(lines) == 1:
            _add(out, text, start, end, kind)
        elif kind == "password" or any(_looks_random(r) for r in lines):
            out.append((start, end, _PRIO_KEYED, kind))


# Markdown tables ---------------------------------------------------------------------

_SEPARATOR_ROW = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*(?=\r?\n|$)")
_SEPARATOR_HINT = re.compile(r"\|[ \t]*:?-")
_WORDS = frozenset(
    {"yes", "no", "none", "required", "optional", "true", "false", "unset", "empty",
     "redacted", "hidden", "masked", "secret", "random", "generated", "rotated"}
)  # fmt: skip


def _cells(text: str, s: int, e: int) -> list[tuple[int, int]]:
    """Cell spans (without the pipes) of the table row ``text[s:e]``."""
    row = text[s:e]
    lead = len(row) - len(row.lstrip(" \t"))
    body_s = s + lead + (1 if row.lstrip(" \t").startswith("|") else 0)
    stripped = row.rstrip(" \t\r")
    body_e = s + len(stripped) - (1 if stripped.endswith("|") and len(stripped) > lead + 1 else 0)
    spans: list[tuple[int, int]] = []
    pos = body_s
    for i in range(body_s, body_e):
        if text[i] == "|" and text[i - 1] != "\\":
            spans.append((pos, i))
            pos = i + 1
    spans.append((pos, body_e))
    return spans


def _cell_value(text: str, s: int, e: int, kind: str, out: list[_Candidate]) -> None:
    while s < e and text[s] in " \t":
        s += 1
    while e > s and text[e - 1] in " \t":
        e -= 1
    if e - s >= 2 and text[s] == text[e - 1] == "`":
        s, e = s + 1, e - 1
    value = text[s:e]
    if not value or any(c.isspace() for c in value) or value.lower().strip("*_") in _WORDS:
        return
    if kind == "password":
        if len(value) < 4 or (value.isalpha() and not _looks_random(value)) or _looks_fake(value):
            return
    elif not _looks_random(value):
        return
    if _value_ok(value, kind):
        out.append((s, e, _PRIO_CONTEXT, kind))


def _scan_tables(text: str, low: str, out: list[_Candidate]) -> None:
    if "|" not in low:
        return
    next_line = 0
    for hint in _SEPARATOR_HINT.finditer(low):
        if hint.start() < next_line:
            continue
        line = low.rfind("\n", 0, hint.start()) + 1
        next_line = low.find("\n", hint.end())
        next_line = len(low) if next_line < 0 else next_line
        sep = _SEPARATOR_ROW.match(low, line)
        if sep is None or sep.start() == 0:
            continue
        head_e = sep.start() - 1
        head_s = low.rfind("\n", 0, head_e) + 1
        headers = [name_kind(low[s:e].strip()) for s, e in _cells(low, head_s, head_e)]
        columns = {i: k for i, k in enumerate(headers) if k}
        pos = sep.end() + 1
        while pos < len(low):
            nl = low.find("\n", pos)
            nl = len(low) if nl < 0 else nl
            if "|" not in low[pos:nl]:
                break
            cells = _cells(low, pos, nl)
            for i, kind in columns.items():
                if i < len(cells):
                    _cell_value(text, *cells[i], kind, out)
            if len(cells) >= 2 and 0 not in columns:
                first = low[cells[0][0] : cells[0][1]].strip().strip("`*")
                kind2 = name_kind(first) if len(first) <= 60 else None
                if kind2 is not None:
                    _cell_value(text, *cells[1], kind2, out)
            pos = nl + 1


# hex tokens in prose -------------------------------------------------------------

_HEX_CUE = re.compile(
    r"(?<![a-z0-9_./\-])(?:token|secret|api[ _\-]?key|access[ _\-]?key|password|passwd|credential|oauth"
    r"|bearer)s?(?![a-z0-9_./\-])"
)
_HEX_ANTI_CUE = re.compile(
    r"(?<![a-z])(?:commits?|sha[0-9]*|hash(?:es|ed)?|digests?|checksums?|revision|rev|merged?|reverts?"
    r"|reverted|fix(?:ed)?|landed|tags?|md5|blob|tree|id|uuid|build|version|fingerprint|nonce|salt"
    r"|iv|seed|block|tx|transaction|object|etag|integrity|cid|pr|pull|branch|ref|head)(?![a-z])"
)


def _scan_prose_hex(
    text: str, low: str, hexes: Sequence[tuple[int, int]], out: list[_Candidate]
) -> None:
    """32/40/64-digit hex tokens (found by `redact_scan._scan_random`) a few words after a cue."""
    for s, e in hexes:
        value = low[s:e]
        if value.isdigit() or value.isalpha() or _looks_fake(value, runs=False):
            continue
        if s and low[s - 1] in "#@:=":
            continue  # an anchor, a commit ref, key=value (the assignment scan's)
        line = low.rfind("\n", 0, s) + 1
        before = low[max(line, s - 64) : s]
        cues = [c.end() for c in _HEX_CUE.finditer(before)]
        if not cues or len(before[cues[-1] :].split()) > 4:
            continue
        after = low[e : e + 24].split("\n", 1)[0]
        if not (_HEX_ANTI_CUE.search(before) or _HEX_ANTI_CUE.search(after)):
            out.append((s, e, _PRIO_CONTEXT, "secret"))


def scan_keyed(
    text: str, low: str, out: list[_Candidate], hexes: Sequence[tuple[int, int]] = ()
) -> None:
    """Append the candidates of every detector above (``low`` = ``text`` lowercased).

    ``hexes`` are the spans of the 32/40/64-digit hex tokens in the text.
    """
    if "</" in low:
        _scan_xml_elements(text, low, out)
    if "value" in low:
        _scan_pairs(text, low, out)
    if "(" in low:
        _scan_calls(text, low, out)
    _scan_typed(text, low, out)
    _scan_yaml_blocks(text, low, out)
    _scan_tables(text, low, out)
    if hexes:
        _scan_prose_hex(text, low, hexes, out)
    scan_vendor_keyed(text, low, out)
