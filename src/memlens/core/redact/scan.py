"""Context detectors of `memlens.core.redact.engine`: headers, assignments, flags, fallbacks.

Split out of `memlens.core.redact.rules` (the marker, the value heuristics, the
token rule table and the PEM/URL detectors stay there). These detectors scan a
lowercased copy of the text (`_scan_folded`) or look for long random tokens of
an unknown family (`_scan_random`). Each appends candidate spans
``(start, end, priority, kind)``; `memlens.core.redact.engine` merges and renders them.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
import sys
from collections.abc import Sequence

from memlens.core.redact.keyed import scan_keyed
from memlens.core.redact.rules import (
    _PRIO_GENERIC,
    _PRIO_HEADER,
    _PRIO_SPECIFIC_ASSIGN,
    _WORD_,
    _assignment_value_ok,
    _Candidate,
    _entropy,
    _is_placeholder,
    _looks_fake,
    _looks_random,
    _token_body_ok,
)
from memlens.core.redact.rules_cloud import is_public_example

# Detectors that run on the lowercased text --------------------------------------
# Case-insensitive scanning with re.IGNORECASE is several times slower than a
# case-sensitive scan of a lowercased copy. The copy has the same length, so
# spans map 1:1 and values are read back from the original text.

_AWS_SECRET = re.compile(
    r"secret[_\-.]?(?:access[_\-.]?)?key[\"'`]?\]?[ \t]{0,16}+(?::=|=>|=|:)[ \t]{0,16}+[\"'`]?"
    r"(?P<v>[a-z0-9/+]{40})(?![a-z0-9/+=])"
)
_BEARER = re.compile(r"bearer[ \t]++(?P<v>[a-z0-9._~+/=\-]{8,}+)")
_BASIC = re.compile(r"basic[ \t]++(?P<v>[a-z0-9+/]{8,}+={0,2})(?![a-z0-9+/=])")
_AUTH_HEADER = re.compile(
    r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:token|key|apikey|api-key|sso-key|ssws)[ \t]++"
    r"(?P<v>[^\s\"',;]{8,}+)"
)
_CLI_FLAG = re.compile(
    r"--(?P<key>password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token"
    r"|access-token)[ \t]++(?:\"(?P<dq>[^\"\r\n]{1,1024}+)\"|'(?P<sq>[^'\r\n]{1,1024}+)'"
    r"|(?P<uq>[^\s\"'`-][^\s\"'`]{0,1023}+))"
)
_NETRC = re.compile(
    r"login[ \t]++[^\s]{1,256}+[ \t]++password[ \t]++(?P<v>[^\s]{1,256}+)"
)
# ``curl -u user:pass``: the pair quoted as a whole ("u:p", 'u:p', either side
# empty), or each side bare or quoted on its own (u:'p', "u":"p").
_CURL_USER = re.compile(
    r"-(?<![^ \t\n]-)(?:u|-user)(?:=|[ \t]++)(?:"
    r"\"(?P<du>[^\":\r\n]{0,256}+):(?P<dv>[^\"\r\n]{0,256}+)\"(?![\w:\"'])"
    r"|'(?P<su>[^':\r\n]{0,256}+):(?P<sv>[^'\r\n]{0,256}+)'(?![\w:\"'])"
    r"|(?P<u>\"[^\"\r\n]{1,256}+\"|'[^'\r\n]{1,256}+'|[^\s:\"']{1,256}+)"
    r":(?P<v>\"[^\"\r\n]{1,256}+\"|'[^'\r\n]{1,256}+'|[^\s\"']{1,256}+))"
)
# A credential header given to curl & co: ``-H "Authorization: [scheme] VALUE"``,
# ``--header 'X-Api-Key: VALUE'``, ``-H "Token: VALUE"`` (gitleaks' curl-auth-header).
_HEADER_ARG = re.compile(
    r"-(?<![\w-]-)(?:h|-header)(?:=|[ \t]{1,5}+)[\"']"
    r"(?:authorization:[ \t]{0,5}+(?:(?P<scheme>basic|bearer|(?:api-)?token)[ \t]++)?"
    r"|(?:x-(?:[a-z]+-)?)?(?:api-?)?(?:key|token):[ \t]{0,5}+)"
    r"(?P<v>[a-z0-9_=~@.+/\-]{8,256}+)(?=[\"'])"
)
_BASE64 = re.compile(r"[a-z0-9+/]+={0,3}")
# Generic assignments. The pattern is anchored on a few keyword cores (password,
# secret, token, key, ...) rather than on every "<prefix>_key" spelling, which
# keeps the scan fast; a bare "key" counts only right after one of these
# prefixes (optionally joined by "_", "-", "." or a space): api_key, apiKey,
# x-api-key, secret_key, AccountKey, ... (fixed-width look-behinds).
_KEY_PREFIXES = (
    "api",
    "access",
    "private",
    "secret",
    "signing",
    "encryption",
    "master",
    "account",
    "client",
    "app",
    "auth",
    "license",
    "service",
    "sharedaccess",
)
_AZURE_KEY_PREFIXES = ("account", "sharedaccess")
_KEY_AFTER_PREFIX = "|".join(
    f"(?<={p}key)|(?<={p}[_.\\-\\ ]key)" for p in _KEY_PREFIXES
)
_ASSIGN = re.compile(
    r"""
    (?P<key>
        password | passwd | passphrase
      | pass (?<= [_.\-] pass )   # DB_PASS, smtp-pass; not a bare "PASS:" in test logs
      | pwd (?<! [a-z0-9] pwd )
      | secret_key_base | secret | token
      | key (?: KEY_AFTER_PREFIX )
      | sig (?: nature )?         # only as a URL query parameter
    )
    (?: ["'`] \]? | \] | \*{1,2} | __ )?
    (?:
        (?: [\ \t]* \( [^()\r\n]{0,40} \) )?
        [\ \t]{0,16}+
        (?P<op> :{2,3}= | \?= | := | => | == | = | :(?!:) )
        [\ \t]{0,16}+
        (?: \*\* | __ )?
        [\ \t]{0,16}+
        (?:
            " (?P<dq> (?: [^"\\\r\n] | \\. ){1,4096}+ ) "
          | ' (?P<sq> (?: [^'\\\r\n] | \\. ){1,4096}+ ) '
          | ` (?P<bq> [^`\r\n]{1,4096}+ ) `
          # greedy, not possessive: CPython 3.11.2 (not 3.11.7) mis-matches a possessive
          # repeat of an alternation with a lookahead (it ran past "&user=" on 3.11.2);
          # the two branches are disjoint and nothing follows, so the match is the same
          | (?P<uq> (?: [^\s"'`;,&] | [;,&] (?! \s | $ | [a-z0-9_.\-]+ [=:] ) ){1,4096} )
        )
      # prose: 'the password is `hunter2`', 'API key "..."' (quoted values only)
      | (?: [\ \t]++ (?: is | was ) )? [\ \t]++
        (?: ` (?P<pbq> [^`\r\n]{1,256}+ ) ` | " (?P<pdq> [^"\r\n]{1,256}+ ) " )
    )
    """.replace("KEY_AFTER_PREFIX", _KEY_AFTER_PREFIX),
    re.VERBOSE,
)
_PASSWORD_KEYS = ("pass", "pwd")
# Prose form with an unquoted value: 'the password is hunter2!'.
_PROSE_IS = re.compile(r"(?:password|passwd|passphrase)[ \t]++is[ \t]++(?P<uq>[^\s\"'`]{6,256}+)")
# Passwords given to well-known commands with a short "-p" flag: the regex finds
# " -p", then the text before it on the line must name one of these commands.
_DASH_P = re.compile(r"-p(?<=[ \t]-p)(?P<sp>[ \t]*+)[\"']?(?P<v>[^\s\"'`-][^\s\"'`]{0,255}+)")
_GLUED_P_COMMANDS = re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mariadb|sshpass)\b")
_SPACED_P_COMMANDS = re.compile(
    r"\b(?:(?:docker|podman|nerdctl|buildah|skopeo|helm)[ \t]++(?:registry[ \t]++)?login|sshpass)\b"
)
_COOKIE = re.compile(r"cookie[ \t]*+:[ \t]*+(?P<v>[^\r\n]{1,4096}+)")
_COOKIE_PAIR = re.compile(r"[ \t]*+[^=;\s\"']{1,256}+=(?P<v>[^;\s\"']{1,4096}+)")


