"""Vendor-keyed values: the vendor's name in the key, the vendor's shape in the value.

Some vendors' tokens carry no prefix (a Snyk token is a UUID, a Sonar token 40
letters and digits, a Plivo auth id 20 capitals): gitleaks and trufflehog find them
only next to the vendor's name, and so does this module (issue 44). A value is
redacted when, after a vendor keyword, within :data:`WINDOW` characters and at most
one line break (``<discordToken>`` newline value newline ``</discordToken>``), a
run of characters matches the vendor's exact shape as a whole word. Unlike a generic
``token = value``, the value need not look random: the keyword and the exact
shape are the evidence (gitleaks' own samples, such as a Sonar token of
``12345678ABCDEFH...``, read as documentation fakes to the generic checks); a
placeholder (``xxxx``, ``0000000``, ``EXAMPLE``, a run of one character) is kept.

The shapes are those of gitleaks' rules (``cmd/generate/config/rules/*.go``, MIT)
and trufflehog's detectors (``pkg/detectors/*``, AGPL-3.0: formats only, no code or
test strings taken): Snyk (a ``snyk`` key or token name + a UUID), Sonar (a
``sonar`` login or token name + 40, optionally ``squ_``/``sqp_``/``sqa_``), Discord
(``discord`` + 64 hex or 32 characters), Sidekiq
(``BUNDLE_ENTERPRISE__CONTRIBSYS__COM`` / ``BUNDLE_GEMS__CONTRIBSYS__COM`` + ``hex8:hex8``),
Instamojo (``instamojo`` + 40, 60 or 128 letters and digits), Plivo (``plivo`` + 20
capitals and digits, or 40), ParseHub (``parsehub`` + 12 letters and digits).
"""

from __future__ import annotations

import re

from memlens.core.redact.rules import _PRIO_GENERIC, _Candidate, _token_body_ok

__all__ = ["VENDOR_KEYWORDS", "WINDOW", "scan_vendor_keyed"]

WINDOW = 60
"""How far after the end of the vendor keyword the value may start (characters)."""

_W = r"A-Za-z0-9_\-"
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"


def _shape(body: str, word: str = _W) -> re.Pattern[str]:
    return re.compile(rf"(?<![{word}])(?:{body})(?![{word}])")


# (keyword, lowercased; what must follow it in the key, or None; the value's shape as a
# whole word; the marker kind). Snyk and Sonar need a token key as in gitleaks' rules:
# ``snyk org id <uuid>`` or ``SonarQube ... commit <40 hex>`` name no secret.
_VENDORS: tuple[tuple[str, re.Pattern[str] | None, re.Pattern[str], str], ...] = (
    ("snyk", re.compile(r"[_.\- ]?(?:(?:api|oauth|auth)[_.\- ]?)?(?:key|token)"), _shape(_UUID),
     "secret"),
    ("sonar", re.compile(r"(?:qube|cloud)?[_.\- ]?(?:login|token)"),
     _shape(r"(?:sq[upa]_)?[A-Za-z0-9_\-]{39}[A-Za-z0-9_=\-]"), "sonarqube-token"),
    # not the 18-digit client id gitleaks also reports: a Discord server id in a badge URL
    # (``img.shields.io/discord/<18 digits>``) is public
    ("discord", None, _shape(r"[0-9a-f]{64}|[A-Za-z0-9_=\-]{32}"), "secret"),
    ("contribsys__com", None, _shape(r"[0-9a-f]{8}:[0-9a-f]{8}", _W + ":"), "secret"),
    ("instamojo", None, _shape(r"[A-Za-z0-9]{128}|[A-Za-z0-9]{60}|[A-Za-z0-9]{40}"), "secret"),
    ("plivo", None, _shape(r"[A-Z0-9]{20}|[A-Za-z0-9_\-]{40}"), "secret"),
    ("parsehub", None, _shape(r"[A-Za-z0-9]{12}"), "secret"),
)
VENDOR_KEYWORDS: tuple[str, ...] = tuple(k for k, _, _, _ in _VENDORS)
_PRIO_VENDOR_KEYED = _PRIO_GENERIC + 1
_DIGIT = re.compile(r"[0-9]")
_LONGEST = 140  # the longest shape and its prefix: a search never runs further


def _value_ok(value: str) -> bool:
    """Not a placeholder, and a digit in it (a word such as a longer key name has none),
    except for Plivo's 20 capitals."""
    if not _token_body_ok(value.replace("-", "").replace(":", "")):
        return False
    return bool(_DIGIT.search(value)) or (len(value) == 20 and value.isalpha()
                                          and value.isupper())


def _window_end(low: str, start: int) -> int:
    """``start`` + :data:`WINDOW`, cut at the second line break."""
    end = min(len(low), start + WINDOW)
    first = low.find("\n", start, end)
    if first < 0:
        return end
    second = low.find("\n", first + 1, end)
    return end if second < 0 else second


def scan_vendor_keyed(text: str, low: str, out: list[_Candidate]) -> None:
    """Append a candidate for each vendor-shaped value after its vendor's keyword
    (``low`` = ``text`` lowercased, same offsets)."""
    for keyword, key_tail, shape, kind in _VENDORS:
        pos = low.find(keyword)
        while pos >= 0:
            start = pos + len(keyword)
            tail = key_tail.match(low, start) if key_tail is not None else None
            if key_tail is not None and tail is None:
                pos = low.find(keyword, start)
                continue
            if tail is not None:
                start = tail.end()
            end = _window_end(low, start)
            stop = min(len(text), end + _LONGEST)
            m = shape.search(text, start, stop)
            while m is not None and m.start() == start:  # the key goes on: not a value
                m = shape.search(text, m.end(), stop)
            # endpos makes the look-ahead see an end: a run going on past it is no word
            if m is not None and (m.end() < stop or stop == len(text)) \
                    and m.start() < end and _value_ok(m.group()):
                out.append((m.start(), m.end(), _PRIO_VENDOR_KEYED, kind))
                start = m.end()
            pos = low.find(keyword, start)
