"""Secret redaction for memory text, applied before anything is stored or hashed.

`redact` finds credentials in a string and replaces each one with a typed marker
``[REDACTED:<kind>]``. Only the secret itself is replaced: in ``password = hunter2``
the key stays, in ``postgres://app:s3cret@db:5432/x`` the user and host stay.

Marker kinds (stable names; other modules and users may rely on them):

==================== ==========================================================
kind                 what is replaced
==================== ==========================================================
private-key          a PEM / OpenSSH / PGP private key block, header to footer
                     (an unterminated block: header plus its base64 body)
aws-access-key       AWS access key id (``AKIA``, ``ASIA``, ``ABIA``, ``ACCA``)
aws-secret-key       40-character AWS secret access key in an assignment
github-token         ``ghp_`` ``gho_`` ``ghu_`` ``ghs_`` ``ghr_`` and ``github_pat_``
gitlab-token         ``glpat-``, the other ``gl*-`` GitLab token prefixes, and
                     ``GR1348941`` runner registration tokens
slack-token          ``xoxb-`` ``xoxp-`` ``xoxa-`` ``xoxr-`` ``xoxs-`` ``xoxe-`` ``xapp-``
slack-webhook        the secret path of a ``hooks.slack.com`` webhook URL
discord-webhook      the id/token path of a Discord webhook URL
anthropic-key        ``sk-ant-...`` (API, admin and Claude Code OAuth tokens)
openai-key           ``sk-...``, ``sk-proj-...``, ``sk-svcacct-...``
stripe-key           ``sk_live_`` ``rk_live_`` ``sk_test_`` ``rk_test_`` ``whsec_``
google-api-key       ``AIza...``
google-oauth         ``GOCSPX-...`` client secrets and ``ya29.`` access tokens
twilio-api-key       ``SK`` + 32 hex
sendgrid-key         ``SG.<22>.<43>``
npm-token            ``npm_...``
pypi-token           ``pypi-...``
huggingface-token    ``hf_...``
databricks-token     ``dapi...``
digitalocean-token   ``dop_v1_`` ``doo_v1_`` ``dor_v1_``
shopify-token        ``shpat_`` ``shpss_`` ``shpca_`` ``shppa_``
age-secret-key       ``AGE-SECRET-KEY-1...``
mailgun-key          ``key-`` + 32 hex
linear-key           ``lin_api_...``
jwt                  a JSON Web Token (three base64url segments, header ``eyJ``)
bearer-token         the token after ``Bearer``
basic-auth           the base64 credentials after ``Basic`` (must decode to
                     ``user:pass``)
auth-header          the token in ``Authorization: token|key ...``
cookie               random-looking cookie values in a ``Cookie:`` or
                     ``Set-Cookie:`` header
azure-key            ``AccountKey=`` / ``SharedAccessKey=`` values
url-signature        ``sig=``, ``signature=``, ``X-Amz-Signature=``,
                     ``X-Goog-Signature=``, ``X-Amz-Security-Token=`` URL parameters
url-password         the password in ``scheme://user:password@host`` (database
                     connection strings such as postgres://, mysql://,
                     mongodb+srv://, redis:// included)
password             a value assigned to a password-like key (``password``,
                     ``passwd``, ``passphrase``, ``pwd``, or a ``_pass`` suffix
                     such as ``DB_PASS``), to a ``--password`` CLI flag, after
                     ``curl -u user:``, ``mysql -pX``, ``docker login -p X``,
                     ``sshpass -p X``, in a ``.netrc`` ``login X password Y``
                     line, or in prose: ``the password is `X```, ``password is X1!``
secret               a secret-looking value assigned to a key ending in
                     ``secret``, ``token``, ``api_key``, ``access_key``,
                     ``private_key``, ``client_secret``, ... (``key = value``,
                     ``key: value``, ``KEY=value``, JSON ``"key": "value"``)
==================== ==========================================================

Look-alikes that are deliberately kept: git SHAs and other hex digests, UUIDs,
placeholders (``YOUR_API_KEY``, ``<your-token>``, ``xxx``, ``********``,
``changeme``, ``${API_KEY}``, ``$TOKEN``, ``os.environ["API_KEY"]``,
``process.env.TOKEN``, ``{{ secrets.X }}``), values containing ``EXAMPLE`` (AWS's
documented ``AKIAIOSFODNN7EXAMPLE``), type annotations (``token: str``), counts
(``max_tokens: 400``), identifiers such as ``token_count`` or ``secret_santa.md``,
prose (``the token bucket refills``), and PEM headers quoted without a key body.
``changeme`` is kept on purpose: it is a publicly known default, not a secret,
and documentation uses it as a placeholder.

Guarantees:

* Findings carry offsets into the *input*; ``Finding.start``/``end`` delimit
  exactly the text that the marker replaced.
* Idempotent: markers are never matched or altered, and a redaction pass is
  repeated (on the lines that gained a marker) until it finds nothing, so
  redacting redacted text changes nothing.
* Deterministic and linear: every pattern is compiled once, anchored on a
  literal or bounded, and free of nested unbounded quantifiers. All detectors
  report candidate spans; overlaps are merged (the most specific kind names
  the union) and the output is built in one pass over the input.

Run ``python -m memlens.core.redact --evaluate tests/data/secrets/labelled.jsonl``
for recall/precision on the labelled set, or ``python -m memlens.core.redact FILE``
to redact a file to stdout.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import bisect
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "KINDS",
    "MARKER_RE",
    "Evaluation",
    "Finding",
    "LabelledExample",
    "RedactionResult",
    "evaluate",
    "load_labelled",
    "marker",
    "redact",
]

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
        return _entropy(value) >= 2.5
    if lower and upper and n >= 16:
        return _entropy(value) >= 3.0
    classes = lower + upper + digit + other
    return n >= 32 and classes >= 2 and _entropy(value) >= 3.5


def _token_body_ok(secret: str) -> bool:
    """Reject documented fakes such as ``ghp_xxxx...`` or ``AKIA...EXAMPLE``."""
    low = secret.lower()
    if "example" in low or "xxxx" in low or "0000000" in low:
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


def _openai_ok(secret: str) -> bool:
    body = secret[3:]
    for prefix in ("proj-", "svcacct-", "admin-"):
        if body.startswith(prefix):
            body = body[len(prefix) :]
    return _token_body_ok(body) and _looks_random(body)


def _jwt_ok(secret: str) -> bool:
    header = secret.split(".", 1)[0]
    try:
        raw = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
    except (binascii.Error, ValueError):
        return False
    return raw.startswith(b"{") and b'"' in raw


def _has_digit(secret: str) -> bool:
    return any(c.isdigit() for c in secret) and _token_body_ok(secret)


# Order is priority: when spans overlap, the earlier rule names the finding.
_TOKEN_RULES: tuple[_TokenRule, ...] = (
    _rule("aws-access-key", "A(?:KIA|SIA|BIA|CCA)", r"[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _rule("github-token", "gh[pousr]_", r"[A-Za-z0-9]{36,251}+(?![A-Za-z0-9_])"),
    _rule("github-token", "github_pat_", r"[A-Za-z0-9_]{22,255}+(?![A-Za-z0-9_])"),
    _rule(
        "gitlab-token",
        "gl",
        r"(?:pat|dt|rt|ptt|cbt|soat|ffct|imt|oas|ft|agent)-[A-Za-z0-9_\-]{20,}+"
        r"(?:\.[A-Za-z0-9_\-]+)*+",
        not_after=_ALNUM_DASH,
    ),
    _rule("gitlab-token", "GR1348941", r"[A-Za-z0-9_\-]{20,}+", not_after=_ALNUM_DASH),
    _rule(
        "slack-token",
        "xox[abposre]",
        r"(?:\.xox[a-z])?-[A-Za-z0-9\-]{20,}+",
        not_after=_ALNUM_DASH,
        check=_has_digit,
    ),
    _rule("slack-token", "xapp-", r"\d-[A-Za-z0-9\-]{10,}+", not_after=_ALNUM_DASH),
    _rule(
        "slack-webhook",
        r"hooks\.slack\.com/",
        r"(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/\-]{20,}+)",
        not_after=None,
        group="s",
    ),
    _rule(
        "discord-webhook",
        "discord",
        r"(?:app)?\.com/api/webhooks/(?P<s>\d{5,30}/[A-Za-z0-9_\-]{20,}+)",
        not_after=None,
        group="s",
    ),
    _rule("anthropic-key", "sk-ant-", r"[A-Za-z0-9_\-]{20,}+", not_after=_ALNUM_DASH),
    _rule("openai-key", "sk-", r"[A-Za-z0-9_\-]{20,}+", not_after=_ALNUM_DASH, check=_openai_ok),
    _rule("stripe-key", "sk_", r"(?:live|test)_[A-Za-z0-9]{10,}+"),
    _rule("stripe-key", "rk_", r"(?:live|test)_[A-Za-z0-9]{10,}+"),
    _rule("stripe-key", "whsec_", r"[A-Za-z0-9+/=]{20,}+"),
    _rule("google-api-key", "AIza", r"[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])", not_after=_ALNUM_DASH),
    _rule("google-oauth", "GOCSPX-", r"[0-9A-Za-z_\-]{20,}+", not_after=_ALNUM_DASH),
    _rule("google-oauth", r"ya29\.", r"[0-9A-Za-z_\-]{20,}+", not_after=_ALNUM_DASH),
    _rule("twilio-api-key", "SK", r"[0-9a-fA-F]{32}(?![0-9A-Za-z])"),
    _rule(
        "sendgrid-key",
        r"SG\.",
        r"[A-Za-z0-9_\-]{16,32}+\.[A-Za-z0-9_\-]{16,64}+(?![A-Za-z0-9_\-])",
    ),
    _rule("npm-token", "npm_", r"[A-Za-z0-9]{36}(?![A-Za-z0-9_])"),
    _rule("pypi-token", "pypi-", r"[A-Za-z0-9_\-]{50,}+", not_after=_ALNUM_DASH),
    _rule("huggingface-token", "hf_", r"[A-Za-z0-9]{30,40}+(?![A-Za-z0-9_])"),
    _rule("databricks-token", "dapi", r"[0-9a-f]{32}(?:-\d+)?(?![0-9A-Za-z])"),
    _rule("digitalocean-token", "do[opr]_v1_", r"[0-9a-f]{64}(?![0-9A-Za-z])"),
    _rule("shopify-token", "shp", r"(?:at|ss|ca|pa)_[0-9a-fA-F]{32}(?![0-9A-Za-z])"),
    _rule("age-secret-key", "AGE-SECRET-KEY-1", r"[0-9A-Z]{58}(?![0-9A-Za-z])"),
    _rule("mailgun-key", "key-", r"[0-9a-f]{32}(?![0-9A-Za-z])", not_after=_ALNUM_DASH),
    _rule("linear-key", "lin_api_", r"[A-Za-z0-9]{40}(?![A-Za-z0-9])"),
    _rule(
        "jwt",
        "eyJ",
        r"[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]{5,}+\.[A-Za-z0-9_\-]*+",
        not_after=_ALNUM_DASH,
        check=_jwt_ok,
    ),
)

_PRIO_TOKEN = 10
_PRIO_PEM = 0
_PRIO_SPECIFIC_ASSIGN = 50
_PRIO_URL = 60
_PRIO_HEADER = 70
_PRIO_GENERIC = 90


def _group_rules() -> tuple[tuple[re.Pattern[str], tuple[tuple[int, _TokenRule], ...]], ...]:
    """One scanning regex per first character, with the rules it stands for.

    Fewer passes over the text than one regex per rule; the rules are then
    tried one by one only where their group matched.
    """
    groups: dict[str, list[tuple[int, _TokenRule]]] = {}
    for prio, rule in enumerate(_TOKEN_RULES, start=_PRIO_TOKEN):
        first = rule.regex.pattern[0]
        assert first.isalnum(), rule.regex.pattern  # heads start with a literal
        groups.setdefault(first, []).append((prio, rule))
    return tuple(
        (re.compile("|".join(r.regex.pattern.replace("(?P<s>", "(?:") for _, r in rules)), tuple(rules))
        for rules in groups.values()
    )


_TOKEN_GROUPS = _group_rules()


def _scan_tokens(text: str, fast: str, out: list[_Candidate]) -> None:
    for scan, rules in _TOKEN_GROUPS:
        for hit in scan.finditer(fast):
            pos = hit.start()
            for prio, rule in rules:
                m = rule.regex.match(fast, pos) if len(rules) > 1 else hit
                if m is None:
                    continue
                s, e = m.span(rule.group) if rule.group else m.span()
                if rule.check is None or rule.check(text[s:e]):
                    out.append((s, e, prio, rule.kind))


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
# A key pasted on one line: base64 runs separated by spaces after the header.
_PEM_SAME_LINE = re.compile(r"(?:[ \t]++[A-Za-z0-9+/=]{16,}+)++(?=[ \t]*+(?:\r?\n|\\[rn]|[\"'`,]|$))")
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


def _scan_url_passwords(text: str, fast: str, out: list[_Candidate]) -> None:
    for m in _URL_CRED.finditer(fast):
        s, e = m.span("pw")
        pw = text[s:e]
        if _is_placeholder(pw) or pw.startswith(("$", "%")):
            continue
        out.append((s, e, _PRIO_URL, "url-password"))


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
_CURL_USER = re.compile(
    r"-(?<![^ \t\n]-)(?:u|-user)[ \t]++[\"']?[^\s:\"']{1,256}+:(?P<v>[^\s\"']{1,256}+)"
)
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
        (?P<op> := | => | == | = | :(?!:) )
        [\ \t]{0,16}+
        (?: \*\* | __ )?
        [\ \t]{0,16}+
        (?:
            " (?P<dq> (?: [^"\\\r\n] | \\. ){1,4096}+ ) "
          | ' (?P<sq> (?: [^'\\\r\n] | \\. ){1,4096}+ ) '
          | ` (?P<bq> [^`\r\n]{1,4096}+ ) `
          | (?P<uq> (?: [^\s"'`;,&] | [;,&] (?! \s | $ | [a-z0-9_.\-]+ [=:] ) ){1,4096}+ )
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
    return _looks_random(value)


def _value_span(m: re.Match[str]) -> tuple[int, int, bool]:
    for name in ("dq", "sq", "bq", "pdq", "pbq"):
        if name in m.re.groupindex and m.start(name) >= 0:
            s, e = m.span(name)
            return s, e, True
    s, e = m.span("uq")
    return s, e, False


def _scan_folded(
    text: str, low: str, markers: Sequence[tuple[int, int]], out: list[_Candidate]
) -> None:
    prio = _PRIO_SPECIFIC_ASSIGN
    for m in _AWS_SECRET.finditer(low):
        s, e = m.span("v")
        if _token_body_ok(text[s:e]) and _looks_random(text[s:e]):
            out.append((s, e, prio, "aws-secret-key"))

    prio = _PRIO_HEADER
    for m in _BEARER.finditer(low):
        if m.start() and low[m.start() - 1] in _WORD_:
            continue
        s, e = m.span("v")
        token = text[s:e]
        if not _is_placeholder(token) and (_looks_random(token) or len(token) >= 32):
            out.append((s, e, prio, "bearer-token"))
    for m in _BASIC.finditer(low):
        if m.start() and low[m.start() - 1] in _WORD_:
            continue
        s, e = m.span("v")
        if _decodes_to_credentials(text[s:e]):
            out.append((s, e, prio + 1, "basic-auth"))
    for m in _AUTH_HEADER.finditer(low):
        s, e = m.span("v")
        if not _is_placeholder(text[s:e]) and _looks_random(text[s:e]):
            out.append((s, e, prio + 2, "auth-header"))
    for m in _NETRC.finditer(low):
        s, e = m.span("v")
        if not _is_placeholder(text[s:e]):
            out.append((s, e, prio + 3, "password"))
    for m in _CURL_USER.finditer(low):
        s, e = m.span("v")
        pw = text[s:e]
        if not pw.isdigit() and not _is_placeholder(pw) and not pw.startswith("$"):
            out.append((s, e, prio + 3, "password"))

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
            out.append((s, e, prio + 3, "password"))
    for m in _COOKIE.finditer(low):
        if m.start() and low[m.start() - 1] in _WORD_:
            continue
        for pair in _COOKIE_PAIR.finditer(low, m.start("v"), m.end("v")):
            s, e = pair.span("v")
            if _looks_random(text[s:e]) and not _is_placeholder(text[s:e]):
                out.append((s, e, prio + 4, "cookie"))

    prio = _PRIO_GENERIC
    for m in _PROSE_IS.finditer(low):
        s, e = m.span("uq")
        e = _strip_unquoted(text, s, e)
        value = text[s:e]
        if not value.isalpha() and _assignment_value_ok(text, s, e, password=True, quoted=False):
            out.append((s, e, prio + 2, "password"))
    for m in _CLI_FLAG.finditer(low):
        s, e, quoted = _value_span(m)
        if not quoted:
            e = _strip_unquoted(text, s, e)
        is_pw = m.group("key").startswith(_PASSWORD_KEYS)
        if e > s and _assignment_value_ok(text, s, e, password=is_pw, quoted=quoted):
            out.append((s, e, prio, "password" if is_pw else "secret"))
    for m in _ASSIGN.finditer(low):
        if _inside(markers, m.start("key")):
            continue
        s, e, quoted = _value_span(m)
        if not quoted:
            e = _strip_unquoted(text, s, e)
        key = m.group("key")
        kind = "secret"
        prose = m.group("op") is None
        if prose and (key.startswith("sig") or text[s : s + 1] == "-"):
            continue  # signatures only as URL parameters; "-x" is a flag
        if key.startswith("sig"):
            ks = m.start("key")
            before = low[max(0, ks - 6) : ks]
            if not (before[-1:] in ("?", "&", ";") or before.endswith(("x-amz-", "x-goog-"))):
                continue
            if m.group("op") != "=":
                continue
            kind = "url-signature"
        elif key == "token" and low.endswith("x-amz-security-", 0, m.start("key")):
            kind = "url-signature"
        elif key == "key":
            if m.group("op") == "=" and _key_prefix(low, m.start("key")) in _AZURE_KEY_PREFIXES:
                kind = "azure-key"
        elif key.startswith(_PASSWORD_KEYS):
            kind = "password"
            if key == "pwd" and text[s : s + 1] in ("/", "~"):
                continue  # the shell's $PWD
        if e > s and _assignment_value_ok(text, s, e, password=kind == "password", quoted=quoted):
            specific = kind in ("azure-key", "url-signature")
            out.append((s, e, _PRIO_SPECIFIC_ASSIGN + 1 if specific else prio + 1, kind))


def _decodes_to_credentials(blob: str) -> bool:
    try:
        raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    user, sep, pw = decoded.partition(":")
    return bool(sep and user and pw) and decoded.isprintable()


# --------------------------------------------------------------------------
# Merging and output
# --------------------------------------------------------------------------


def _inside(spans: Sequence[tuple[int, int]], pos: int) -> bool:
    i = bisect.bisect_right(spans, (pos, sys.maxsize)) - 1
    return i >= 0 and spans[i][0] <= pos < spans[i][1]


def _subtract_markers(
    candidates: list[_Candidate], markers: Sequence[tuple[int, int]]
) -> list[_Candidate]:
    """Cut existing markers out of candidate spans so markers are never altered."""
    if not markers:
        return candidates
    starts = [m[0] for m in markers]
    result: list[_Candidate] = []
    for s, e, prio, kind in candidates:
        i = max(bisect.bisect_right(starts, s) - 1, 0)
        while s < e and i < len(markers):
            ms, me = markers[i]
            if me <= s:
                i += 1
                continue
            if ms >= e:
                break
            if ms > s:
                result.append((s, ms, prio, kind))
            s = max(s, me)
            i += 1
        if s < e:
            result.append((s, e, prio, kind))
    return result


def _merge(candidates: list[_Candidate]) -> list[Finding]:
    """Union overlapping spans; the most specific (lowest priority) kind names it."""
    candidates.sort()
    findings: list[Finding] = []
    cur_s = cur_e = cur_p = -1
    cur_kind = ""
    for s, e, p, kind in candidates:
        if s < cur_e:
            if e > cur_e:
                cur_e = e
            if p < cur_p:
                cur_p, cur_kind = p, kind
            continue
        if cur_e >= 0:
            findings.append(Finding(cur_kind, cur_s, cur_e))
        cur_s, cur_e, cur_p, cur_kind = s, e, p, kind
    if cur_e >= 0:
        findings.append(Finding(cur_kind, cur_s, cur_e))
    return findings


_UCS1_CHUNK = 1 << 20


def _single_byte_view(text: str) -> str:
    """A same-length copy of ``text`` in which every character fits in one byte.

    Every detector pattern is ASCII. CPython's regex engine scans one-byte
    strings several times faster than the two- and four-byte strings that any
    CJK character, emoji or em dash forces, so the scan runs on a copy in which
    each character above U+00FF becomes U+00FF: like the original character it is
    not ASCII, is matched by negated classes and by nothing else. (Unicode
    spaces above U+00FF are therefore not whitespace to the detectors; a value
    may extend across one, which over-redacts but never leaks.) Offsets are
    unchanged, and values are always read back from the original text.
    """
    if text.isascii():
        return text
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        pass
    else:
        return text
    import numpy as np  # only for text with characters above U+00FF

    parts: list[bytes] = []
    for i in range(0, len(text), _UCS1_CHUNK):
        codes = np.frombuffer(
            text[i : i + _UCS1_CHUNK].encode("utf-32-le", "surrogatepass"), dtype="<u4"
        )
        parts.append(np.minimum(codes, 0xFF).astype(np.uint8).tobytes())
    return b"".join(parts).decode("latin-1")


def _scan_line_local(text: str, fast: str, out: list[_Candidate]) -> list[tuple[int, int]]:
    """Run every detector except PEM (the only one whose matches span lines).

    Returns:
        The spans of markers already present in ``text``.
    """
    markers = [m.span() for m in MARKER_RE.finditer(fast)]
    _scan_tokens(text, fast, out)
    _scan_url_passwords(text, fast, out)
    # bytes.lower() folds ASCII letters only (fast, and one character per character).
    low = fast.encode("latin-1").lower().decode("latin-1")
    _scan_folded(text, low, markers, out)
    return markers


def _detect(text: str) -> list[Finding]:
    """First pass: every detector over the whole text, then overlap merging."""
    candidates: list[_Candidate] = []
    fast = _single_byte_view(text)
    markers = _scan_line_local(text, fast, candidates)
    _scan_pem(fast, candidates)
    if not candidates:
        return []
    return _merge(_subtract_markers(candidates, markers))


def _detect_again(out: str) -> list[Finding]:
    """A later pass over redacted text ``out``.

    Every detector but PEM sees one line at a time, and a line without a marker
    is unchanged since the previous pass, which found nothing on it. So only the
    lines holding markers are scanned again (joined, they form a small document
    whose offsets map back to ``out``); PEM blocks are looked for everywhere.
    """
    markers = [m.span() for m in MARKER_RE.finditer(out)]
    windows: list[tuple[int, int]] = []
    for ms, me in markers:
        if windows and ms < windows[-1][1]:
            continue  # same line as the previous marker
        ls = out.rfind("\n", 0, ms) + 1
        le = out.find("\n", me)
        windows.append((ls, len(out) if le < 0 else le))
    sub = "\n".join(out[ls:le] for ls, le in windows)
    sub_starts: list[int] = []
    pos = 0
    for ls, le in windows:
        sub_starts.append(pos)
        pos += le - ls + 1
    local: list[_Candidate] = []
    _scan_line_local(sub, _single_byte_view(sub), local)
    candidates: list[_Candidate] = []
    for s, e, prio, kind in local:
        i = bisect.bisect_right(sub_starts, s) - 1
        shift = windows[i][0] - sub_starts[i]
        candidates.append((s + shift, e + shift, prio, kind))
    _scan_pem(out, candidates)
    if not candidates:
        return []
    return _merge(_subtract_markers(candidates, markers))


def _render(text: str, findings: Sequence[Finding]) -> tuple[str, list[tuple[int, int]]]:
    """Apply findings; also return, per marker, (end in output, end in input)."""
    parts: list[str] = []
    ends: list[tuple[int, int]] = []
    pos = out_len = 0
    for f in findings:
        chunk = text[pos : f.start]
        mark = marker(f.kind)
        parts.append(chunk)
        parts.append(mark)
        out_len += len(chunk) + len(mark)
        ends.append((out_len, f.end))
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts), ends


def _to_input(pos: int, out_ends: list[int], ends: list[tuple[int, int]]) -> int:
    """Map an output offset that lies outside every marker back to the input."""
    i = bisect.bisect_right(out_ends, pos) - 1
    return pos if i < 0 else pos - out_ends[i] + ends[i][1]


# A pass can expose a secret that the previous pass could not see (a token glued
# to a redacted one becomes separated from it by a marker). Redaction repeats
# until a pass finds nothing, which makes ``redact`` idempotent. Each extra pass
# replaces non-marker text, so the loop ends; the cap bounds adversarial input.
_MAX_PASSES = 8


def redact(text: str) -> RedactionResult:
    """Replace every secret in ``text`` with a typed ``[REDACTED:<kind>]`` marker.

    Args:
        text: Any text; typically the whole content of a Markdown memory file.

    Returns:
        The redacted text and the findings, whose offsets refer to ``text``.
        ``redact(redact(t).text).text == redact(t).text``.
    """
    findings = _detect(text)
    if not findings:
        return RedactionResult(text, ())
    out, ends = _render(text, findings)
    for _ in range(_MAX_PASSES - 1):
        more = _detect_again(out)
        if not more:
            break
        out_ends = [e[0] for e in ends]
        mapped = [
            Finding(f.kind, _to_input(f.start, out_ends, ends), _to_input(f.end, out_ends, ends))
            for f in more
        ]
        findings = sorted(findings + mapped, key=lambda f: f.start)
        out, ends = _render(text, findings)
    return RedactionResult(out, tuple(findings))


#: Every kind `redact` can emit.
KINDS: frozenset[str] = frozenset(
    {r.kind for r in _TOKEN_RULES}
    | {
        "private-key",
        "aws-secret-key",
        "azure-key",
        "url-signature",
        "url-password",
        "bearer-token",
        "basic-auth",
        "auth-header",
        "cookie",
        "password",
        "secret",
    }
)


# --------------------------------------------------------------------------
# Evaluation on a labelled set
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelledExample:
    """One line of a labelled secrets file.

    Attributes:
        id: Stable identifier.
        text: A realistic memory snippet.
        secret: The exact secret substring of ``text`` (``None`` for look-alikes).
        format: The credential format (or look-alike family).
        label: ``"secret"`` or ``"lookalike"``.
    """

    id: str
    text: str
    secret: str | None
    format: str
    label: str


def load_labelled(path: Path) -> list[LabelledExample]:
    """Read a labelled JSONL file, undoing its storage obfuscation.

    Lines with ``"obfuscation": "reversed"`` store ``text`` and ``secret``
    reversed (character order), so that the committed file contains no prefix,
    key name or shape that a secret scanner recognises. Loading restores the
    real, format-valid text.

    Args:
        path: The ``.jsonl`` file.

    Returns:
        The decoded examples, in file order.

    Raises:
        ValueError: A line is malformed or its secret is not in its text.
    """
    examples: list[LabelledExample] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        raw = json.loads(line)
        text, secret = raw["text"], raw.get("secret")
        if raw.get("obfuscation") == "reversed":
            text = text[::-1]
            secret = secret[::-1] if secret is not None else None
        if raw["label"] not in ("secret", "lookalike"):
            raise ValueError(f"{path}:{lineno}: label must be 'secret' or 'lookalike'")
        if raw["label"] == "secret" and (not secret or secret not in text):
            raise ValueError(f"{path}:{lineno}: secret missing from text")
        examples.append(LabelledExample(raw["id"], text, secret, raw["format"], raw["label"]))
    return examples


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Recall and precision of `redact` on a labelled set.

    Attributes:
        secrets: Number of true-secret examples.
        recalled: Secrets whose exact text is gone from the output, with a marker.
        exact: Secrets redacted with nothing else on the line changed.
        lookalikes: Number of look-alike examples.
        preserved: Look-alikes whose text came out unchanged.
        formats: Distinct formats among the true secrets.
        failures: ``id: reason`` for every miss or false alarm.
    """

    secrets: int
    recalled: int
    exact: int
    lookalikes: int
    preserved: int
    formats: int
    failures: tuple[str, ...]

    @property
    def recall(self) -> float:
        """Share of true secrets removed."""
        return self.recalled / self.secrets if self.secrets else 1.0

    @property
    def lookalike_precision(self) -> float:
        """Share of look-alikes left untouched."""
        return self.preserved / self.lookalikes if self.lookalikes else 1.0

    @property
    def precision(self) -> float:
        """Redacted secrets / (redacted secrets + altered look-alikes)."""
        false_alarms = self.lookalikes - self.preserved
        total = self.recalled + false_alarms
        return self.recalled / total if total else 1.0

    def summary(self) -> str:
        """A short human-readable report."""
        lines = [
            f"secrets:     {self.secrets} across {self.formats} formats",
            f"recall:      {self.recall:.3f} ({self.recalled}/{self.secrets})",
            f"exact spans: {self.exact}/{self.secrets} (nothing but the secret replaced)",
            f"look-alikes: {self.lookalikes}",
            f"look-alike precision (left unchanged): {self.lookalike_precision:.3f} "
            f"({self.preserved}/{self.lookalikes})",
            f"precision:   {self.precision:.3f}",
        ]
        lines.extend(f"  FAIL {f}" for f in self.failures)
        return "\n".join(lines)


