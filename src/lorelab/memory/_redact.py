"""Secret redaction applied to every text before it is stored in memory.

Each detector names a kind; a match is replaced by ``[REDACTED:<kind>]`` and counted. Counts
by kind are what a caller sees: never the secret, never its position.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

MARKER_PREFIX: Final = "[REDACTED:"
# A marker an earlier detector left: no later detector may match into it (a token used as a
# URL's user name would otherwise be cut again, half marker, half text).
_MARKER: Final = re.compile(r"\[REDACTED:[a-z_]+\]")


def marker(kind: str) -> str:
    """The text a secret of ``kind`` is replaced with."""
    return f"{MARKER_PREFIX}{kind}]"


class _Pattern:
    """A regular expression compiled on first use.

    Most texts hold no hint of a secret, so most detectors never run: compiling all of them at
    import would cost every command that merely loads the store (a hook, ``memory prepare``).
    """

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled


# A value that starts with a whole reference to a secret (``$DB_PASSWORD``, ``${TOKEN}``,
# ``${{ secrets.X }}``, ``$(cat file)``, ``%PASSWORD%``, ``<your-token>``, ``{api_key}``,
# ``****``), ended by the value's end or a space, is not a secret: left as written and not
# counted. A value that only starts with one of these characters (``$ecr3tPa55!``) is a secret,
# and so is a name in braces that mixes cases (``{kQ7rT2mZ}``), as a ``$`` name would be.
_REFERENCE_START: Final = ("$", "%", "<", "{", "*")
_REFERENCE: Final = _Pattern(
    r"(?:\$(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)"
    r"|%[A-Za-z_][A-Za-z0-9_]*%|<[A-Za-z][A-Za-z0-9_ .-]*>|\{\{[^{}\n]*\}\}"
    r"|\{(?:[A-Z_][A-Z0-9_.]*|[a-z_][a-z0-9_.]*)\}|\*+)(?=\s|\Z)"
)


@dataclass(frozen=True, slots=True)
class _Detector:
    kind: str
    pattern: _Pattern
    # Lower-case substrings every match contains: a text holding none of them skips the
    # pattern entirely (almost every text holds no secret).
    hints: tuple[str, ...]
    # Index of the group holding the secret; 0 replaces the whole match.
    group: int = 0
    # Whether a match is a secret after all (entropy, not a boolean); None accepts every one.
    accept: Callable[[str], bool] | None = None


_GITLAB_PREFIXES: Final = ("pat", "dt", "rt", "ptt", "soat", "cbt", "ft", "imt", "oas", "agent")
# One command-line argument: quoted as a whole, or a run up to whitespace or a shell operator.
_ARG: Final = r"""(?:"[^"\n]+"|'[^'\n]+'|[^\s"'&;|]+)"""

# A key that names a secret: *SECRET*, *PASSWORD*, *PASS, *TOKEN*, *_KEY, *APIKEY*,
# *CREDENTIAL* (any case); a plural secrets or tokens key (secrets: inherit, max_tokens=100)
# names a setting, not a secret.
_SECRET_KEY: Final = (
    r"(?:[A-Za-z0-9_.-]*?(?:(?:secret|token)(?!s(?![A-Za-z0-9_.-]))|password|passwd|pwd|"
    r"passphrase|api[_-]?key|access[_-]?key|credential|private[_-]?key)[A-Za-z0-9_.-]*"
    r"|[A-Za-z0-9_.-]*[_-]key|[A-Za-z0-9_.-]*pass)"
)
# The keys no setting or prose word shares (``bypass``, ``sort_key`` are left out): a value with
# spaces after one of them inside a YAML flow mapping ({user: bob, password: a b c}) is a secret.
_STRONG_SECRET_KEY: Final = (
    r"[A-Za-z0-9_.-]*?(?:(?:secret|token)(?!s(?![A-Za-z0-9_.-]))|password|passwd|pwd|"
    r"passphrase|api[_-]?key|access[_-]?key|credential|private[_-]?key)[A-Za-z0-9_.-]*"
)
# The keys whose values hold spaces (pass phrases): after one of them, a value with spaces
# anywhere in a line (set password: correct horse battery staple) is a secret. Tokens and keys
# hold no spaces, and prose such as "auth token: fix the expiry check" is left alone.
_PASSPHRASE_KEY: Final = (
    r"(?:[A-Za-z0-9_.-]*(?:password|passwd|passphrase)[A-Za-z0-9_.-]*|[A-Za-z0-9_.-]+[_.-]pwd)"
)
# A value in brackets (``SECRET_KEY={...}``, ``(...)``, ``[...]``) runs to its closing bracket on
# the same line, quotes and spaces included.
_BRACKETED: Final = (
    r"\{[^{}\n]*[^{}\s][^{}\n]*\}|\([^()\n]*[^()\s][^()\n]*\)|\[[^\[\]\n]*[^\[\]\s][^\[\]\n]*\]"
)
_SECRET_HINTS: Final = (
    "passw",
    "pwd",
    "passphrase",
    "secret",
    "token",
    "key",
    "pass",
    "credential",
)