def _key_prefix(low: str, pos: int) -> str | None:
    """The secret-ish prefix right before a bare ``key`` at ``pos``, if any."""
    head = low[max(0, pos - 14) : pos]
    if head[-1:] in ("_", "-", ".", " "):
        head = head[:-1]
    for prefix in _KEY_PREFIXES:
        if head.endswith(prefix):
            return prefix
    return None


_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}


def _strip_unquoted(text: str, s: int, e: int) -> int:
    """Drop sentence punctuation and unbalanced closing brackets from a value end."""
    while e > s:
        c = text[e - 1]
        if c in _CLOSERS and _CLOSERS[c] not in text[s : e - 1]:
            e -= 1
        elif c in ".:" and (e == len(text) or text[e].isspace()):
            e -= 1
        elif c in ",;" and e - 1 > s:
            e -= 1
        else:
            break
    return e


def _value_span(m: re.Match[str]) -> tuple[int, int, bool]:
    for name in ("dq", "sq", "bq", "pdq", "pbq"):
        if name in m.re.groupindex and m.start(name) >= 0:
            s, e = m.span(name)
            return s, e, True
    s, e = m.span("uq")
    return s, e, False


def _after_word(low: str, pos: int) -> bool:
    """Whether a match at ``pos`` continues a word (``xbearer``), so is not a keyword."""
    return bool(pos) and low[pos - 1] in _WORD_


