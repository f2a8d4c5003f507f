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
    ShowRequest,
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
MYSQL_PASSWORD = _chars(ALNUM, 13)
OPTION_PASSWORD = _chars(ALNUM, 13)
CURL_PASSWORD = _chars(ALNUM, 13)
BASIC = _chars(ALNUM + "+/", 24) + "=="
GITLAB = "gl" + "pat-" + _chars(B64URL, 20)
HUGGINGFACE = "h" + "f_" + _chars(ALNUM, 34)
NPM = "np" + "m_" + _chars(ALNUM, 36)
AT_PASSWORD = _chars(ALNUM, 5) + "@" + _chars(ALNUM, 7)

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
    ("cli_secret", MYSQL_PASSWORD, f"mysql -uroot -p{MYSQL_PASSWORD} orders < dump.sql"),
    ("cli_secret", OPTION_PASSWORD, f"psql --password {OPTION_PASSWORD} -h db.internal"),
    ("cli_secret", CURL_PASSWORD, f"curl -u admin:{CURL_PASSWORD} https://api.internal/v1"),
    ("basic_auth", BASIC, f"curl -H 'Authorization: Basic {BASIC}' https://api.internal"),
    ("gitlab_token", GITLAB, f"git clone https://oauth2@gitlab.com/acme/api.git # {GITLAB}"),
    ("huggingface_token", HUGGINGFACE, f"huggingface-cli login --token={HUGGINGFACE}"),
    ("npm_token", NPM, f"//registry.npmjs.org/:_authToken {NPM}"),
    ("url_password", AT_PASSWORD, f"DATABASE_URL postgres://app:{AT_PASSWORD}@db:5432/app"),
]


@pytest.mark.parametrize(("kind", "secret", "text"), CORPUS, ids=[c[0] for c in CORPUS])
def test_each_planted_secret_is_replaced_and_counted_by_kind(kind, secret, text):
    redacted, counts = redact(text)
    assert secret not in redacted
    assert f"[REDACTED:{kind}]" in redacted
    assert counts.get(kind, 0) >= 1


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            f"postgres://app:{AT_PASSWORD}@db:5432/app",
            "postgres://app:[REDACTED:url_password]@db:5432/app",
        ),
        ("redis://:s3cretpw@cache:6379/0", "redis://:[REDACTED:url_password]@cache:6379/0"),
        (
            "mysql -h db -uroot -p'two words' orders",
            "mysql -h db -uroot -p[REDACTED:cli_secret] orders",
        ),
        ("curl --user ci:abc123xyz -X POST u", "curl --user ci:[REDACTED:cli_secret] -X POST u"),
    ],
)
def test_no_part_of_a_password_survives(text, redacted):
    # 'user:p@ss@host' once lost only 'p', leaving '@ss@host': the whole password must go.
    assert redact(text)[0] == redacted


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
        "mkdir -p build && ssh -p 2222 deploy@host",
        "mysql -h db -P3306 -uroot -p orders",
        "mysql -uroot -p$MYSQL_PWD orders",
        "pytest -p no:cacheprovider -q",
        "docker run -u 1000:1000 app && git push -u origin main",
        "docker login --password-stdin && psql --password-file /run/secrets/db",
        "psql --password $PGPASSWORD",
        "basic usage examples for the basic plan",
        "npm_config_registry=https://registry.internal",
        "http://localhost:8080/api and https://host:443/path@v2",
        "curl -u admin https://api.internal",
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
        shown = store.show(ShowRequest(id=result.id)).item.model_dump_json()
        brief = store.prepare(PrepareRequest(task=f"deploy failed again {GITHUB}"))
    stored = _all_bytes(home)
    for kind, secret, _ in CORPUS:
        assert secret.encode() not in stored, kind
        assert secret not in shown, kind
        assert secret not in brief.model_dump_json(), kind
    assert sum(result.redactions.values()) >= len(CORPUS)
    assert set(result.redactions) == {kind for kind, _, _ in CORPUS}


SPACED_PASSWORD = " ".join(_chars(ALNUM, 5) for _ in range(3))


