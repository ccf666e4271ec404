"""Entropy fallback for prose: random tokens that `redact_scan._scan_random` misses.

`redact_scan._scan_random` covers 24+ character tokens over ``[A-Za-z0-9_-~]``
that mix upper case, lower case and digits. This module adds three shapes of an
unknown family, each measured on the gitleaks samples (tuning), on ordinary
memory Markdown (``corpus/``) and on code-heavy Markdown (package READMEs, the
Node.js docs and changelogs) before being kept:

* standard base64 (``+``, ``/``, ``=`` padding): 24+ characters, upper and lower
  case and digits, entropy >= 4.2 (bearer tokens, encoded keys), unless it is a
  digest or a public key by its context (``sha512-...`` integrity values, or
  ``sha256``, ``digest``, ``hash``, ``fingerprint``, ``pin``, ``public``,
  ``ssh-rsa``, ``base64,`` in the 40 characters before it);
* lower case and digits only, 32+ characters, not hexadecimal: entropy >= 4.0,
  at least 6 digits and 6 letters (hex is left alone: git SHAs and digests are
  everyday content of a memory file);
* a token followed by a sentence full stop (``... the key is T0k3n....``), which
  the look-ahead of `_scan_random` rejects.

Never matched: anything inside a URL or a path (the token may not start right
after ``/``, ``:``, ``.`` or ``@``, and may not run into ``.ext``), SSH / DER
public keys (``AAAA...``, or after ``ssh-rsa`` and friends), ``data:`` URIs
(``base64,...``), UUIDs and hex digests, identifiers made of words, and whole
64/76-column lines (the body of a certificate or key block).
"""

from __future__ import annotations

import re

from memlens.core.redact.rules import _Candidate, _entropy, _looks_fake
from memlens.core.redact.rules_cloud import is_public_example

_PRIO_ENTROPY = 96  # after every named kind and after `_scan_random`

# A run of base64 / token characters that does not continue a URL, a path, a
# dotted name, an e-mail address or a ``key:value`` pair, and does not run into
# ``.ext``. A final ``.`` followed by a space or the end is a full stop.
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_\-+/=.~:@\\%&#$])[A-Za-z0-9][A-Za-z0-9_\-~+/]{19,511}+={0,2}"
    r"(?![A-Za-z0-9_\-+/=~@\\%&#$])(?!\.[A-Za-z0-9_\-])"
)
_HEX = frozenset("0123456789abcdefABCDEF")
_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}")
_SEPARATORS = re.compile(r"[_\-~+/]")
_SSH_KEY_TYPES = ("ssh-rsa", "ssh-ed25519", "ssh-dss", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-")
_B64 = "+/="
_SRI = re.compile(r"sha(?:1|256|384|512)-")  # subresource integrity: sha512-<base64>


def _word_share(tok: str) -> float:
    return sum(len(w) for w in _WORDISH.findall(tok)) / len(tok)


def _base64_random(tok: str) -> bool:
    """Standard base64 with ``+`` or ``/``: long, mixed, high entropy, not words."""
    body = tok.rstrip("=")
    if len(body) < 24 or tok.startswith("AAAA"):
        return False  # SSH / DER public keys start with a zero length prefix
    upper = sum(c.isupper() for c in body)
    lower = sum(c.islower() for c in body)
    digits = sum(c.isdigit() for c in body)
    if min(upper, lower) < 3 or digits < 2:
        return False
    parts = [p for p in body.split("/") if p]
    if len(parts) > 1 and all(_word_share(p) >= 0.6 or len(p) < 6 for p in parts):
        return False  # a path of words: docs/api/v1/ThingConfig
    return _entropy(body) >= 4.2 and _word_share(body) < 0.4 and not _looks_fake(body)


def _lower_random(tok: str) -> bool:
    """Lower case and digits, 32+ characters, not hex, not a slug of words."""
    if len(tok) < 32 or any(c.isupper() for c in tok) or any(c in _B64 for c in tok):
        return False
    body = tok.replace("-", "").replace("_", "").replace("~", "")
    if all(c in _HEX for c in body):
        return False  # git SHAs, digests, UUIDs
    digits = sum(c.isdigit() for c in body)
    letters = len(body) - digits
    if digits < 6 or letters < 6:
        return False
    longest = max(len(p) for p in _SEPARATORS.split(tok) if p)
    return longest >= 20 and _entropy(body) >= 4.0 and not _looks_fake(body)


def _mixed_case_random(tok: str) -> bool:
    """Upper, lower and digits without base64 punctuation (`_scan_random`'s shape).

    Only reached for tokens `_scan_random` could not see: those that end a
    sentence with a full stop. The same tests as there, in short.
    """
    if not (any(c.isupper() for c in tok) and any(c.islower() for c in tok)):
        return False
    digits = sum(c.isdigit() for c in tok)
    parts = [p for p in _SEPARATORS.split(tok) if p]
    longest = max(len(p) for p in parts)
    if len(tok) < 32:
        return (
            digits >= 2
            and _entropy(tok) >= 3.8
            and _word_share(tok) < 0.4
            and longest >= 10
            and not _looks_fake(tok)
        )
    return digits >= 2 and _entropy(tok) >= 4.0 and longest >= 16 and not _looks_fake(tok)


# Words just before a base64 run that make it a digest or a public key, not a secret.
_DIGEST_CONTEXT = re.compile(r"sha-?\d|md5|integrity|digest|hash|checksum|fingerprint|pin|pub(?:lic|key)")


def _public_base64(tok: str, fast: str, s: int) -> bool:
    """SSH public keys, ``data:`` URIs, SRI hashes, digests and key pins."""
    if _SRI.match(tok):
        return True
    line_start = fast.rfind("\n", 0, s) + 1
    head = fast[max(line_start, s - 40) : s]
    if any(t in head for t in _SSH_KEY_TYPES) or head.endswith("base64,"):
        return True
    return _DIGEST_CONTEXT.search(head.lower()) is not None


def _whole_line(fast: str, s: int, e: int) -> bool:
    return e - s >= 60 and (s == 0 or fast[s - 1] == "\n") and (e == len(fast) or fast[e] == "\n")


def _classify(tok: str, followed_by_stop: bool) -> bool:
    if "example" in tok.lower() or is_public_example(tok):
        return False
    if any(c in _B64 for c in tok):
        return _base64_random(tok)
    if _lower_random(tok):
        return True
    return followed_by_stop and len(tok) >= 24 and _mixed_case_random(tok)


def scan_entropy(text: str, fast: str, out: list[_Candidate]) -> None:
    """Append ``random-token`` candidates for the shapes in the module docstring.

    Args:
        text: The text being redacted.
        fast: Its single-byte view (same length, see `redact._single_byte_view`).
        out: Candidate list to extend.
    """
    for m in _TOKEN.finditer(fast):
        s, e = m.span()
        tok = text[s:e]
        stop = e < len(fast) and fast[e] == "."
        if _whole_line(fast, s, e) or not _classify(tok, stop):
            continue
        if any(c in _B64 for c in tok) and _public_base64(tok, fast, s):
            continue
        out.append((s, e, _PRIO_ENTROPY, "random-token"))
