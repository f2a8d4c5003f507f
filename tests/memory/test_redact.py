"""Planted-secret corpus: every kind is found wherever it hides, and never stored.

Secrets are assembled at run time from a seeded generator, so no token-shaped literal lives
in the repository.
"""

import random
import string
from pathlib import Path

import pytest

from lorelab.memory import (
    CommandRun,
    PrepareRequest,
    RecordRequest,
    SqliteMemoryStore,
    Verification,
    redact,
)

_rng = random.Random(20240301)


def _chars(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
B64URL = ALNUM + "-_"

AWS_ID = "AK" + "IA" + _chars(UPPER, 16)
AWS_SECRET = _chars(ALNUM + "/+", 40)
GITHUB = "gh" + "p_" + _chars(ALNUM, 36)
GITHUB_PAT = "github" + "_pat_" + _chars(ALNUM + "_", 60)
OPENAI = "sk" + "-proj-" + _chars(B64URL, 40)
ANTHROPIC = "sk" + "-ant-" + _chars(B64URL, 48)
STRIPE = "sk" + "_live_" + _chars(ALNUM, 24)
SLACK = "xo" + "xb-" + _chars(string.digits, 12) + "-" + _chars(ALNUM, 24)
SLACK_HOOK = "https://hooks.slack.com/services/T" + _chars(UPPER, 8) + "/B" + _chars(UPPER, 8)
SLACK_HOOK += "/" + _chars(ALNUM, 24)
JWT = "ey" + "J" + _chars(B64URL, 20) + ".ey" + "J" + _chars(B64URL, 30) + "." + _chars(B64URL, 43)
PEM_BODY = "\n".join(_chars(ALNUM + "+/", 64) for _ in range(5))
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
URL_PASSWORD = _chars(ALNUM, 14)
ASSIGNED_PASSWORD = _chars(ALNUM, 16)
GOOGLE = "AI" + "za" + _chars(B64URL, 35)
BEARER = _chars(ALNUM, 32)

# (kind, secret, text that carries it)
CORPUS = [
    ("aws_access_key_id", AWS_ID, f"export AWS_ACCESS_KEY_ID={AWS_ID}"),
    ("aws_secret_access_key", AWS_SECRET, f"aws_secret_access_key = {AWS_SECRET}"),
    ("github_token", GITHUB, f"git clone https://github.com/acme/api.git # token {GITHUB}"),
    ("github_token", GITHUB_PAT, f"GH_TOKEN {GITHUB_PAT} used for the release"),
    ("api_key", OPENAI, f"client = OpenAI()  # key {OPENAI}"),
    ("api_key", ANTHROPIC, f"used {ANTHROPIC} for the eval"),
    ("api_key", STRIPE, f"STRIPE test with {STRIPE}"),
    ("slack_token", SLACK, f"curl -H 'Authorization: {SLACK}' slack.com/api"),
    ("slack_webhook", SLACK_HOOK, f"posted to {SLACK_HOOK}"),
    ("jwt", JWT, f"session cookie was {JWT}; expired"),
    ("private_key", PEM_BODY.splitlines()[2], f"wrote deploy key:\n{PEM}\nthen chmod 600"),
    ("url_password", URL_PASSWORD, f"psql postgres://app:{URL_PASSWORD}@db.internal:5432/app"),
    ("secret_assignment", ASSIGNED_PASSWORD, f"DB_PASSWORD={ASSIGNED_PASSWORD} alembic upgrade"),
    ("secret_assignment", ASSIGNED_PASSWORD, f'settings(password: "{ASSIGNED_PASSWORD}")'),
    ("google_api_key", GOOGLE, f"maps key {GOOGLE}"),
    ("bearer_token", BEARER, f"Authorization: Bearer {BEARER}"),
]


@pytest.mark.parametrize(("kind", "secret", "text"), CORPUS, ids=[c[0] for c in CORPUS])
def test_each_planted_secret_is_replaced_and_counted_by_kind(kind, secret, text):
    redacted, counts = redact(text)
    assert secret not in redacted
    assert f"[REDACTED:{kind}]" in redacted
    assert counts.get(kind, 0) >= 1


def test_an_unterminated_private_key_block_is_redacted_to_the_end():
    truncated = PEM.split("-----END")[0]
    redacted, counts = redact("key:\n" + truncated)
    assert PEM_BODY.splitlines()[0] not in redacted
    assert counts == {"private_key": 1}


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=100 and temperature=0",
        "password: $DB_PASSWORD",
        "token=${GITHUB_TOKEN}",
        "secrets: inherit",
        "pytest -q tests/test_tokens.py",
        "https://example.com/path?q=1",
        "the sk-learn style package",
    ],
)
def test_ordinary_text_and_references_are_left_alone(text):
    assert redact(text) == (text, {})


def test_redacting_twice_changes_nothing_more():
    once, first = redact(CORPUS[12][2])
    twice, second = redact(once)
    assert twice == once
    assert first == {"secret_assignment": 1}
    assert second == {}


def _all_bytes(home: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(home.iterdir()) if path.is_file())


def test_no_planted_secret_reaches_the_store_file_from_any_field(tmp_path):
    home = tmp_path / "home"
    texts = [text for _, _, text in CORPUS]
    with SqliteMemoryStore(home / "memory.db") as store:
        result = store.record(
            RecordRequest(
                task="Deploy failed: " + texts[0],
                summary=" | ".join(texts[1:8]),
                outcome="passed",
                verification=Verification(
                    command=texts[8], exit_code=0, output_digest="sha256:" + GITHUB
                ),
                steps=texts[9:12],
                commands=[CommandRun(command=text, exit_code=1) for text in texts[12:]],
                files=[f"config/{AWS_ID}.env"],
                host=f"claude {SLACK}",
                model=f"model {OPENAI}",
                task_id=f"task {JWT}",
                project=f"api {STRIPE}",
            )
        )
        shown = store.show(result.id).model_dump_json()
        brief = store.prepare(PrepareRequest(task=f"deploy failed again {GITHUB}"))
    stored = _all_bytes(home)
    for kind, secret, _ in CORPUS:
        assert secret.encode() not in stored, kind
        assert secret not in shown, kind
        assert secret not in brief.model_dump_json(), kind
    assert sum(result.redactions.values()) >= len(CORPUS)
    assert set(result.redactions) == {kind for kind, _, _ in CORPUS}