def _scan_aws_secrets(text: str, low: str, out: list[_Candidate]) -> None:
    for m in _AWS_SECRET.finditer(low):
        s, e = m.span("v")
        if _token_body_ok(text[s:e]) and _looks_random(text[s:e]):
            out.append((s, e, _PRIO_SPECIFIC_ASSIGN, "aws-secret-key"))


def _scan_bearer(text: str, low: str, out: list[_Candidate]) -> None:
    for m in _BEARER.finditer(low):
        if _after_word(low, m.start()):
            continue
        s, e = m.span("v")
        token = text[s:e]
        if not _is_placeholder(token) and (_looks_random(token) or len(token) >= 32):
            out.append((s, e, _PRIO_HEADER, "bearer-token"))


def _scan_basic(text: str, low: str, out: list[_Candidate]) -> None:
    for m in _BASIC.finditer(low):
        if _after_word(low, m.start()):
            continue
        s, e = m.span("v")
        if _decodes_to_credentials(text[s:e]):
            out.append((s, e, _PRIO_HEADER + 1, "basic-auth"))


def _scan_auth_header(text: str, low: str, out: list[_Candidate]) -> None:
    for m in _AUTH_HEADER.finditer(low):
        s, e = m.span("v")
        if not _is_placeholder(text[s:e]) and _looks_random(text[s:e]):
            out.append((s, e, _PRIO_HEADER + 2, "auth-header"))


def _scan_login_passwords(text: str, low: str, out: list[_Candidate]) -> None:
    """Passwords in ``.netrc`` lines and in ``curl -u user:password``."""
    for m in _NETRC.finditer(low):
        s, e = m.span("v")
        if not _is_placeholder(text[s:e]):
            out.append((s, e, _PRIO_HEADER + 3, "password"))
    for m in _CURL_USER.finditer(low):
        span = _curl_password(text, m)
        if span is not None:
            out.append((*span, _PRIO_HEADER + 3, "password"))


def _unquoted_span(text: str, s: int, e: int) -> tuple[int, int]:
    if e - s >= 2 and text[s] == text[e - 1] and text[s] in "'\"":
        return s + 1, e - 1
    return s, e


