"""Secrets: API keys and tokens by a maintained rule set (Kingfisher's 488 rules, gitleaks'
lineage: `maintained`) and by their providers' prefixes, private-key blocks, JWTs, passwords in
URLs, values given to a password or a key ("password: ...", "api_key=...", "密码：..."), and what
`credentials` and `wallets` read (a Basic header, a session cookie, a command line's password, a
seed phrase, a wallet's key). A key written as a documentation example ("AKIAIOSFODNN7EXAMPLE")
is none.

Each pattern is tried only where its literal occurs (`anchors.anchored`); the literals are found
in one pass with the scan's other anchors (`ANCHORS`). The rule set runs in Rust (a 1,000-token
conversation: 0.02-0.05 ms, most of it the call), on a text that holds a run a key could be.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING

from classifiers.privacy.anchors import Anchors, Hits, anchored, starts_of
from classifiers.privacy.credentials import CUES as CREDENTIALS
from classifiers.privacy.credentials import credentials
from classifiers.privacy.findings import Finding

if TYPE_CHECKING:
    import kingfisher_sdk

# (the literals a key begins with, its pattern)
_KEY_PATTERNS = [
    (("sk-",), r"\bsk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-)?[A-Za-z0-9_-]{20,}"),  # OpenAI, Anthropic
    (("AKIA", "ASIA", "ABIA"), r"\b(?:AKIA|ASIA|ABIA)[0-9A-Z]{16}\b"),  # AWS access key id
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b"),  # GitHub tokens
    (("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{60,255}\b"),
    (("glpat-",), r"\bglpat-[A-Za-z0-9_-]{20,}\b"),  # GitLab
    (("xox",), r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),  # Slack
    (("AIza",), r"\bAIza[0-9A-Za-z_-]{35}\b"),  # Google API key
    (("sk_live_", "rk_live_", "pk_live_"), r"\b(?:sk|rk|pk)_live_[0-9A-Za-z]{20,}\b"),  # Stripe
    (("sk_test_", "rk_test_"), r"\b(?:sk|rk)_test_[0-9A-Za-z]{20,}\b"),
    (("hf_",), r"\bhf_[A-Za-z0-9]{30,}\b"),  # Hugging Face
    (("SG.",), r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"),  # SendGrid
    (
        ("-----BEGIN",),
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
        r"(?: BLOCK)?-----",
    ),
]


def _bounded(pattern: str) -> str:
    """A key's word boundaries as ASCII ones: a key right against a word in Chinese or Japanese
    ("密钥sk-...") has no `\\b` before it, since those letters are word characters too."""
    if pattern.startswith(r"\b"):
        pattern = r"(?<![A-Za-z0-9_])" + pattern[2:]
    return pattern[:-2] + r"(?![A-Za-z0-9_])" if pattern.endswith(r"\b") else pattern


_KEYS = [(frozenset(literals), re.compile(_bounded(pattern))) for literals, pattern in _KEY_PATTERNS]
_KEY_OF = {literal: key for key in _KEYS for literal in key[0]}
_URL = frozenset(("://",))
_JWT = re.compile(r"(?<![A-Za-z0-9_])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
# "password" in the languages PUPA's and WildChat's users write most, and their "is"; a value ends
# at full-width punctuation, kana, hangul or an ideograph as at a space ("密码：hunter22。",
# "パスワードはhunter22です").
_PASSWORD_WORDS = ("mot de passe", "contraseña", "senha", "passwort", "kennwort", "wachtwoord", "parola", "пароль")
_PASSWORD_SCRIPTS = ("密码", "密碼", "パスワード", "비밀번호", "كلمة المرور", "كلمة السر")
_ASSIGNED = re.compile(
    r"(?i)(?<![a-z0-9])(?:(?:password|passwd|passphrase|pwd|pass|secret|client[_-]?secret|api[_-]?key|access[_-]?key|"
    rf"auth[_-]?token|token|aws_secret_access_key|{'|'.join(_PASSWORD_WORDS)})(?![a-z0-9_])|{'|'.join(_PASSWORD_SCRIPTS)})"
    r"[\"']?\s*(?:[:=：]|\bis\b|是|は|는)\s*[\"']?([^\s\"',;。，；：！？、\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7a3]{6,})"
)
_ASSIGNED_STARTS: tuple[str, ...] = ("pass", "pwd", "secret", "client", "api", "access", "auth", "token", "aws_secret")
_ASSIGNED_STARTS += tuple(w for w in _PASSWORD_WORDS if not w.startswith("pass")) + _PASSWORD_SCRIPTS
_URL_CREDENTIALS = re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,64}:([^\s@/]{3,128})@")
_SCHEME = 21  # the longest scheme the pattern reads before "://"
_ASSIGNED_SET = frozenset(_ASSIGNED_STARTS)
_NOT_SECRETS = frozenset(("none", "null", "true", "false", "required", "optional", "********"))


# What stands in for a secret in code and docs: a reference to one ("os.getenv(", "process.env.
# API_KEY", "${TOKEN}", "<REDACTED>"), a name in capitals ("YOUR_API_KEY", "DEIN_API_KEY",
# "TU_TOKEN_AQUI"), or the words that say so ("your_key_here", "changeme").
_REFERENCE = re.compile(r"[(${<%]|^(?:process\.env|os\.environ|env)\.", re.IGNORECASE)
_NAME_IN_CAPITALS = re.compile(r"[A-Z]+(?:_[A-Z]+)+")
_STAND_IN_WORDS = re.compile(
    r"(?:^|[_\W])(?:your|here|changeme|placeholder|redacted)(?:$|[_\W])|xxxx|\*\*\*\*", re.IGNORECASE
)


def _stands_in(value: str) -> bool:
    """Whether an assigned value stands in for a secret rather than being one."""
    return (
        value.lower() in _NOT_SECRETS
        or _EXAMPLE.search(value) is not None
        or _REFERENCE.search(value) is not None
        or _NAME_IN_CAPITALS.fullmatch(value) is not None
        or _STAND_IN_WORDS.search(value) is not None
    )


def _jwt_ok(token: str) -> bool:
    header = token.split(".", 1)[0]
    try:
        return isinstance(json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))), dict)
    except ValueError:
        return False


MAINTAINED = "rule-set"
# A documentation example of a key ("AKIAIOSFODNN7EXAMPLE", "sk-...EXAMPLE"): no one's secret.
_EXAMPLE = re.compile(r"EXAMPLE|example|Example")


_LOADING: list[Future[kingfisher_sdk.Scanner]] = []  # the one load of a process, once begun
_LOCK = threading.Lock()


def load_rule_set() -> Future[kingfisher_sdk.Scanner]:
    """Kingfisher's built-in rules, loaded once a process on a thread of their own (its library and
    its compiled rules from its disk cache take 0.5-3 s, compiling them the first time on a machine
    15 s): a gateway starts while they load, and the first text that needs them waits for them.
    The rules do not look into base64 (`readings` decodes it and scans what it holds)."""
    with _LOCK:
        if not _LOADING:
            loading: Future[kingfisher_sdk.Scanner] = Future()
            _LOADING.append(loading)
            threading.Thread(target=_load, args=(loading,), name="secret-rules", daemon=True).start()
        return _LOADING[0]


def _load(loading: Future[kingfisher_sdk.Scanner]) -> None:
    try:
        import kingfisher_sdk

        loading.set_result(kingfisher_sdk.Scanner(kingfisher_sdk.Rules(confidence="medium"), base64=False))
    except BaseException as exc:  # (the text that waits for them raises it: nothing is scanned without them)
        loading.set_exception(exc)


def rule_set() -> kingfisher_sdk.Scanner:
    return load_rule_set().result()


def maintained(text: str) -> list[Finding]:
    """What the rule set finds, as SECRET findings (its offsets are UTF-8 bytes': as characters)."""
    encoded = text.encode(errors="surrogatepass")  # (a lone surrogate, which JSON's escapes can write)
    found = rule_set().scan(encoded)
    if not found:
        return []
    out = []
    for f in found:
        start, end = f.location["start_offset"], f.location["end_offset"]
        if len(encoded) != len(text):
            start, end = _characters(encoded, start), _characters(encoded, end)
        if end > start and _EXAMPLE.search(text, start, end) is None:
            out.append(Finding("SECRET", start, end, 0.97, f"{MAINTAINED}:{f.rule_id}"))
    return out


def _characters(encoded: bytes, at: int) -> int:
    """How many characters the first `at` bytes of a text's UTF-8 are."""
    try:
        return len(encoded[:at].decode(errors="surrogatepass"))
    except UnicodeDecodeError:  # (an offset inside a character: the characters before it)
        return len(encoded[:at].decode(errors="ignore"))


def secrets(text: str, hits: Hits | None = None, runs: bool = True) -> list[Finding]:
    """`hits`: `ANCHORS.find(text)`, or more, when the caller has it. `runs`: whether the text has a
    run of 20 characters of a key's alphabet (`structured.ENCODED_WINDOWS`): a text without one
    holds nothing the rule set finds, and a call into it costs 40-50 us however short the text."""
    hits = hits if hits is not None else ANCHORS.find(text)
    found = maintained(text) if runs else []
    if _SECRET_LITERALS.isdisjoint(hits):
        return found
    for literals, pattern in dict.fromkeys(_KEY_OF[literal] for literal in hits if literal in _KEY_OF):
        detector = "private-key" if "-----BEGIN" in literals else "api-key"
        found += [
            Finding("SECRET", m.start(), m.end(), 0.99, detector)
            for m in anchored(pattern, text, starts_of(hits, literals))
            if _EXAMPLE.search(m.group()) is None
        ]
    if "eyJ" in hits:
        found += [
            Finding("SECRET", m.start(), m.end(), 0.98, "jwt")
            for m in anchored(_JWT, text, hits["eyJ"])
            if _jwt_ok(m.group())
        ]
    if "://" in hits:
        found += [
            Finding("SECRET", m.start(1), m.end(1), 0.95, "url-password")
            for m in anchored(_URL_CREDENTIALS, text, starts_of(hits, _URL, back=range(2, _SCHEME + 1)))
        ]
    if not _ASSIGNED_SET.isdisjoint(hits):
        found += [
            Finding("SECRET", m.start(1), m.end(1), 0.9, "assignment")
            for m in anchored(_ASSIGNED, text, starts_of(hits, _ASSIGNED_SET))
            if not _stands_in(m.group(1))
        ]
    return found + credentials(text, hits)


# The literals that the key, token and assignment patterns begin with: found in one pass.
EXACT_LITERALS = tuple(literal for literals, _ in _KEY_PATTERNS for literal in literals) + ("eyJ", "://")
EXACT_LITERALS += CREDENTIALS.exact
FOLDED_LITERALS = _ASSIGNED_STARTS + tuple(w for w in CREDENTIALS.folded if w not in _ASSIGNED_STARTS)
ANCHORS = Anchors(EXACT_LITERALS, FOLDED_LITERALS)
_SECRET_LITERALS = frozenset(EXACT_LITERALS + FOLDED_LITERALS)