# Values of a secret-named key that are settings, not secrets.
_NOT_SECRETS: Final = frozenset({"true", "false", "null", "none", "yes", "no", "off"})


def _is_reference(value: str) -> bool:
    # "$(" and "${" always start a substitution (an unquoted one is cut at its first space).
    if value.startswith(("$(", "${")):
        return True
    return value.startswith(_REFERENCE_START) and _REFERENCE.compiled.match(value) is not None


def _token_like(value: str) -> bool:
    """Whether a word after ``Bearer`` is a token rather than prose (``bearer token``)."""
    return len(value) >= 16 or any(
        c.isdigit() or c in "._~+/=-" or (c.isupper() and i) for i, c in enumerate(value)
    )


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _random_looking(value: str, min_entropy: float) -> bool:
    """Whether ``value`` looks generated: mixed character classes and high entropy."""
    classes = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )
    hex_digest = len(value) >= 32 and all(c in "0123456789abcdef" for c in value.lower())
    mixed = classes >= 3 or (hex_digest and any(c.isdigit() for c in value))
    return mixed and _entropy(value) >= min_entropy


# Order matters: whole blocks and structured tokens first, so a generic assignment rule never
# sees half a private key or a token it would mislabel.
_DETECTORS: Final = (
    _Detector(
        "private_key",
        _Pattern(
            r"-----BEGIN (?P<label>[A-Z0-9 ]*?)PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?P=label)PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            re.DOTALL,
        ),
        ("private key",),
    ),
    _Detector(
        "jwt",
        _Pattern(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
        ("eyj",),
    ),
    _Detector(
        "aws_access_key_id",
        _Pattern(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"),
        ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
    ),
    _Detector(
        "aws_secret_access_key",
        _Pattern(
            r"(?i)\baws_?secret_?access_?key\b[\"']?\s*[:=]\s*[\"']?"
            r"([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        ("secret",),
        group=1,
    ),
    _Detector(
        "github_token",
        _Pattern(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _Detector("github_token", _Pattern(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b"), ("github_pat_",)),
    _Detector("slack_token", _Pattern(r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}"), ("xox",)),
    _Detector(
        "slack_webhook",
        _Pattern(r"https://hooks\.slack\.com/services/[A-Za-z0-9_/-]{20,}"),
        ("hooks.slack.com",),
    ),
    _Detector("api_key", _Pattern(r"\bsk-(?:ant-|proj-|live-)?[A-Za-z0-9_-]{20,}"), ("sk-",)),
    _Detector(
        "api_key",
        _Pattern(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b"),
        ("k_live_", "k_test_"),
    ),
    _Detector("google_api_key", _Pattern(r"\bAIza[0-9A-Za-z_-]{35}\b"), ("aiza",)),
    _Detector(
        "gitlab_token",
        _Pattern(r"\bgl(?:pat|dt|rt|ptt|soat|cbt|ft|imt|oas|agent)-[A-Za-z0-9_-]{20,}"),
        tuple(f"gl{kind}-" for kind in _GITLAB_PREFIXES),
    ),
    _Detector("huggingface_token", _Pattern(r"\bhf_[A-Za-z0-9]{30,}\b"), ("hf_",)),
    _Detector("npm_token", _Pattern(r"\bnpm_[A-Za-z0-9]{36,}\b"), ("npm_",)),
    _Detector(
        "basic_auth",
        _Pattern(
            r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<value>[A-Za-z0-9+/=._~-]{4,})"
        ),
        ("basic",),
    ),
    # Passwords given on a command line: MySQL/MariaDB's attached -pSECRET (case-sensitive:
    # -P is the port), an option such as --password SECRET or --token SECRET (the =SECRET
    # spelling is a secret_assignment), and curl's -u/--user NAME:SECRET.
    _Detector(
        "cli_secret",
        _Pattern(
            r"\b(?i:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|"
            r"mariadb|mariadb-dump|mariadb-admin)\b[^\n;|&]*?\s-p(?P<value>" + _ARG + ")"
        ),
        ("mysql", "mariadb"),
    ),
    _Detector(
        "cli_secret",
        _Pattern(
            r"(?i)(?<![\w-])--(?:password|passwd|pass|token|api[-_]?key|access[-_]?key|"
            r"auth[-_]?token|client[-_]?secret)\s+(?P<value>(?!-)" + _ARG + ")"
        ),
        ("--pass", "--token", "--api", "--access", "--auth", "--client"),
    ),
    # docker/podman/... login -p SECRET (or -pSECRET), and sshpass -p SECRET.
    _Detector(
        "cli_secret",
        _Pattern(
            r"(?i)\b(?:docker|podman|buildah|skopeo|nerdctl|helm\s+registry)\s+login\b"
            r"[^\n;|&]*?\s-p\s*(?P<value>(?!-)" + _ARG + ")"
        ),
        ("login",),
    ),
    _Detector(
        "cli_secret",
        _Pattern(r"\bsshpass\b[^\n;|&]*?\s-p\s*(?P<value>(?!-)" + _ARG + ")"),
        ("sshpass",),
    ),
    _Detector(
        "cli_secret",
        _Pattern(
            r"(?i)\bcurl\b[^\n;|&]*?\s(?:-u\s*|--user(?:\s+|=))[\"']?[^\s:\"']*:"
            r"(?P<value>[^\s\"']+)"
        ),
        ("curl",),
    ),
    # Any length after an Authorization header; elsewhere only a word that looks like a token
    # (``Bearer abc123``, not ``a bearer token``).
    _Detector(
        "bearer_token",
        _Pattern(
            r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?bearer\s+(?P<value>[A-Za-z0-9._~+/=-]+)"
        ),
        ("bearer",),
    ),
    _Detector(
        "bearer_token",
        _Pattern(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/=-]+)"),
        ("bearer",),
        accept=_token_like,
    ),
    # The password runs to the last "@" of the authority (not the first: "p@ss" is one
    # password); "/", "?", "#" and whitespace end the authority.
    # The user name is a marker when a token stood there (``https://ghp_...:x@host`` after the
    # github_token detector); brackets are no part of a user name otherwise.
    _Detector(
        "url_password",
        _Pattern(
            r"\b[A-Za-z][A-Za-z0-9+.-]*://(?:\[REDACTED:[a-z_]+\]|[^/\s:@\[\]]*):([^/\s?#]+)@"
        ),
        ("://",),
        group=1,
    ),
    # A bare AWS secret access key in prose or in a path: 40 characters of its alphabet,
    # random-looking (upper, lower and digits; high entropy), so paths and hashes are left alone.
    _Detector(
        "aws_secret_access_key",
        _Pattern(r"(?<![A-Za-z0-9+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        (),
        accept=lambda value: _random_looking(value, 4.2) and "//" not in value,
    ),
    # A YAML (or INI) line whose key names a secret: an unquoted value runs to the end of the
    # line (or a " #" comment), spaces and all (password: correct horse battery staple).
    _Detector(
        "secret_assignment",
        _Pattern(
            r"(?im)^[ \t]*(?:-[ \t]+)?" + _SECRET_KEY + r"(?::|[ \t]*=)[ \t]+"
            r"(?P<value>[^\s\"'#|>{(\[](?:[^\n#]|(?<!\s)#)*?)[ \t]*(?:[ \t]#[^\n]*)?$"
        ),
        _SECRET_HINTS,
        accept=lambda value: " " in value and value.lower() not in _NOT_SECRETS,
    ),
    # The same inside a YAML flow mapping ({user: bob, password: a b c}): to the "," or "}".
    _Detector(
        "secret_assignment",
        _Pattern(
            r"(?i)[{,][ \t]*" + _STRONG_SECRET_KEY + r":[ \t]+"
            r"(?P<value>[^\s\"'#|>{(\[,}][^\n,}\]]*?)[ \t]*(?=[,}\]])"
        ),
        _SECRET_HINTS,
        accept=lambda value: " " in value and value.lower() not in _NOT_SECRETS,
    ),
    # And mid-line, after a pass-phrase key (set password: correct horse battery staple): to
    # the end of the line or a " #" comment.
    _Detector(
        "secret_assignment",
        _Pattern(
            r"(?im)(?<![A-Za-z0-9_.-])" + _PASSPHRASE_KEY + r":[ \t]+"
            r"(?P<value>[^\s\"'#|>{(\[](?:[^\n#]|(?<!\s)#)*?)[ \t]*(?:[ \t]#[^\n]*)?$"
        ),
        _SECRET_HINTS,
        accept=lambda value: " " in value and value.lower() not in _NOT_SECRETS,
    ),
    # An assignment whose key names a secret (KEY=value, KEY: value, "key": "value").
    _Detector(
        "secret_assignment",
        _Pattern(
            r"(?i)(?<![A-Za-z0-9_.-])" + _SECRET_KEY +
            # A quoted value runs to its closing quote, spaces and all (password="a b c"), and
            # past an escaped quote inside double quotes (JSON's "ab\"c"); an unquoted one runs
            # to a space, a quote or "&", so "," and ";" inside it cut nothing off.
            r"[\"']?\s*(?:=|:)\s*(?P<quote>[\"']?)"
            r"(?P<value>(?<=\")(?:[^\"\\\n]|\\[^\n]){4,}(?=\")|(?<=')[^'\n]{4,}(?=')"
            r"|(?<=[=:\s])(?:" + _BRACKETED + r")|[^\s\"'&]{4,})"
            r"(?P=quote)"
        ),
        _SECRET_HINTS,
        accept=lambda value: value.lower() not in _NOT_SECRETS,
    ),
    # A random-looking token right after a word that names a secret ("the API key is ...").
    _Detector(
        "secret_near_word",
        _Pattern(
            r"(?i)\b(?:secret|password|passwd|passphrase|token|api[ _-]?key|apikey|credential|"
            r"access[ _-]key|private[ _-]key)s?\b[\"'`]?[ \t]*(?:[:=]|is|was|of|for)?[ \t]*"
            r"(?:is[ \t]+|was[ \t]+)?[\"'`]?(?P<value>[A-Za-z0-9+/=_.~!@#%^*-]{12,})"
        ),
        ("secret", "passw", "passphrase", "token", "key", "credential"),
        accept=lambda value: _random_looking(value, 3.0),
    ),
)

# One scan for every hint at once: the common case (no hint anywhere) costs a single search.
_ANY_HINT: Final = re.compile(
    "|".join(re.escape(hint) for hint in sorted({h for d in _DETECTORS for h in d.hints}))
)
# Detectors with no hint (a bare key has no word beside it) run on every text.
_ALWAYS: Final = tuple(d for d in _DETECTORS if not d.hints)


@dataclass(slots=True)
class Redactor:
    """Redacts texts one after another and keeps the running count of redactions by kind."""

    counts: Counter[str] = field(default_factory=Counter)

    def __call__(self, text: str) -> str:
        return self.redact(text)

    def redact(self, text: str) -> str:
        """``text`` with every detected secret replaced by its marker."""
        lowered = text.lower()
        if _ANY_HINT.search(lowered) is None:
            for detector in _ALWAYS:
                text = self._apply(detector, text)
            return text
        for detector in _DETECTORS:
            if not detector.hints or any(hint in lowered for hint in detector.hints):
                text = self._apply(detector, text)
        return text

    def optional(self, text: str | None) -> str | None:
        """:meth:`redact` of a text that may be absent."""
        return None if text is None else self.redact(text)

    def _apply(self, detector: _Detector, text: str) -> str:
        markers = [found.span() for found in _MARKER.finditer(text)]

        def inside_marker(start: int, end: int) -> bool:
            return any(start < m_end and m_start < end for m_start, m_end in markers)

        def replace(match: re.Match[str]) -> str:
            if "value" in detector.pattern.compiled.groupindex:
                value = match.group("value").strip("\"'")
                if value.startswith(MARKER_PREFIX) or _is_reference(value):
                    # Already redacted, or a reference, not a secret: left as written.
                    return match.group(0)
                start, end = match.span("value")
            elif detector.group:
                if match.group(detector.group).startswith(MARKER_PREFIX):
                    return match.group(0)
                start, end = match.span(detector.group)
            else:
                start, end = match.span()
            if inside_marker(start, end):
                return match.group(0)
            if detector.accept is not None and not detector.accept(
                match.group(0)[start - match.start() : end - match.start()]
            ):
                return match.group(0)
            self.counts[detector.kind] += 1
            offset = match.start()
            whole = match.group(0)
            return whole[: start - offset] + marker(detector.kind) + whole[end - offset :]

        return detector.pattern.compiled.sub(replace, text)

    def summary(self) -> dict[str, int]:
        """Redaction counts by kind, sorted by kind."""
        return {kind: self.counts[kind] for kind in sorted(self.counts)}


def redact(text: str) -> tuple[str, dict[str, int]]:
    """Redact one text; returns the redacted text and the counts by kind."""
    redactor = Redactor()
    return redactor.redact(text), redactor.summary()