def _curl_password(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """The span to redact in a ``curl -u`` match: the password, else a random-looking user.

    ``curl -u "user:"`` prompts for no password, so a user part that looks like
    a password (``-u "d2LkV78zLx!t:"``) is the credential.
    """
    pair = next((g for g in ("d", "s", "") if m.start(f"{g}v") >= 0), "")
    s, e = _unquoted_span(text, *m.span(f"{pair}v"))
    us, ue = _unquoted_span(text, *m.span(f"{pair}u"))
    pw, user = text[s:e], text[us:ue]
    if user.startswith(("$", "<", "{{")) or (not pw and not user):
        return None  # "$1:$2", "<user:password>", "{{ .Values.user }}:..."
    if not pw:
        strong = len(user) >= 8 and not user.isalnum() and any(c.isdigit() for c in user)
        return (us, ue) if strong and not _is_placeholder(user) else None
    braced = pw.startswith("{") and pw.endswith("}") and _looks_random(pw[1:-1])
    if pw.isdigit() or (_is_placeholder(pw) and not braced) or pw.startswith(("$", "{{")):
        return None  # "{password}" is a template, "{ZqL5kVrX1n8tA2}" a password
    if pw.lower() == user.lower():
        return None  # "test:test"
    return s, e


def _scan_header_args(text: str, low: str, out: list[_Candidate]) -> None:
    """Values of credential headers passed with ``-H``/``--header`` (curl, httpie, wget)."""
    for m in _HEADER_ARG.finditer(low):
        s, e = m.span("v")
        value = text[s:e]
        if m.group("scheme") == "basic" and not _BASE64.fullmatch(m.group("v")):
            continue  # "Basic eyJ...": not base64 user:password
        if _is_placeholder(value) or _looks_fake(value, runs=False) or _entropy(value) <= 2.75:
            continue
        out.append((s, e, _PRIO_HEADER + 2, "auth-header"))


def _scan_dash_p(text: str, low: str, out: list[_Candidate]) -> None:
    """``-p PASSWORD`` / ``-pPASSWORD`` given to the commands known to take one."""
    for m in _DASH_P.finditer(low):
        head = low[low.rfind("\n", 0, m.start()) + 1 : m.start()]
        commands = _SPACED_P_COMMANDS if m.group("sp") else _GLUED_P_COMMANDS
        if not commands.search(head):
            continue
        s, e = m.span("v")
        e = _strip_unquoted(text, s, e)
        if e > s and text[e - 1 : e] in ("'", '"'):
            e -= 1
        if e > s and not _is_placeholder(text[s:e]) and not text[s:e].startswith("$"):
            out.append((s, e, _PRIO_HEADER + 3, "password"))


def _scan_cookies(text: str, low: str, out: list[_Candidate]) -> None:
    for m in _COOKIE.finditer(low):
        if _after_word(low, m.start()):
            continue
        for pair in _COOKIE_PAIR.finditer(low, m.start("v"), m.end("v")):
            s, e = pair.span("v")
            if _looks_random(text[s:e]) and not _is_placeholder(text[s:e]):
                out.append((s, e, _PRIO_HEADER + 4, "cookie"))


def _scan_prose_passwords(text: str, low: str, out: list[_Candidate]) -> None:
    """'the password is hunter2!' (an unquoted value after "is")."""
    for m in _PROSE_IS.finditer(low):
        s, e = m.span("uq")
        e = _strip_unquoted(text, s, e)
        value = text[s:e]
        if not value.isalpha() and _assignment_value_ok(text, s, e, password=True, quoted=False):
            out.append((s, e, _PRIO_GENERIC + 2, "password"))


def _scan_cli_flags(text: str, low: str, out: list[_Candidate]) -> None:
    for m in _CLI_FLAG.finditer(low):
        s, e, quoted = _value_span(m)
        if not quoted:
            link = low.find("](", s, e)  # a badge: [![x](...?token=VALUE)](https://...)
            e = _strip_unquoted(text, s, link if link >= 0 else e)
            if text.startswith("{", s) and "}" not in text[s:e]:
                continue  # a type in API docs: "`passphrase`: {string | Buffer}"
        is_pw = m.group("key").startswith(_PASSWORD_KEYS)
        if e > s and _assignment_value_ok(text, s, e, password=is_pw, quoted=quoted):
            out.append((s, e, _PRIO_GENERIC, "password" if is_pw else "secret"))


def _signature_kind(m: re.Match[str], low: str) -> str | None:
    """``url-signature`` for ``?sig=``/``&signature=`` query parameters, else None."""
    ks = m.start("key")
    before = low[max(0, ks - 6) : ks]
    if not (before[-1:] in ("?", "&", ";") or before.endswith(("x-amz-", "x-goog-"))):
        return None
    if m.group("op") != "=":
        return None
    return "url-signature"


def _assignment_kind(m: re.Match[str], text: str, low: str, s: int) -> str | None:
    """The kind an `_ASSIGN` match names (value starting at ``s``), or None to skip it."""
    key = m.group("key")
    prose = m.group("op") is None
    if prose and (key.startswith("sig") or text[s : s + 1] == "-"):
        return None  # signatures only as URL parameters; "-x" is a flag
    if key.startswith("sig"):
        return _signature_kind(m, low)
    if key == "token" and low.endswith("x-amz-security-", 0, m.start("key")):
        return "url-signature"
    if key == "key":
        if m.group("op") == "=" and _key_prefix(low, m.start("key")) in _AZURE_KEY_PREFIXES:
            return "azure-key"
        return "secret"
    if key.startswith(_PASSWORD_KEYS):
        if key == "pwd" and text[s : s + 1] in ("/", "~"):
            return None  # the shell's $PWD
        return "password"
    return "secret"


def _scan_assignments(
    text: str, low: str, markers: Sequence[tuple[int, int]], out: list[_Candidate]
) -> None:
    """``key = value``, ``key: value`` and 'the key is "value"' for secret-ish keys."""
    for m in _ASSIGN.finditer(low):
        if _inside(markers, m.start("key")):
            continue
        s, e, quoted = _value_span(m)
        if not quoted:
            link = low.find("](", s, e)  # a badge: [![x](...?token=VALUE)](https://...)
            e = _strip_unquoted(text, s, link if link >= 0 else e)
            if text.startswith("{", s) and "}" not in text[s:e]:
                continue  # a type in API docs: "`passphrase`: {string | Buffer}"
        kind = _assignment_kind(m, text, low, s)
        if kind is None:
            continue
        if e > s and _assignment_value_ok(text, s, e, password=kind == "password", quoted=quoted):
            specific = kind in ("azure-key", "url-signature")
            out.append((s, e, _PRIO_SPECIFIC_ASSIGN + 1 if specific else _PRIO_GENERIC + 1, kind))


def _scan_folded(
    text: str,
    low: str,
    markers: Sequence[tuple[int, int]],
    out: list[_Candidate],
    hexes: Sequence[tuple[int, int]] = (),
) -> None:
    """Run every lowercased-text detector, in priority order, on ``low`` (= ``text.lower()``).

    ``markers`` are the spans of markers already in the text: an assignment whose
    key lies inside one is not a new secret. ``hexes`` are the hex tokens
    `_scan_random` saw.
    """
    _scan_aws_secrets(text, low, out)
    _scan_bearer(text, low, out)
    _scan_basic(text, low, out)
    _scan_auth_header(text, low, out)
    _scan_login_passwords(text, low, out)
    _scan_header_args(text, low, out)
    _scan_dash_p(text, low, out)
    _scan_cookies(text, low, out)
    _scan_prose_passwords(text, low, out)
    _scan_cli_flags(text, low, out)
    _scan_assignments(text, low, markers, out)
    scan_keyed(text, low, out, hexes)


def _decodes_to_credentials(blob: str) -> bool:
    try:
        raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    user, sep, pw = decoded.partition(":")
    return bool(sep and user and pw) and decoded.isprintable()


def _inside(spans: Sequence[tuple[int, int]], pos: int) -> bool:
    i = bisect.bisect_right(spans, (pos, sys.maxsize)) - 1
    return i >= 0 and spans[i][0] <= pos < spans[i][1]


# Fallback: long random tokens of an unknown family ----------------------------

_PRIO_RANDOM = 95
_RANDOM_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_\-+/=.~])[A-Za-z0-9][A-Za-z0-9_\-~]{23,511}+(?![A-Za-z0-9_\-+/=.@~])"
)
_SEPARATORS = re.compile(r"[_\-~]")
_LOWER_HEX = frozenset("0123456789abcdef")
_UPPER_HEX = frozenset("0123456789ABCDEF")


