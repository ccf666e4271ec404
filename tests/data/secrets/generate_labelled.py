"""Generate ``labelled.jsonl``: fake secrets and look-alikes for the redaction tests.

Every secret here is synthetic: random characters from a seeded generator,
shaped to match its provider's format (prefix, length, alphabet), so the
redactor sees realistic input. None is, or was ever, a real credential.

Storage obfuscation: a committed file full of format-valid tokens would trip
GitHub push protection and other secret scanners. So every true-secret line
carries ``"obfuscation": "reversed"``: its ``text`` and ``secret`` fields are
stored with their characters in reverse order (context such as ``AccountKey=``
is reversed too, so context-anchored patterns do not fire either).
``memlens.core.redact.evaluate.load_labelled`` undoes this on load. Look-alike lines are
stored as-is and stay readable.

Usage (from the repository root)::

    uv run python tests/data/secrets/generate_labelled.py          # rewrite the file
    uv run python tests/data/secrets/generate_labelled.py --check  # verify it is current

Each line: ``{"id", "text", "secret", "format", "label", "obfuscation"?}``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import string
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "labelled.jsonl"
SEED = 20240611

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
# Never generated: substrings that the redactor treats as placeholders.
_AVOID = ("xxxx", "example", "dummy", "0000000", "here", "your", "changeme", "redacted")


class Gen:
    """Seeded source of format-valid random strings."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, n: int, alphabet: str = ALNUM, *, mixed: bool = True) -> str:
        """``n`` random chars; with ``mixed``, at least one digit, upper and lower
        (where the alphabet has them) and no placeholder-like substrings."""
        while True:
            out = "".join(self.rng.choice(alphabet) for _ in range(n))
            low = out.lower()
            if any(a in low for a in _AVOID):
                continue
            if mixed:
                needs = [cls for cls in (DIGITS, UPPER, LOWER) if set(cls) & set(alphabet)]
                if not all(set(out) & set(cls) for cls in needs):
                    continue
            return out

    def b(self, n: int) -> bytes:
        return bytes(self.rng.randrange(256) for _ in range(n))

    def password(self, n: int = 14, symbols: str = "!#%+=?@^_-.") -> str:
        while True:
            pw = self.s(n - 2, ALNUM) + self.rng.choice(symbols) + self.rng.choice(DIGITS)
            if "**" not in pw and ".." not in pw:
                return pw


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def pem(label: str, der: bytes, *, eol: str = "\n", width: int = 64, headers: str = "") -> str:
    body = b64(der)
    lines = [body[i : i + width] for i in range(0, len(body), width)]
    return eol.join(
        [f"-----BEGIN {label}-----", *([headers] if headers else []), *lines, f"-----END {label}-----"]
    )


