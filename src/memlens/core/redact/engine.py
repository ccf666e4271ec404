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
aws-bedrock-key      Amazon Bedrock API key (``ABSKQmVkcm9ja0FQSUtleS`` + 110, or
                     ``bedrock-api-key-`` + base64)
github-token         ``ghp_`` ``gho_`` ``ghu_`` ``ghs_`` ``ghr_`` and ``github_pat_``
gitlab-token         ``glpat-``, the other ``gl*-`` GitLab token prefixes, and
                     ``GR1348941`` runner registration tokens
slack-token          ``xoxb-`` ``xoxp-`` ``xoxa-`` ``xoxr-`` ``xoxs-`` ``xoxe-`` ``xapp-``
slack-webhook        the secret path of a ``hooks.slack.com`` webhook URL
discord-webhook      the id/token path of a Discord webhook URL
teams-webhook        the path of a Microsoft Teams ``webhook.office.com`` webhook URL
anthropic-key        ``sk-ant-...`` (API, admin and Claude Code OAuth tokens)
openai-key           ``sk-...``, ``sk-proj-...``, ``sk-svcacct-...``
stripe-key           ``sk_live_`` ``rk_live_`` ``sk_test_`` ``rk_test_`` ``whsec_``
google-api-key       ``AIza...``
google-oauth         ``GOCSPX-...`` client secrets and ``ya29.`` access tokens
twilio-api-key       ``SK`` + 32 hex
sendgrid-key         ``SG.<22>.<43>``
npm-token            ``npm_...``
pypi-token           ``pypi-...``
huggingface-token    ``hf_...`` and ``api_org_...``
databricks-token     ``dapi...``
digitalocean-token   ``dop_v1_`` ``doo_v1_`` ``dor_v1_``
shopify-token        ``shpat_`` ``shpss_`` ``shpca_`` ``shppa_``
age-secret-key       ``AGE-SECRET-KEY-1...``
mailgun-key          ``key-`` + 32 hex, ``pubkey-`` + 32 hex
linear-key           ``lin_api_...``
atlassian-token      ``ATATT3...`` Atlassian API tokens
onepassword-token    ``ops_eyJ...`` 1Password service-account tokens
grafana-token        ``glsa_`` service-account and ``glc_`` cloud tokens
notion-token         ``ntn_...``
vault-token          HashiCorp Vault ``hvs.`` / ``hvb.`` tokens and legacy
                     ``s.`` + 24 (mixed case and digits)
docker-token         ``dckr_pat_...``
groq-key             ``gsk_`` + 52
xai-key              ``xai-`` + 80
supabase-token       ``sbp_`` + 40 hex
pulumi-token         ``pul-`` + 40 hex
doppler-token        ``dp.pt.`` + 43
heroku-key           ``HRKU-...``
postman-key          ``PMAK-<24 hex>-<34 hex>``
sentry-token         ``sntrys_`` and ``sntryu_`` tokens
intra42-secret       42 Intra ``s-s4t2ud-`` / ``s-s4t2af-`` + 64 hex
octopus-key          Octopus Deploy ``API-`` + 26 upper case letters and digits
onepassword-secret   1Password secret key: ``A3-`` and five more dash-separated groups
airtable-token       ``pat`` + 14 + ``.`` + 64 hex
alibaba-key          ``LTAI`` + 20 (letters and digits)
authress-key         ``sc_`` ``ext_`` ``scauth_`` ``authress_`` + ``<id>.<id>.acc_...``
braintree-token      ``access_token$production$<16>$<32 hex>`` (or ``$sandbox$``)
buildkite-token      ``bkua_`` + 40 hex
cloudflare-ca-key    Cloudflare origin CA key ``v1.0-<24 hex>-<146 hex>``
defined-net-token    Defined Networking ``dnkey-<26>-<52>``
dropbox-token        ``sl.`` + 135 or more; long-lived ``<11>AAAAAAAAAA<43>``
duffel-token         ``duffel_live_`` / ``duffel_test_`` + 43
dynatrace-token      ``dt0c01.<24>.<64>``
flutterwave-key      ``FLWSECK`` / ``FLWPUBK`` (``_TEST``) + ``-`` + 12 or 32 + ``-X``
frameio-token        ``fio-u-`` + 64
gitlab-session       the value of ``_gitlab_session=`` (32 lower case and digits)
gocardless-token     ``live_`` + 40 (random-looking)
harness-token        ``pat.`` / ``sat.`` + ``<22>.<24>.<20>``
infracost-token      ``ico-`` + 32 (upper and lower case and digits)
launchdarkly-key     ``api-`` / ``sdk-`` + a UUID
lob-key              ``live_`` / ``test_`` + 35 hex, ``live_pub_`` / ``test_pub_`` + 31 hex
mailchimp-key        32 hex + ``-us`` + the data-centre number
mapbox-token         ``pk.`` / ``sk.`` + 40 or more + ``.`` + 22
newrelic-key         ``NRAK-`` + 27, ``NRII-`` + 32, ``NRJS-`` + 19 hex
plaid-token          ``access-(sandbox|development|production)-<uuid>``
planetscale-token    ``pscale_tkn_`` ``pscale_pw_`` ``pscale_oauth_`` + 32-64
rubygems-token       ``rubygems_`` + 48 hex
settlemint-token     ``sm_aat_`` ``sm_pat_`` ``sm_sat_`` + 16
sonarqube-token      ``squ_`` ``sqp_`` ``sqa_`` + 40
square-token         Square OAuth secret ``sq0csp-`` + 43
telegram-bot-token   Telegram bot token ``<5-16 digits>:A`` + 34
terraform-token      Terraform Cloud ``<14>.atlasv1.<60-70>``
typeform-token       ``tfp_`` + 59
yandex-token         Yandex Cloud IAM token ``t1.<...>.<86>``
azure-client-secret  Azure AD (Entra ID) client secrets: 3 characters, a digit,
                     ``Q~``, then 31-34 characters