def _is_digest(part: str) -> bool:
    """Hex in one case (a printed digest); mixed-case hex is a generated token."""
    return _LOWER_HEX.issuperset(part) or _UPPER_HEX.issuperset(part)
# Runs that read as words in an identifier: "handle", "Callback", "User".
_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}")


def _random_enough(tok: str) -> bool:
    """The `_scan_random` test for one candidate token."""
    if not (any(c.isupper() for c in tok) and any(c.islower() for c in tok)):
        return False
    if "example" in tok.lower() or is_public_example(tok):
        return False  # AWS's documented AKIAIOSFODNN7EXAMPLE style, Firebase SDK keys
    digits = sum(c.isdigit() for c in tok)
    if len(tok) < 32:  # short: stricter, so that identifiers stay (handleOAuth2Callback)
        words = sum(len(w) for w in _WORDISH.findall(tok))
        if digits < 2 or _entropy(tok) < 3.8 or words * 5 >= len(tok) * 2:
            return False
        longest = 10
    else:
        if digits < 2 or _entropy(tok) < 4.0:
            return False
        longest = 16
    parts = [p for p in _SEPARATORS.split(tok) if p]
    long_parts = [p for p in parts if len(p) >= longest]
    if not long_parts or all(_is_digest(p) for p in long_parts):
        return False  # a name around a hex digest: NODE_SEA_FUSE_<32 hex>
    return not _looks_fake(tok)