def build(gen: Gen) -> list[dict[str, object]]:
    """All labelled examples, secrets first, in a stable order."""
    rows: list[dict[str, object]] = []

    def secret(fmt: str, template: str, value: str) -> None:
        assert "{s}" in template
        text = template.replace("{s}", value)
        assert text.count(value) == 1, (fmt, value)
        rows.append({"format": fmt, "label": "secret", "text": text, "secret": value})

    def lookalike(fmt: str, text: str) -> None:
        rows.append({"format": fmt, "label": "lookalike", "text": text, "secret": None})

    g = gen.s

    # --- cloud providers -------------------------------------------------
    secret("aws-access-key", "- Prod deploy user uses access key `{s}` (rotated 2024-03).",
           "AKIA" + g(16, UPPER + DIGITS))
    secret("aws-access-key", "```ini\n[ci]\nAWS_ACCESS_KEY_ID={s}\n```", "AKIA" + g(16, UPPER + DIGITS))
    secret("aws-access-key", '  "AccessKeyId": "{s}",', "ASIA" + g(16, UPPER + DIGITS))
    secret("aws-secret-key", "```ini\n[default]\naws_secret_access_key = {s}\nregion = eu-west-1\n```",
           g(40, B64))
    secret("aws-secret-key", '  "SecretAccessKey": "{s}",', g(40, B64))
    secret("azure-storage-key",
           "- Blob conn: `DefaultEndpointsProtocol=https;AccountName=memlensprod;AccountKey={s};"
           "EndpointSuffix=core.windows.net`", b64(gen.b(64)))
    secret("google-api-key", "Maps key for the demo: {s}", "AIza" + g(35, B64URL))
    secret("google-api-key", 'GOOGLE_API_KEY="{s}"', "AIza" + g(35, B64URL))
    secret("google-oauth-client-secret", "- OAuth client secret is {s} (desktop app)",
           "GOCSPX-" + g(28, B64URL))
    secret("google-oauth-access-token", "curl -H 'x-goog-token: {s}' https://www.googleapis.com/",
           "ya29." + g(120, B64URL))
    secret("databricks-token", "- Databricks PAT for the nightly job: {s}", "dapi" + g(32, HEX))
    secret("digitalocean-token", "doctl auth init --access-token {s}", "dop_v1_" + g(64, HEX))
    secret("url-signature",
           "Presigned upload: https://memlens-dumps.s3.amazonaws.com/db.tar?X-Amz-Algorithm="
           "AWS4-HMAC-SHA256&X-Amz-Date=20240301T101010Z&X-Amz-Expires=3600&X-Amz-Signature={s}",
           g(64, HEX))

    # --- code hosting and package registries -------------------------------
    for prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"):
        secret("github-token", f"- GitHub token ({prefix[:3]}) for the release bot: {{s}}",
               prefix + g(36))
    secret("github-fine-grained-pat", "export GH_TOKEN={s}",
           "github_pat_" + g(22) + "_" + g(59))
    secret("gitlab-token", "- GitLab deploy token: `{s}`", "glpat-" + g(20, B64URL))
    secret("gitlab-token", "git clone https://oauth2:{s}@gitlab.com/acme/infra.git",
           "glpat-" + g(20, ALNUM))
    secret("gitlab-runner-token", "gitlab-runner register --registration-token {s}",
           "GR1348941" + g(20, B64URL))
    secret("npm-token", "//registry.npmjs.org/:_authToken={s}", "npm_" + g(36))
    secret("pypi-token", "- Upload with `twine upload -u __token__ -p {s}`",
           "pypi-AgEIcHlwaS5vcmc" + g(140, B64URL))
    secret("huggingface-token", "HF_TOKEN={s} (read-only, for model downloads)", "hf_" + g(34))
    secret("huggingface-token", "- `huggingface-cli login --token {s}`", "hf_" + g(34))
    secret("shopify-token", "Shopify admin token: {s}", "shpat_" + g(32, HEX))

    # --- AI providers ------------------------------------------------------
    secret("anthropic-key", "- ANTHROPIC_API_KEY={s}",
           "sk-ant-api03-" + g(93, B64URL) + "AA")
    secret("anthropic-key", "Claude key for evals (personal, do not share): {s}",
           "sk-ant-api03-" + g(93, B64URL) + "AA")
    secret("claude-code-oauth-token", 'CLAUDE_CODE_OAUTH_TOKEN="{s}"', "sk-ant-oat01-" + g(95, B64URL))
    secret("openai-key", "- OpenAI key (legacy): {s}", "sk-" + g(48))
    secret("openai-key", 'client = OpenAI(api_key="{s}")',
           "sk-proj-" + g(74, B64URL) + "T3BlbkFJ" + g(74, B64URL))

    # --- messaging and payments ------------------------------------------
    secret("slack-bot-token", "- Slack bot token: {s}",
           "xoxb-" + g(12, DIGITS) + "-" + g(13, DIGITS) + "-" + g(24))
    secret("slack-user-token", "SLACK_USER_TOKEN: {s}",
           "xoxp-" + g(12, DIGITS) + "-" + g(12, DIGITS) + "-" + g(13, DIGITS) + "-" + g(32, HEX))
    secret("slack-webhook", "Alerts go to https://hooks.slack.com/services/{s}",
           "T" + g(8, UPPER + DIGITS) + "/B" + g(10, UPPER + DIGITS) + "/" + g(24))
    secret("discord-webhook", "- Discord deploy hook: https://discord.com/api/webhooks/{s}",
           g(18, DIGITS) + "/" + g(68, B64URL))
    secret("stripe-secret-key", "STRIPE_SECRET_KEY={s}", "sk_live_" + g(99))
    secret("stripe-restricted-key", "- Restricted Stripe key for reporting: `{s}`", "rk_live_" + g(99))
    secret("stripe-test-key", "stripe.api_key = '{s}'", "sk_test_" + g(99))
    secret("stripe-webhook-secret", "- Webhook signing secret: {s}", "whsec_" + g(32))
    secret("twilio-api-key", "- Twilio API key SID {s} (secret in 1Password)", "SK" + g(32, HEX))
    secret("twilio-auth-token", "TWILIO_AUTH_TOKEN={s}", g(32, HEX))
    secret("sendgrid-key", "SENDGRID_API_KEY='{s}'", "SG." + g(22, B64URL) + "." + g(43, B64URL))
    secret("mailgun-key", "- Mailgun: api:{s}", "key-" + g(32, HEX))

    # --- tokens in headers -------------------------------------------------
    header = b64url(b'{"alg":"HS256","typ":"JWT"}')
    payload = b64url(json.dumps({"sub": g(12), "iat": 1710000000}).encode())
    secret("jwt", "- Session JWT from staging: {s}", f"{header}.{payload}.{b64url(gen.b(32))}")
    header2 = b64url(b'{"alg":"RS256","kid":"' + g(8).encode() + b'"}')
    payload2 = b64url(json.dumps({"iss": "https://auth.acme.dev", "exp": 1790000000}).encode())
    secret("jwt", 'id_token saved in `.cache/session.json`: "{s}"',
           f"{header2}.{payload2}.{b64url(gen.b(256))}")
    secret("bearer-token", "curl -H 'Authorization: Bearer {s}' https://api.acme.dev/v1/me", g(40))
    secret("bearer-token", "- Internal API: send `Bearer {s}` in the header", g(32, B64URL) + "~")
    secret("basic-auth", "Authorization: Basic {s}", b64(b"deploy:" + gen.password(16).encode()))
    secret("auth-header", 'headers = {"Authorization": "token {s}"}', g(40, HEX))

    # --- passwords in URLs and connection strings ---------------------------
    secret("url-password", "git clone https://deploy:{s}@git.acme.dev/infra/memlens.git",
           gen.password(16, "!_-.~"))
    secret("postgres-url", "DATABASE_URL=postgres://app:{s}@db.internal:5432/memlens",
           gen.password(18, "!_-.~"))
    secret("mysql-url", "- Legacy DB: `mysql://reporter:{s}@10.1.2.3:3306/reports`",
           gen.password(12, "_-.~"))
    secret("mongodb-url", 'MONGO_URI="mongodb+srv://svc:{s}@cluster0.ab1cd.mongodb.net/app?retryWrites=true"',
           gen.password(20, "_-.~"))
    secret("redis-url", "- Cache: redis://:{s}@cache.internal:6379/0", g(32))
    secret("ado-connection-string",
           "Server=tcp:sql.acme.dev,1433;Database=app;User ID=app;Password={s};Encrypt=true;",
           gen.password(16, "!#%+=?@^_-."))

    # --- key/value assignments ----------------------------------------------
    secret("password-assignment", 'db_password = "{s}"', gen.password(14))
    secret("password-assignment", "```yaml\ndatabase:\n  user: app\n  password: {s}\n```", gen.password(14))
    secret("password-assignment", "POSTGRES_PASSWORD={s}", gen.password(20))
    secret("password-assignment", '{"username": "admin", "password": "{s}"}', gen.password(12))
    secret("password-assignment", "- **Wi-Fi password:** {s}", gen.password(12))
    secret("password-assignment", "mysql --user=root --password={s} app", gen.password(10))
    secret("passphrase-assignment", "- SSH key passphrase: '{s}'", "correct horse " + g(6, LOWER) + " staple")
    secret("password-cli-flag", "docker login registry.acme.dev --username ci --password {s}",
           gen.password(18))
    secret("secret-assignment", "client_secret: {s}", g(40, B64URL))
    secret("secret-assignment", '  "api_key": "{s}",', g(32, HEX))
    secret("secret-assignment", "WEBHOOK_SECRET={s}", g(48))
    secret("secret-assignment", "- refresh_token = {s}", g(64, B64URL))
    secret("secret-assignment", "settings.SECRET_KEY = '{s}'", g(50, ALNUM + "!@#%^*(-_=+)"))
    secret("secret-assignment", "X-Api-Key: {s}", g(32))
    secret("secret-assignment", "session_token: {s}  # expires Friday", g(44, B64))
    secret("high-entropy-assignment", "- encryption_key = {s}", b64(gen.b(32)))
    secret("prose-password", "- The staging DB password is `{s}` (user `app`).", gen.password(12))
    secret("prose-password", "Note: the Wi-Fi password is {s}", gen.password(12))
    secret("mysql-cli-password", "mysqldump -u backup -p{s} --all-databases > dump.sql",
           gen.password(14, "_!%"))
    secret("docker-login-password", "docker login registry.acme.dev -u ci -p {s}", gen.password(18))
    secret("cookie", "curl -H 'Cookie: theme=dark; session_id={s}' https://app.acme.dev/api", g(40))
    secret("rails-secret-key-base", "secret_key_base: {s}", g(128, HEX))
    secret("netrc-password", "```\nmachine api.acme.dev login deploy password {s}\n```", gen.password(16))
    secret("aws-session-token", "AWS_SESSION_TOKEN={s}", "IQoJb3JpZ2luX2Vj" + g(300, B64))
    secret("uuid-api-key", "- HEROKU_API_KEY={s}",
           "-".join(g(n, HEX, mixed=False) for n in (8, 4, 4, 4, 12)))
    secret("secret-assignment", "- **API key:** `{s}`", g(40))
    secret("age-secret-key", "- age identity for backups: {s}", "AGE-SECRET-KEY-1" + g(58, UPPER + DIGITS))
    secret("linear-key", "LINEAR_API_KEY={s}", "lin_api_" + g(40))

    # --- private keys -------------------------------------------------------
    secret("pem-rsa", "Deploy key (old):\n\n```\n{s}\n```\n\nReplaced by the ed25519 key in March.",
           pem("RSA PRIVATE KEY", b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00" + gen.b(1180)))
    secret("pem-ec", "{s}", pem("EC PRIVATE KEY", b"\x30\x77\x02\x01\x01\x04\x20" + gen.b(112)))
    secret("openssh-private-key", "~/.ssh/id_ed25519 on the build box:\n\n    {s}\n",
           pem("OPENSSH PRIVATE KEY", b"openssh-key-v1\x00" + gen.b(380), eol="\n    ", width=70))
    secret("pem-pkcs8-json", '  "private_key": "{s}\\n",',
           pem("PRIVATE KEY", b"\x30\x82\x04\xbd\x02\x01\x00\x30\x0d" + gen.b(1200), eol="\\n"))
    secret("pem-encrypted", "> {s}",
           pem("ENCRYPTED PRIVATE KEY", b"\x30\x82\x05\x0e\x30\x40" + gen.b(1290), eol="\n> "))
    secret("pem-rsa-legacy-encrypted", "{s}\n",
           pem("RSA PRIVATE KEY", gen.b(1190),
               headers="Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC," + g(32, HEX).upper() + "\n"))
    unterminated = pem("RSA PRIVATE KEY", b"\x30\x82\x02\x5c\x02\x01\x00" + gen.b(600))
    unterminated = unterminated.rsplit("\n", 1)[0]  # drop the footer
    secret("pem-unterminated", "Pasted from the old wiki (truncated):\n\n{s}\n\nAsk Dana for the rest.",
           unterminated)
    secret("pgp-private-key", "{s}",
           pem("PGP PRIVATE KEY BLOCK", gen.b(900), headers="Version: GnuPG v2\n"))

    # --- look-alikes -----------------------------------------------------
    sha1 = hashlib.sha1(b"memlens").hexdigest()
    sha256 = hashlib.sha256(b"memlens").hexdigest()
    lookalike("git-sha", f"Fixed in commit {sha1} (see PR #412).")
    lookalike("git-sha", "- Regression introduced by `a1b2c3d`; reverted in `9f8e7d6`.")
    lookalike("sha256", f"Release tarball sha256: {sha256}")
    lookalike("sha256", f"checksum: {hashlib.sha256(b'checksum').hexdigest()}")
    lookalike("docker-digest", f"image: ghcr.io/acme/api@sha256:{sha256}")
    lookalike("uuid", "Workspace id 123e4567-e89b-12d3-a456-426614174000 is the staging one.")
    lookalike("placeholder", "OPENAI_API_KEY=YOUR_API_KEY")
    lookalike("placeholder", "Authorization: Bearer <your-token>")
    lookalike("placeholder", "api_key: xxx")
    lookalike("placeholder", "token: xxxxxxxxxxxxxxxx")
    lookalike("placeholder", "password: changeme")
    lookalike("placeholder", "api_key: <YOUR_KEY_HERE>")
    lookalike("placeholder", "- Set `ANTHROPIC_API_KEY=sk-ant-...` in your shell profile.")
    lookalike("env-reference", 'api_key = "${API_KEY}"')
    lookalike("env-reference", "export GITHUB_TOKEN=$TOKEN")
    lookalike("env-reference", 'token = os.environ["API_KEY"]')
    lookalike("env-reference", "const token = process.env.TOKEN;")
    lookalike("env-reference", "SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY')")
    lookalike("env-reference", "client_secret: ${CLIENT_SECRET}")
    lookalike("env-reference", "      token: ${{ secrets.GITHUB_TOKEN }}")
    lookalike("env-reference", "postgres://app:${DB_PASSWORD}@localhost:5432/app")
    lookalike("aws-example-key", "AWS docs use `AKIAIOSFODNN7EXAMPLE` as the sample key id.")
    lookalike("aws-example-key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    lookalike("masked", "password: ********")
    lookalike("masked", 'password: "********"')
    lookalike("masked", "token: ghp_************************************")
    lookalike("count", "token_count = 400")
    lookalike("count", "max_tokens: 400")
    lookalike("count", '{"token_type": "bearer", "expires_in": 3600}')
    lookalike("identifier", "See secret_santa.md for the gift list.")
    lookalike("identifier", "password_policy: strict")
    lookalike("identifier", "secretName: db-credentials")
    lookalike("identifier", "npm_config_registry=https://registry.npmjs.org/")
    lookalike("identifier", "from huggingface_hub import hf_hub_download")
    lookalike("identifier", "The `task-sk-list-refresh` component re-renders the sidebar.")
    lookalike("type-annotation", "def connect(api_key: str, timeout: float = 5.0) -> Client:")
    lookalike("code", "password = getpass.getpass()")
    lookalike("prose", "The token bucket refills at 10 tokens per second.")
    lookalike("prose", "Basic understanding of OAuth is assumed.")
    lookalike("prose", "Bearer tokens expire after one hour; use the refresh token.")
    lookalike("prose", "Secret: the plan is to ship on Friday.")
    lookalike("prose", "Password: stored in the team vault, never in the repo.")
    lookalike("prose", "- The access_key and secret_key fields are required.")
    lookalike("prose", "Use `--password-stdin` with docker login.")
    lookalike("prose", "GitHub classic tokens start with `ghp_`; fine-grained ones with `github_pat_`.")
    lookalike("prose", "xoxo, the platform team")
    lookalike("pem-header-only", "PKCS#8 files start with `-----BEGIN PRIVATE KEY-----`.")
    lookalike("pem-header-only", "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----")
    lookalike("base64-image",
              "![dot](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42"
              "mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)")
    lookalike("base64-json", "Decoded, `eyJhbGciOiJIUzI1NiJ9` is just the JWT header.")
    lookalike("markdown-link", "[Token rotation runbook](https://docs.acme.dev/auth/tokens#rotation)")
    lookalike("url", "https://github.com/acme/memlens/pull/42")
    lookalike("url", "git@github.com:acme/memlens.git")
    lookalike("url", "redis://localhost:6379/0")
    lookalike("url", "ssh://git@git.acme.dev:2222/infra/memlens.git")
    lookalike("file-path", "Credentials live in ~/.aws/credentials and ~/.ssh/id_ed25519.")
    lookalike("file-path", "PWD=/home/dev/projects/memlens")
    lookalike("file-path", "private_key: /etc/ssl/private/memlens.pem")
    lookalike("semver", "Bumped to v2.14.0-rc.1+build.20240311.")
    lookalike("timestamp", "Last rotated 2024-05-01T12:34:56Z by the cron job.")
    lookalike("publishable-key", "Stripe publishable key is pk_live_51H8xyzPUBLIC (safe in the client).")
    lookalike("twilio-account-sid", f"Twilio account SID AC{hashlib.md5(b'acct').hexdigest()}")
    lookalike("auth-realm", 'WWW-Authenticate: Basic realm="Restricted"')
    lookalike("public-key", "deploy@ci: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + g(43, B64) + " deploy@ci")
    lookalike("public-key", "- Build box host key: ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + g(300, B64))
    lookalike("public-key", pem("PUBLIC KEY", b"\x30\x82\x01\x22\x30\x0d" + gen.b(288)))
    lookalike("certificate", "CA bundle:\n\n" + pem("CERTIFICATE", b"\x30\x82\x03\x5c\x30\x82" + gen.b(860)))
    lookalike("npm-integrity", '"integrity": "sha512-' + b64(gen.b(64)) + '"')
    lookalike("test-log", "--- PASS: TestRedactPem (0.00s)")
    lookalike("test-log", "PASS: tests/test_redact.py::test_pem_block_removed_with_body")
    lookalike("code", "ids = tokenizer.encode(text)")
    lookalike("code", "password = request.form['password']")
    lookalike("code", "secret = secrets.token_hex(32)")
    lookalike("prose", "Primary key: id; foreign key: user_id")
    lookalike("prose", "- SSH key: ~/.ssh/id_ed25519 (passphrase in 1Password)")
    lookalike("prose", "- API key rotation happens every 90 days.")
    lookalike("prose", "The password is stored in the team vault.")
    lookalike("prose", "Use password `--password-stdin` instead of -p.")
    lookalike("key-id", "- GPG signing key: 0x1234ABCD")
    lookalike("short-sha", "token: 3f2a9c1e (short sha of the fix)")
    lookalike("cookie", "Set-Cookie: theme=dark; Path=/; HttpOnly; SameSite=Lax")
    lookalike("cli", "ssh -p 2222 deploy@build.acme.dev")
    lookalike("cli", "mkdir -p ~/.config/memlens")
    lookalike("auth-realm", 'WWW-Authenticate: Bearer realm="api", error="invalid_token"')

    counters: dict[str, int] = {}
    out: list[dict[str, object]] = []
    for row in rows:
        fmt = str(row["format"])
        counters[fmt] = counters.get(fmt, 0) + 1
        rid = f"{row['label']}-{fmt}-{counters[fmt]}"
        entry: dict[str, object] = {"id": rid, **row}
        if row["label"] == "secret":
            entry["text"] = str(row["text"])[::-1]
            entry["secret"] = str(row["secret"])[::-1]
            entry["obfuscation"] = "reversed"
        out.append(entry)
    return out


def render(rows: list[dict[str, object]]) -> str:
    keys = ("id", "text", "secret", "format", "label", "obfuscation")
    return "".join(
        json.dumps({k: r[k] for k in keys if k in r}, ensure_ascii=False) + "\n" for r in rows
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the file is not current")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    content = render(build(Gen(SEED)))
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != content:
            print(f"{args.out} is stale: rerun {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(content, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