<user rule name>     a match of a user rule (``[[redact.rules]]`` in the config
                     file; `memlens.core.redact.user_rules`)
random-token         fallback: a standalone 32+ character token mixing upper,
                     lower case and digits, entropy >= 4 (not hex: git SHAs kept);
                     24-31 characters with stricter tests (identifiers such as
                     ``handleOAuth2Callback`` kept); standard base64 (``+/=``)
                     of 24+ characters, entropy >= 4.2, unless a digest or
                     public key by context; 32+ lower case and digits, not hex
                     (`memlens.core.redact.entropy`)
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
                     mongodb+srv://, redis:// included), and a random-looking
                     token as the user part: ``https://TOKEN@host``
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
base64 digests and public keys (``sha512-...`` integrity values, key pins, SSH
public keys, ``data:`` URIs), Google API keys published in the Firebase SDKs,
malformed vendor samples (an ``sk-ant-api03-`` value of the wrong length that
reads ``abc123xyz...``, ``xoxp-1234-1234-1234-...``),
placeholders (``YOUR_API_KEY``, ``<your-token>``, ``xxx``, ``********``,
``changeme``, ``${API_KEY}``, ``$TOKEN``, ``os.environ["API_KEY"]``,
``process.env.TOKEN``, ``{{ secrets.X }}``), values containing ``EXAMPLE`` (AWS's
documented ``AKIAIOSFODNN7EXAMPLE``), type annotations (``token: str``), counts
(``max_tokens: 400``), identifiers such as ``token_count`` or ``secret_santa.md``,
prose (``the token bucket refills``), and PEM headers quoted without a key body.
``changeme`` is kept on purpose: it is a publicly known default, not a secret,
and documentation uses it as a placeholder. Documentation fakes are kept too: a
value without a vendor prefix holding six characters in alphabet or digit order
(``abcdef``, ``123456``, also over its letters or digits alone), and any token
made of a short unit repeated (``123123123123``) or mostly of one character
(``glc_1111...``).

Before matching, zero-width characters (U+200B..U+200D, U+2060, U+FEFF, soft
hyphen) are ignored and Cyrillic/Greek/fullwidth look-alikes of ASCII letters
are read as ASCII, so ``ghp_\u200b...`` or a key typed with a Cyrillic ``о`` is
still found; the finding covers the original characters.

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