def _scan_random(text: str, fast: str, out: list[_Candidate]) -> list[tuple[int, int]]:
    """Standalone tokens of 24+ characters mixing upper case, lower case and digits.

    Hex-only runs (git SHAs, digests) and identifiers made of words
    (``snake_case_names``, ``kebab-case-slugs``) are kept: one ``_``/``-``
    separated part must be long (16+, or 10+ for a token under 32 characters),
    and the whole needs entropy >= 4. A token under 32 characters needs entropy
    >= 3.8 and less than 40% of it in word-like runs (``[A-Z]?[a-z]{3,}``).

    Returns:
        The spans of the 32-, 40- and 64-digit hex tokens seen (kept here), for
        `memlens.core.redact.keyed`'s check of hex after a cue word.
    """
    hexes: list[tuple[int, int]] = []
    for m in _RANDOM_TOKEN.finditer(fast):
        tok = text[m.start() : m.end()]
        if not _random_enough(tok):
            if len(tok) in (32, 40, 64) and _is_digest(tok):
                hexes.append(m.span())
            continue
        s, e = m.span()
        if e - s >= 60 and (s == 0 or fast[s - 1] == "\n") and (e == len(fast) or fast[e] == "\n"):
            continue  # a whole 64/76-column line: base64 body (certificate, key, blob)
        out.append((s, e, _PRIO_RANDOM, "random-token"))
    return hexes


# Azure AD client secrets: three characters, a digit, "Q~", then 31-34 more ------

_AZURE_INFIX = re.compile(r"Q~(?<=\dQ~)")  # literal first: the scan stays fast
_AZURE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_~.-")
_AZURE_SECRET = re.compile(r"[A-Za-z0-9_~.]{3}\dQ~(?P<tail>[A-Za-z0-9_~.\-]{31,35}+)")


def _scan_azure_client_secrets(text: str, fast: str, out: list[_Candidate]) -> None:
    """``abc8Q~...`` client secrets of Azure AD (Entra ID) app registrations.

    The shape is fixed by Azure (gitleaks' ``azure-ad-client-secret`` rule): the
    ``Q~`` after the fourth character is what makes it recognisable in prose.
    """
    for hit in _AZURE_INFIX.finditer(fast):
        s = hit.start() - 4
        if s < 0 or (s > 0 and fast[s - 1] in _AZURE_CHARS):
            continue
        m = _AZURE_SECRET.match(fast, s)
        if m is None:
            continue
        e = m.end()
        if e < len(fast) and fast[e] in _AZURE_CHARS:
            continue  # part of a longer run
        while e > m.start("tail") and fast[e - 1] == ".":
            e -= 1  # the full stop that ends a sentence
        if 31 <= e - m.start("tail") <= 34 and _token_body_ok(text[s:e]):
            out.append((s, e, _PRIO_SPECIFIC_ASSIGN - 1, "azure-client-secret"))


# The same secret again -------------------------------------------------------------

_REPEAT_MIN = 8
_REPEAT_BUDGET = 500_000_000  # characters searched at most (text length x values)
_TOKEN_EDGE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def scan_repeats(text: str, found: Sequence[tuple[int, int, str]], out: list[_Candidate]) -> None:
    """Every other whole-token occurrence of a secret already found (8+ characters, not
    letters only): ``token = 'X' | 'X'``, or the value pasted again on a line of its own
    without its key. Searched with ``str.find`` while text length times distinct values
    stays within :data:`_REPEAT_BUDGET` (a huge text with thousands of secrets skips it)."""
    values: dict[str, str] = {}
    for s, e, kind in found:
        v = text[s:e]
        if len(v) >= _REPEAT_MIN and not v.isalpha() and "\n" not in v:
            values.setdefault(v, kind)
    if not values or len(text) * len(values) > _REPEAT_BUDGET:
        return
    n = len(text)
    for v, kind in values.items():
        pos = text.find(v)
        while pos >= 0:
            end = pos + len(v)
            if (pos == 0 or text[pos - 1] not in _TOKEN_EDGE) and \
                    (end == n or text[end] not in _TOKEN_EDGE):
                out.append((pos, end, _PRIO_RANDOM + 4, kind))
            pos = text.find(v, end)
