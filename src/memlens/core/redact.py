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
huggingface-token    ``hf_...`` and ``api_org_...``
databricks-token     ``dapi...``
digitalocean-token   ``dop_v1_`` ``doo_v1_`` ``dor_v1_``
shopify-token        ``shpat_`` ``shpss_`` ``shpca_`` ``shppa_``
age-secret-key       ``AGE-SECRET-KEY-1...``
mailgun-key          ``key-`` + 32 hex
linear-key           ``lin_api_...``
atlassian-token      ``ATATT3...`` Atlassian API tokens
onepassword-token    ``ops_eyJ...`` 1Password service-account tokens
grafana-token        ``glsa_`` service-account and ``glc_`` cloud tokens
notion-token         ``ntn_...``
vault-token          HashiCorp Vault ``hvs.`` / ``hvb.`` tokens
docker-token         ``dckr_pat_...``
groq-key             ``gsk_`` + 52
xai-key              ``xai-`` + 80
supabase-token       ``sbp_`` + 40 hex
pulumi-token         ``pul-`` + 40 hex
doppler-token        ``dp.pt.`` + 43
heroku-key           ``HRKU-...``
postman-key          ``PMAK-<24 hex>-<34 hex>``
sentry-token         ``sntrys_`` and ``sntryu_`` tokens
random-token         fallback: a standalone 32+ character token mixing upper,
                     lower case and digits, entropy >= 4 (not hex: git SHAs kept)
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

Run ``python -m memlens.core.redact_eval --evaluate tests/data/secrets/labelled.jsonl``
for recall/precision on the labelled set, or ``python -m memlens.core.redact FILE``
to redact a file to stdout.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from .redact_eval import Evaluation, LabelledExample, evaluate, load_labelled
from .redact_rules import (
    _TOKEN_RULES,
    MARKER_RE,
    Finding,
    RedactionResult,
    _Candidate,
    _scan_pem,
    _scan_tokens,
    _scan_url_passwords,
    marker,
)
from .redact_scan import _scan_folded, _scan_random

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
    _scan_random(text, fast, out)
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
        "random-token",
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


if __name__ == "__main__":  # ``python -m memlens.core.redact``: the CLI lives in redact_eval
    from memlens.core.redact_eval import main

    main()
