"""Detection rules for `memlens.core.redact.engine`: markers, value heuristics and detectors.

Split out of ``redact.py`` to keep it short; the public API stays in
`memlens.core.redact.engine`. Every detector appends candidate spans
``(start, end, priority, kind)``; `memlens.core.redact.engine` merges and renders them.
The detectors that scan the lowercased text (headers, assignments, command-line
flags) and the random-token fallback live in `memlens.core.redact.scan`, the
prose entropy fallback in `memlens.core.redact.entropy`, and the vendor-prefixed
token rules in family modules put together by `memlens.core.redact.rules_tokens`
(`redact_rules_cloud`, `redact_rules_dev`, `redact_rules_saas`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

MARKER_PREFIX = "[REDACTED:"
#: Matches a marker produced by `redact`.
MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9-]{1,40}\]")


def marker(kind: str) -> str:
    """Return the marker text that replaces a secret of ``kind``.

    Args:
        kind: One of `KINDS`.

    Returns:
        ``[REDACTED:<kind>]``.
    """
    return f"{MARKER_PREFIX}{kind}]"


@dataclass(frozen=True, slots=True)
class Finding:
    """One redacted secret.

    Attributes:
        kind: The marker kind (see the module docstring).
        start: Offset of the first redacted character in the input text.
        end: Offset just past the last redacted character in the input text.
    """

    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class RedactionResult:
    """Output of `redact`.

    Attributes:
        text: The input with every secret replaced by its marker.
        findings: The secrets found, in input order, non-overlapping.
    """

    text: str
    findings: tuple[Finding, ...] = ()

    @property
    def redacted(self) -> bool:
        """Whether anything was replaced."""
        return bool(self.findings)


# --------------------------------------------------------------------------
# Value heuristics
# --------------------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset(
    {
        "",
        "str",
        "string",
        "bytes",
        "int",
        "integer",
        "bool",
        "boolean",
        "number",
        "any",
        "object",
        "secretstr",
        "secretbytes",
        "optional",
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "required",
        "empty",
        "unset",
        "hidden",
        "masked",
        "redacted",
        "omitted",
        "n/a",
        "na",
        "tbd",
        "todo",
        "secret",
        "secrets",
        "password",
        "passwd",
        "pass",
        "pwd",
        "token",
        "apikey",
        "api_key",
        "changeme",
        "placeholder",
        "example",
        "default",
        "dummy",
        "value",
        "env",
        "auto",
        "generated",
        "random",
        "text",
        "char",
        "varchar",
    }
)

_PLACEHOLDER_RE = re.compile(
    r"""
      ^ \$\{ [^}]* \}? $                      # ${VAR}
    | ^ \$\( .* $                             # $(command)
    | ^ \$\{\{ .* $                           # ${{ secrets.X }}
    | ^ \$ [A-Z_][A-Z0-9_]* $                 # $VAR
    | ^ \$ [a-z_]+ $                          # $token
    | ^ % [A-Za-z_][A-Za-z0-9_]* % $          # %VAR%
    | ^ %(?:\([^)]*\))? [sdr] $               # %s, %(password)s
    | ^ < [^<>]* >? $                         # <your-token>
    | ^ \{ .* \} $                            # {password}, {{ token }}
    | ^ \[ .* $                               # [REDACTED], [link](...)
    | ^ ! [A-Za-z]+ $                         # YAML tags: !vault, !Ref
    | ^ @ [A-Za-z.]+ \(                       # @Microsoft.KeyVault(...)
    | ^ [*\u2022x#.?_-]+ $                    # ****, xxx, ---
    | ^ (.) \1{2,} $                          # yyy, 0000
    | \*\*\* | \.\.\. | \u2026 | \u2022       # masked or truncated
    | ^ <? your                               # YOUR_API_KEY, your-token
    | example | placeholder | redacted | dummy
    | change[_-]?me
    | (?: ^ | [_\-.\ ] ) here $               # token-goes-here
    | ^ (?: insert | replace | put | enter ) [_\-\ ]
    | replace[_-]?me
    | xxxx
    """,
    re.IGNORECASE | re.VERBOSE,
)

_CODE_REF_RE = re.compile(
    r"""
      # config.password, settings.DB_PASSWORD (one case per segment, so that a
      # password such as "my.Secret9" is not mistaken for code)
      ^ (?: [a-z_][a-z0-9_]* | [A-Z_][A-Z0-9_]* ) (?: \. (?: [a-z_][a-z0-9_]* | [A-Z_][A-Z0-9_]* ) )+ $
    | ^ [A-Za-z_][A-Za-z0-9_.]* [(\[]                                  # call(...), x[...]
    | environ | getenv | process\.env | secrets\. | vault:
    """,
    re.VERBOSE,
)

_PATH_RE = re.compile(
    r"""
      ^ (?: ~ | \.{1,2} )? / (?: home | users | etc | var | run | tmp | opt | usr | mnt
                              | srv | root | dev | private | workspace | secrets ) (?: / | $ )
    | ^ (?: ~ | \.{1,2} ) /
    | ^ (?: ~ | \.{1,2} )? / (?: [\w.\-]+ / )* [\w\-]+ \. [A-Za-z0-9]{1,6} $
    | ^ [A-Za-z] : [\\/]
    """,
    re.IGNORECASE | re.VERBOSE,
)

_PROSE_WORD_RE = re.compile(r"[A-Za-z][a-z]*(?:['\-][a-z]+)*")
_SHORT_HEX_ID_RE = re.compile(r"0[xX][0-9a-fA-F]{1,16}")


def _is_placeholder(value: str) -> bool:
    v = value.strip()
    if v.lower() in _PLACEHOLDER_WORDS:
        return True
    return _PLACEHOLDER_RE.search(v) is not None


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_ALPHABET_RUN = re.compile(
    "|".join(
        alphabet[i : i + 6]
        for alphabet in ("abcdefghijklmnopqrstuvwxyz", "0123456789")
        for i in range(len(alphabet) - 5)
    )
)
_PERIODIC = re.compile(r"(.{2,4})\1{4,}")


def _looks_fake(value: str, *, runs: bool = True) -> bool:
    """Documentation fakes: ``abcdef``/``123456`` runs, ``123123123...``, ``1111...``.

    A generated token has such a run with negligible probability (six characters
    in alphabet order: about 1 in 62**5 per position). ``runs=False`` skips the
    alphabet-order test: token rules with a vendor prefix use it, because
    gitleaks' own samples label prefixed ``abc123xyz...`` strings as secrets.
    """
    if runs:
        low = value.lower()
        # also the letters and the digits apart: a1B2c3D4e5F6 reads abcdef and 123456
        views = (low, "".join(filter(str.isalpha, low)), "".join(filter(str.isdigit, low)))
        if any(_ALPHABET_RUN.search(view) for view in views):
            return True
    for m in _PERIODIC.finditer(value):
        if len(set(m.group(1))) > 1:
            return True
    if len(value) >= 16:
        top = Counter(value).most_common(1)[0][1]
        if top * 2 > len(value):
            return True
    return False


def _looks_random(value: str) -> bool:
    """Whether ``value`` looks like a generated credential rather than a word."""
    n = len(value)
    if n < 12 or any(c.isspace() for c in value):
        return False
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    other = any(not c.isalnum() for c in value)
    if digit and (lower or upper):
        random = _entropy(value) >= 2.5
    elif lower and upper and n >= 16:
        random = _entropy(value) >= 3.0
    else:
        classes = lower + upper + digit + other
        random = n >= 32 and classes >= 2 and _entropy(value) >= 3.5
    return random and not _looks_fake(value)


# Sidekiq Enterprise / Contribsys gem credentials: 8 hex, colon, 8 hex.
_HEX_PAIR = re.compile(r"[0-9a-f]{8}:[0-9a-f]{8}")


def _rest_of_line_is_empty(text: str, pos: int) -> bool:
    """Whether only spaces or a comment follow ``pos`` on its line."""
    n = len(text)
    while pos < n and text[pos] in " \t":
        pos += 1
    return pos >= n or text[pos] in "\r\n#" or text.startswith(("\\n", "//"), pos)


def _assignment_value_ok(
    text: str, s: int, e: int, *, password: bool, quoted: bool
) -> bool:
    value = text[s:e]
    if _is_placeholder(value) or _CODE_REF_RE.search(value):
        return False
    if _PATH_RE.search(value):
        return False
    if value.isdigit():
        return password and len(value) >= 4
    if value.startswith("-") and not quoted:
        return False  # a command-line flag, e.g. "--password-stdin"
    if _SHORT_HEX_ID_RE.fullmatch(value):
        return False  # "signing key: 0x1234ABCD" is a key id, not a key
    if not quoted and _PROSE_WORD_RE.fullmatch(value) and not _rest_of_line_is_empty(text, e):
        # "password: stored in the vault" -- a word followed by more prose.
        return False
    if password:
        return len(value) >= 3
    return _looks_random(value) or _HEX_PAIR.fullmatch(value) is not None


def _token_body_ok(secret: str) -> bool:
    """Reject documented fakes such as ``ghp_xxxx...`` or ``AKIA...EXAMPLE``."""
    low = secret.lower()
    if "example" in low or "xxxx" in low or "0000000" in low or _looks_fake(secret, runs=False):
        return False
    return len(set(secret)) >= 6


# --------------------------------------------------------------------------
# Detectors. Each appends candidate spans (start, end, priority, kind).
# Lower priority numbers win when spans overlap (more specific kinds).
# --------------------------------------------------------------------------

_Candidate = tuple[int, int, int, str]

_WORD_ = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True, slots=True)
class _TokenRule:
    kind: str
    regex: re.Pattern[str]
    check: Callable[[str], bool] | None = _token_body_ok
    group: str | None = None


_ALNUM_ = "A-Za-z0-9_"
_ALNUM_DASH = "A-Za-z0-9_\\-"


def _rule(
    kind: str,
    head: str,
    tail: str,
    *,
    not_after: str | None = _ALNUM_,
    check: Callable[[str], bool] | None = _token_body_ok,
    group: str | None = None,
) -> _TokenRule:
    """Build a token rule from a fixed-width ``head`` and the rest of the pattern.

    The left-boundary test is a look-behind placed *after* ``head`` so that the
    regex keeps its literal-prefix fast path, and so that a start position in
    the middle of a long run is rejected at once (the scan stays linear).
    """
    guard = f"(?<![{not_after}]{head})" if not_after else ""
    return _TokenRule(kind, re.compile(head + guard + tail), check, group)


def _has_digit(secret: str) -> bool:
    return any(c.isdigit() for c in secret) and _token_body_ok(secret)


_PRIO_PEM = 0
_PRIO_SPECIFIC_ASSIGN = 50
_PRIO_URL = 60
_PRIO_HEADER = 70
_PRIO_GENERIC = 90


# PEM private keys -----------------------------------------------------------

_PEM_BEGIN = re.compile(r"----(?:-)? ?BEGIN (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_PEM_END = re.compile(r"----(?:-)? ?END (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_B64_RUN = re.compile(r"[A-Za-z0-9+/]{16}")
# Lines of an unterminated block's body: a line break (real or JSON-escaped),
# indentation or ">" quote marks, then a base64 line, an RFC 1421 header line, or
# nothing (a blank line).
_PEM_LINE = re.compile(
    r"""
    (?: \r?\n | \\r\\n | \\n ) [ \t>]*+
    (?: (?P<b64> [A-Za-z0-9+/=]++ )
      | (?P<hdr> (?: Proc-Type | DEK-Info | Comment | Version | Hash | Charset ) : [^\r\n\\]*+ )
      | )
    [ \t]*+
    (?= \r?\n | \\[rn] | ["'`,] | $ )
    """,
    re.VERBOSE,
)
# A key pasted on one line: base64 runs separated by spaces after the header. Trailing
# blanks are consumed, not looked ahead at, so the scan goes on at the line break as it
# does after `_PEM_LINE` (the lookahead form stopped a key whose first line ended in a
# space after that line on Python 3.11.7, and ran past the blanks on 3.11.2).
_PEM_SAME_LINE = re.compile(r"(?:[ \t]++[A-Za-z0-9+/=]{16,}+)++[ \t]*+(?=\r?\n|\\[rn]|[\"'`,]|$)")
_PEM_MAX_BLOCK = 65536


def _pem_body_end(text: str, pos: int, limit: int) -> int:
    """End of the base64 body of an unterminated PEM block starting at ``pos``.

    The body stops at the first line that is not base64 (prose has spaces), at a
    blank line (allowed once after RFC 1421 headers), or after a short final line.
    """
    same = _PEM_SAME_LINE.match(text, pos, limit)
    end = scan = same.end() if same else pos
    blank_ok = False
    while True:
        m = _PEM_LINE.match(text, scan, limit)
        if m is None:
            break
        b64 = m.group("b64")
        if m.group("hdr") is not None:
            end = scan = m.end()
            blank_ok = True
            continue
        if b64 is None:
            if not blank_ok:
                break
            blank_ok = False
            scan = m.end()
            continue
        if len(b64) < 32 and not (
            len(b64) % 4 == 0 or "=" in b64 or any(c.isdigit() or c in "+/" for c in b64)
        ):
            break  # a short word such as "Thanks" is prose, not the last base64 line
        end = scan = m.end()
        blank_ok = False
        if len(b64) < 32 or b64.endswith("="):
            break  # the short (or padded) last line of the body
    return end


def _scan_pem(text: str, out: list[_Candidate]) -> None:
    headers = list(_PEM_BEGIN.finditer(text))
    end_match: re.Match[str] | None = None
    end_searched_from = -1
    no_more_ends = False
    for i, head in enumerate(headers):
        hstart, hend = head.span()
        limit = min(
            headers[i + 1].start() if i + 1 < len(headers) else len(text),
            hend + _PEM_MAX_BLOCK,
        )
        # One forward search serves every header up to the footer it found,
        # so a file full of headers stays linear.
        if not no_more_ends and (end_match is None or end_match.start() < hend):
            if end_searched_from < hend:
                end_match = _PEM_END.search(text, hend)
                end_searched_from = hend
                no_more_ends = end_match is None
        if end_match is not None and end_match.start() >= hend and end_match.end() <= limit:
            if _B64_RUN.search(text, hend, end_match.start()):
                out.append((hstart, end_match.end(), _PRIO_PEM, "private-key"))
            continue
        body_end = _pem_body_end(text, hend, limit)
        if body_end > hend and _B64_RUN.search(text, hend, body_end):
            out.append((hstart, body_end, _PRIO_PEM, "private-key"))


# Passwords in URLs ------------------------------------------------------------

_URL_CRED = re.compile(
    r"://(?P<user>[^\s:/?#\"'<>\[\]]{0,256}+):(?P<pw>[^\s/?#\"'<>]{1,256})@"
    r"(?=[A-Za-z0-9\[._%\-])"
)


# Database URLs: the password runs to the last ``@`` (then a host) of the URL, and may hold
# ``#``, ``?`` and ``/`` (written unescaped by people; trufflehog's postgres detector
# takes ``\S+`` too). The scheme is checked behind the literal ``://`` (scan stays fast).
_DB_URL_CRED = re.compile(
    r"://(?:(?<=postgres://)|(?<=postgresql://)|(?<=mysql://)|(?<=mariadb://)"
    r"|(?<=mongodb://)|(?<=mongodb\+srv://)|(?<=redis://)|(?<=rediss://))"
    r"(?P<user>[^\s:/@\"'<>]{0,256}+):(?P<pw>[^\s\"'<>]{1,256})@(?=[A-Za-z0-9\[._%\-])"
)
_URL_USER_TOKEN = re.compile(r"://(?P<tok>[A-Za-z0-9_\-.~]{20,256}+)@(?=[A-Za-z0-9\[])")


def _scan_url_passwords(text: str, fast: str, out: list[_Candidate]) -> None:
    for m in _URL_CRED.finditer(fast):
        s, e = m.span("pw")
        pw = text[s:e]
        if _is_placeholder(pw) or pw.startswith(("$", "%")):
            continue
        out.append((s, e, _PRIO_URL, "url-password"))
    for m in _DB_URL_CRED.finditer(fast):
        s, e = m.span("pw")
        if not (_is_placeholder(text[s:e]) or text.startswith(("$", "%"), s)):
            out.append((s, e, _PRIO_URL, "url-password"))
    for m in _URL_USER_TOKEN.finditer(fast):  # https://TOKEN@host: a token as the user part
        s, e = m.span("tok")
        if _looks_random(text[s:e]) and not _is_placeholder(text[s:e]):
            out.append((s, e, _PRIO_URL, "url-password"))