def evaluate(examples: Iterable[LabelledExample]) -> Evaluation:
    """Run `redact` over labelled examples and score it.

    Args:
        examples: Examples as returned by `load_labelled`.

    Returns:
        The scores and the list of failures.
    """
    secrets = recalled = exact = lookalikes = preserved = 0
    formats: set[str] = set()
    failures: list[str] = []
    for ex in examples:
        out = redact(ex.text).text
        if ex.label == "lookalike":
            lookalikes += 1
            if out == ex.text:
                preserved += 1
            else:
                failures.append(f"{ex.id}: look-alike altered -> {out!r}")
            continue
        secrets += 1
        formats.add(ex.format)
        assert ex.secret is not None
        if ex.secret not in out and MARKER_PREFIX in out:
            recalled += 1
            start = ex.text.index(ex.secret)
            before, after = ex.text[:start], ex.text[start + len(ex.secret) :]
            body = out[len(before) : len(out) - len(after)] if len(out) >= len(ex.text) - len(
                ex.secret
            ) else ""
            if out.startswith(before) and out.endswith(after) and MARKER_RE.fullmatch(body):
                exact += 1
        else:
            failures.append(f"{ex.id}: {ex.format} secret survived -> {out!r}")
    return Evaluation(
        secrets, recalled, exact, lookalikes, preserved, len(formats), tuple(failures)
    )


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memlens.core.redact",
        description="Redact secrets from a file (or stdin), or score the redactor "
        "on a labelled JSONL set.",
    )
    parser.add_argument("file", nargs="?", type=Path, help="file to redact (default: stdin)")
    parser.add_argument(
        "--evaluate", type=Path, metavar="JSONL", help="score recall/precision on a labelled set"
    )
    parser.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    args = parser.parse_args(argv)
    if args.evaluate is not None:
        try:
            result = evaluate(load_labelled(args.evaluate))
        except (OSError, ValueError, KeyError) as exc:
            print(f"error: cannot evaluate {args.evaluate}: {exc}", file=sys.stderr)
            return 2
        if args.json:
            payload = {
                "secrets": result.secrets,
                "formats": result.formats,
                "recall": result.recall,
                "exact": result.exact,
                "lookalikes": result.lookalikes,
                "lookalike_precision": result.lookalike_precision,
                "precision": result.precision,
                "failures": list(result.failures),
            }
            print(json.dumps(payload, indent=2))
        else:
            print(result.summary())
        return 0
    try:
        data = args.file.read_text(encoding="utf-8") if args.file else sys.stdin.read()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    result_r = redact(data)
    sys.stdout.write(result_r.text)
    kinds = Counter(f.kind for f in result_r.findings)
    summary = ", ".join(f"{k}={n}" for k, n in sorted(kinds.items())) or "nothing"
    print(f"redacted: {summary}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(_main())
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0) from None
