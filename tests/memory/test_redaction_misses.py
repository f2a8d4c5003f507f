"""The third round of redaction misses (issue 31, item 13): each spelling is redacted whole,
and ``strings`` finds none of them in any file a store wrote.

Secrets are assembled at run time from a seeded generator, so no secret-shaped literal lives in
the repository.
"""

import random
import string

import pytest

from lorelab.memory import PrepareRequest, SqliteMemoryStore, redact
from tests.memory.test_redaction_corpus import _every_file, _record, _strings

_rng = random.Random(20261202)
ALNUM = string.ascii_letters + string.digits


def _word(n: int) -> str:
    return "".join(_rng.choice(ALNUM) for _ in range(n - 2)) + _rng.choice("QRST") + "5"


def _forms() -> list[tuple[str, str]]:
    """(secret, text carrying it)."""
    w = [_word(12) for _ in range(20)]
    short = "".join(_rng.choice(string.ascii_lowercase) for _ in range(7)) + "4"
    return [
        # A value that starts like a reference but is none: the whole value is the secret.
        (f"$ecr3t{w[0]}!", f"DB_PASSWORD=$ecr3t{w[0]}! alembic upgrade head"),
        (f"*Star{w[1]}", f"API_TOKEN=*Star{w[1]} ./deploy.sh"),
        (f"{{Brace{w[2]}!}}", f"SECRET_KEY={{Brace{w[2]}!}}"),
        (f"%{w[3]}", f"PASSWORD=%{w[3]}"),
        (f"<{w[4]}", f"PASSWORD=<{w[4]}"),
        # A value holding , or ; is one value: no part of it is kept.
        (f"{w[5][:6]},{w[5][6:]}", f"PASSWORD={w[5][:6]},{w[5][6:]} make migrate"),
        (f"{w[6][:2]};{w[6][2:]}", f"export DB_PASSWORD={w[6][:2]};{w[6][2:]}"),
        # JSON with an escaped quote inside the value.
        (f'{w[7][:4]}\\"{w[7][4:]}', f'{{"password":"{w[7][:4]}\\"{w[7][4:]}","user":"bob"}}'),
        # YAML with spaces, unquoted.
        (f"correct horse {w[8]} battery", f"db:\n  password: correct horse {w[8]} battery\n"),
        # A bearer token shorter than 16 characters.
        (short, f"curl -H 'Authorization: Bearer {short}' https://api.internal"),
        (w[9][:8] + "7x", f"sent Bearer {w[9][:8]}7x to the gateway"),
        # Registry and ssh passwords on the command line.
        (w[10], f"docker login -u ci -p {w[10]} registry.internal"),
        (w[11], f"docker login registry.internal --username ci -p{w[11]}"),
        (w[12], f"sshpass -p {w[12]} ssh deploy@host uptime"),
        (w[13], f"sshpass -p'{w[13]}' scp build.tar host:/srv"),
        # Issue 40: a value in braces, and a YAML-style value with spaces mid-line.
        (f"{{{w[14]}}}", f"SECRET_KEY={{{w[14]}}}"),
        (f"{{{w[15][:5]} {w[15][5:]}}}", f"export SECRET_KEY={{{w[15][:5]} {w[15][5:]}}}"),
        (f"staple {w[16]} horse", f"then set password: staple {w[16]} horse"),
    ]


FORMS = _forms()


@pytest.mark.parametrize(("secret", "text"), FORMS)
def test_a_secret_spelled_this_way_is_redacted_whole(secret, text):
    redacted, counts = redact(text)
    assert counts, redacted
    for part in {secret, *secret.replace('\\"', " ").replace(",", " ").replace(";", " ").split()}:
        if len(part) >= 4:
            assert part not in redacted, (part, redacted)
    assert redact(redacted) == (redacted, {})


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=$DB_PASSWORD alembic upgrade",
        "password=$db_password",
        "token=${GITHUB_TOKEN}",
        "token: ${{ secrets.DEPLOY_TOKEN }}",
        "PASSWORD=%DB_PASSWORD%",
        "PASSWORD=<your-password>",
        "api_key={api_key}",
        "PASSWORD=********",
        "password: $(cat /run/secrets/db)",
        "use a bearer token for the gateway",
        "docker login -u ci -p $REGISTRY_PASSWORD registry.internal",
        "sshpass -p $SSHPASS ssh deploy@host",
        "docker login --password-stdin registry.internal",
    ],
)
def test_references_and_prose_stay_as_written(text):
    assert redact(text) == (text, {})


def test_strings_finds_none_of_these_secrets_in_the_store_files(tmp_path):
    home = tmp_path / "home"
    with SqliteMemoryStore(home / "memory.db") as store:
        for n, (_, text) in enumerate(FORMS):
            store.record(_record(n, text))
            store.prepare(PrepareRequest(task=f"brief {text}"))
    found = _strings(_every_file(home))
    for secret, _ in FORMS:
        for part in secret.replace('\\"', " ").replace(",", " ").replace(";", " ").split():
            if len(part) >= 6:
                assert part not in found, part