@pytest.mark.parametrize(
    "text",
    [
        f'DB_PASSWORD="{SPACED_PASSWORD}" alembic upgrade',
        f"settings(password: '{SPACED_PASSWORD}')",
        f'{{"password": "{SPACED_PASSWORD}", "user": "bob"}}',
        f'mysql --password="{SPACED_PASSWORD}" orders',
        f'export API_KEY="{SPACED_PASSWORD}; still the key, with a comma"',
    ],
)
def test_a_quoted_password_with_spaces_is_redacted_whole(text):
    redacted, counts = redact(text)
    for word in SPACED_PASSWORD.split():
        assert word not in redacted
    assert "still the key" not in redacted
    assert counts == {"secret_assignment": 1}
    assert redact(redacted) == (redacted, {})


@pytest.mark.parametrize(
    ("text", "redacted", "counts"),
    [
        (
            f"git clone https://{GITHUB}@github.com/acme/api.git",
            "git clone https://[REDACTED:github_token]@github.com/acme/api.git",
            {"github_token": 1},
        ),
        (
            f"https://{GITHUB}:x-oauth-basic@github.com/acme/api.git",
            "https://[REDACTED:github_token]:[REDACTED:url_password]@github.com/acme/api.git",
            {"github_token": 1, "url_password": 1},
        ),
        (
            f"https://{GITLAB}:{URL_PASSWORD}@gitlab.com/acme/api.git",
            "https://[REDACTED:gitlab_token]:[REDACTED:url_password]@gitlab.com/acme/api.git",
            {"gitlab_token": 1, "url_password": 1},
        ),
    ],
)
def test_a_token_used_as_a_url_user_name_is_redacted_once_and_cleanly(text, redacted, counts):
    assert redact(text) == (redacted, counts)
    assert redact(redacted) == (redacted, {})


def test_a_quoted_reference_with_spaces_is_left_alone():
    assert redact('password="$DB_PASSWORD from vault"') == (
        'password="$DB_PASSWORD from vault"',
        {},
    )


# Issue 40: a value in brackets, and a YAML-style value with spaces that does not start its
# line, were stored. Each is redacted whole, with the brackets; references stay as written.
BRACED = _chars(ALNUM, 14)


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (f"SECRET_KEY={{{BRACED}}}", "SECRET_KEY=[REDACTED:secret_assignment]"),
        (
            f"export SECRET_KEY={{{BRACED[:7]} {BRACED[7:]}}} && ./manage.py runserver",
            "export SECRET_KEY=[REDACTED:secret_assignment] && ./manage.py runserver",
        ),
        (
            f'SECRET_KEY={{"k": "{BRACED}"}}',
            "SECRET_KEY=[REDACTED:secret_assignment]",
        ),
        (f"SECRET_KEY=({BRACED[:5]} {BRACED[5:]})", "SECRET_KEY=[REDACTED:secret_assignment]"),
        (f"API_TOKEN=[{BRACED}]", "API_TOKEN=[REDACTED:secret_assignment]"),
        (f"db_password: {{{BRACED}}}", "db_password: [REDACTED:secret_assignment]"),
        (
            "set password: correct horse battery staple",
            "set password: [REDACTED:secret_assignment]",
        ),
        (
            "notes: db password: correct horse battery staple  # rotated",
            "notes: db password: [REDACTED:secret_assignment]  # rotated",
        ),
        (
            "cfg = {user: bob, password: correct horse battery, port: 5432}",
            "cfg = {user: bob, password: [REDACTED:secret_assignment], port: 5432}",
        ),
        ("password = correct horse battery staple", "password = [REDACTED:secret_assignment]"),
        ('password = "correct horse battery"', 'password = "[REDACTED:secret_assignment]"'),
        ("api_key: 'correct horse battery'", "api_key: '[REDACTED:secret_assignment]'"),
        ('{"password": "correct horse"}', '{"password": "[REDACTED:secret_assignment]"}'),
    ],
)
def test_a_bracketed_or_spaced_secret_value_is_redacted_whole(text, redacted):
    assert redact(text) == (redacted, {"secret_assignment": 1})
    assert redact(redacted) == (redacted, {})


@pytest.mark.parametrize(
    "text",
    [
        "SECRET_KEY={secret_key}",
        "SECRET_KEY={SECRET_KEY}",
        "api_key: {api_key}",
        "DB_PASSWORD={{ db_password }}",
        "token: ${{ secrets.DEPLOY_TOKEN }}",
        "password = []",
        "tokens: [a, b]",
        "bypass the cache: it works now",
        "the sort_key: by name then date",
        "ran pwd: it printed the project root",
        "secrets: inherit",
        "password: $(cat /run/secrets/db)",
    ],
)
def test_bracketed_references_and_prose_near_a_key_stay_as_written(text):
    assert redact(text) == (text, {})