Run ``python -m memlens.core.redact.evaluate --evaluate tests/data/secrets/labelled.jsonl``
for recall/precision on the labelled set, or ``python -m memlens.core.redact.engine FILE``
to redact a file to stdout.
"""

from __future__ import annotations

import bisect
import functools
import re
import string
from collections.abc import Callable, Sequence
from typing import Any

from memlens.core.redact.entropy import scan_entropy
from memlens.core.redact.rules import (
    MARKER_RE,
    Finding,
    RedactionResult,
    _Candidate,
    _scan_pem,
    _scan_url_passwords,
    marker,
)
from memlens.core.redact.rules_tokens import _TOKEN_RULES, _scan_tokens
from memlens.core.redact.scan import _scan_azure_client_secrets, _scan_folded, _scan_random, scan_repeats
from memlens.core.redact.user_rules import scan as _scan_user_rules

__all__ = [
    "KINDS",
    "MARKER_RE",
    "Finding",
    "RedactionResult",
    "marker",
    "redact",
    "redact_path",
]


# --------------------------------------------------------------------------
# Merging and output
# --------------------------------------------------------------------------


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
    _scan_azure_client_secrets(text, fast, out)
    hexes = _scan_random(text, fast, out)
    scan_entropy(text, fast, out)
    # bytes.lower() folds ASCII letters only (fast, and one character per character).
    low = fast.encode("latin-1").lower().decode("latin-1")
    _scan_folded(text, low, markers, out, hexes)
    _scan_user_rules(text, out)  # [[redact.rules]] of the config file (user_rules.install)
    return markers


def _detect(text: str) -> list[Finding]:
    """First pass: every detector over the whole text, then overlap merging."""
    candidates: list[_Candidate] = []
    fast = _single_byte_view(text)
    markers = _scan_line_local(text, fast, candidates)
    _scan_pem(fast, candidates)
    if not candidates:
        return []
    found = _merge(_subtract_markers(candidates, markers))
    before = len(candidates)
    scan_repeats(text, [(f.start, f.end, f.kind) for f in found], candidates)
    return _merge(_subtract_markers(candidates, markers)) if len(candidates) > before else found


# Unicode normalisation ---------------------------------------------------------
# A key pasted with a zero-width space inside, or typed with a Cyrillic "о" or a
# fullwidth "Ａ", must still be found. Detectors run on a normalised copy: the
# characters below are mapped to their ASCII look-alikes (one to one, so offsets
# are kept) and zero-width characters are deleted; finding spans are mapped back
# to the original text, where they cover the deleted characters too.

_ZERO_WIDTH = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
_LOOKALIKES = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x",
    "ѕ": "s", "і": "i", "ј": "j", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
    "С": "C", "Т": "T", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ү": "Y", "Ԛ": "Q",
    "Ԝ": "W",
    # Greek
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "ο": "o", "ν": "v",
    # dashes and spaces
    "\u2010": "-", "\u2011": "-", "\u2212": "-",
    "\u00a0": " ", "\u2007": " ", "\u202f": " ",
}
_FULLWIDTH = (  # fullwidth 0-9 A-Z a-z - . _ : always read as ASCII
    [*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B), 0xFF0D, 0xFF0E, 0xFF3F]
)
_NEEDS_NORMALISING = re.compile(
    "[" + _ZERO_WIDTH + "".join(_LOOKALIKES) + "".join(map(chr, _FULLWIDTH)) + "]"
)
_NORM_CHUNK = 1 << 20
# Character classes of the normalisation tables.
_OTHER, _ASCII_WORD, _LOOKALIKE, _WIDE, _ZW = range(5)


@functools.cache
def _norm_tables() -> tuple[Any, Any]:
    """Per BMP code point: its class, and the code point it is read as."""
    import numpy as np

    cls = np.zeros(0x10000, np.uint8)
    target = np.arange(0x10000, dtype=np.uint32)
    for c in string.ascii_letters + string.digits + "_-":
        cls[ord(c)] = _ASCII_WORD
    for k, v in _LOOKALIKES.items():
        cls[ord(k)], target[ord(k)] = _LOOKALIKE, ord(v)
    for c in _FULLWIDTH:
        cls[c], target[c] = _WIDE, c - 0xFEE0
    for z in _ZERO_WIDTH:
        cls[ord(z)] = _ZW
    return cls, target


def _normalise_chunk(chunk: str) -> tuple[str | None, Any]:
    """Normalise ``chunk``; also return the chunk offsets of the deleted characters.

    The string is None when nothing had to change.

    A look-alike is read as ASCII only inside a run of token characters that
    holds an ASCII word character (``ghр_...``), so Russian or Greek prose is not
    rewritten into Latin look-alikes. Vectorised: a per-character Python loop
    would cost seconds on a large Cyrillic document.
    """
    import numpy as np

    cls_table, target = _norm_tables()
    codes = np.frombuffer(chunk.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    bmp = np.minimum(codes, 0xFFFF)  # astral characters are never normalised
    cls = cls_table[bmp]
    tok = cls != _OTHER
    look = cls == _LOOKALIKE
    if look.any():
        run = np.cumsum(tok & ~np.concatenate(([False], tok[:-1])))
        anchored = np.bincount(run[(cls == _ASCII_WORD) | (cls == _WIDE)], minlength=run[-1] + 1)
        look &= anchored[run] > 0
    change = look | (cls == _WIDE)
    if change.any():
        codes = np.where(change, target[bmp], codes)
    zero_width = cls == _ZW
    removed = np.flatnonzero(zero_width)
    if removed.size:
        codes = codes[~zero_width]
    elif not change.any():
        return None, removed
    return codes.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass"), removed


def _normalise(text: str) -> tuple[str | None, list[int]]:
    """The normalised text (None if unchanged) and the offsets of deleted characters."""
    pieces: list[str] = []
    removed: list[int] = []
    changed = False
    pos, n = 0, len(text)
    while pos < n:  # chunks end at whitespace, which no run of token characters crosses
        end = min(n, pos + _NORM_CHUNK)
        if end < n:
            cut = max(text.rfind("\n", pos, end), text.rfind(" ", pos, end))
            end = cut + 1 if cut > pos else end
        piece, gone = _normalise_chunk(text[pos:end])
        changed = changed or piece is not None
        pieces.append(text[pos:end] if piece is None else piece)
        removed.extend((gone + pos).tolist())
        pos = end
    return ("".join(pieces) if changed else None), removed


def _normalised(detect: Callable[[str], list[Finding]], text: str) -> list[Finding]:
    """Run ``detect`` on ``text`` and, if it differs, on its normalised form.

    Spans refer to ``text``. The findings of both runs are merged, so that
    normalising never loses a finding (a zero-width space that separated two
    tokens glues them together once deleted).
    """
    if text.isascii() or not _NEEDS_NORMALISING.search(text):
        return detect(text)
    norm, removed = _normalise(text)
    if norm is None:
        return detect(text)
    # The j-th deleted character sat just before position removed[j] - j of norm.
    shifts = [r - j for j, r in enumerate(removed)]

    def orig(i: int) -> int:
        return i + bisect.bisect_right(shifts, i)

    # Where spans overlap, the normalised run names the finding (it sees more).
    both = [(orig(f.start), orig(f.end - 1) + 1, 0, f.kind) for f in detect(norm)]
    both += [(f.start, f.end, 1, f.kind) for f in detect(text)]
    return _merge(both)


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
    found = _merge(_subtract_markers(candidates, markers))
    before = len(candidates)
    scan_repeats(out, [(f.start, f.end, f.kind) for f in found], candidates)
    return _merge(_subtract_markers(candidates, markers)) if len(candidates) > before else found


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
    findings = _normalised(_detect, text)
    if not findings:
        return RedactionResult(text, ())
    out, ends = _render(text, findings)
    for _ in range(_MAX_PASSES - 1):
        more = _normalised(_detect_again, out)
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


_PATH_SEP = re.compile(r"([/\\])")


def redact_path(path: str) -> str:
    """Redact secrets in a file path, one component at a time.

    A token used as a file or directory name (``notes/ghp_<36>.md``) is found
    even though, in running text, a token glued to ``/`` or ``.md`` is read as
    part of a path and kept. Each component is redacted as standalone text with
    its extension set apart; separators and extensions are kept.

    Args:
        path: A relative or absolute path (``/`` or ``\\`` separated).

    Returns:
        The path with each secret-bearing part replaced by its marker;
        ``path`` itself when nothing was found.
    """
    parts = _PATH_SEP.split(path)
    for i, part in enumerate(parts):
        if i % 2 or not part:
            continue
        stem, dot, ext = part.rpartition(".")
        if not stem or not ext.isalnum() or len(ext) > 8:
            stem, dot, ext = part, "", ""
        red = redact(stem).text
        if red != stem:
            parts[i] = red + dot + ext
    return "".join(parts)


#: Every kind `redact` can emit.
KINDS: frozenset[str] = frozenset(
    {r.kind for r in _TOKEN_RULES}
    | {
        "random-token",
        "azure-client-secret",
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

