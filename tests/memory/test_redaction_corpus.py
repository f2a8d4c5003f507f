"""A planted-secret corpus goes through every field of every operation that writes to disk, and
``strings`` finds none of the secrets in any file the store wrote (database, its WAL,
checkpoints, Skill exports, snapshots).

Secrets are assembled at run time from a seeded generator, so no token-shaped literal lives in
the repository.
"""

import random
import shutil
import string
import subprocess
from pathlib import Path

import pytest

from lorelab.memory import (
    AddLessonRequest,
    CheckpointRequest,
    CommandRun,
    LessonRequest,
    LockRequest,
    PrepareRequest,
    PromoteRequest,
    RecordRequest,
    RecoverRequest,
    SkillsExportRequest,
    SnapshotRequest,
    SqliteMemoryStore,
    StartRequest,
    Target,
    Verification,
    redact,
)
from lorelab.memory._context import FailedCommandInput
from lorelab.memory._operations import operation
from lorelab.workspace import FileEntry

_rng = random.Random(20261201)
ALNUM = string.ascii_letters + string.digits


def _chars(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _random(n: int) -> str:
    """A generated-looking secret: upper, lower and digits, never a word."""
    return _chars(ALNUM, n - 3) + _rng.choice("ABCDEFGH") + _rng.choice("pqrstuvw") + "7"


def _forms() -> list[tuple[str, str]]:
    """(secret, text carrying it): at least 60 spellings a secret turns up in."""
    s = [_random(20) for _ in range(40)]
    aws = _chars(ALNUM + "/+", 37) + "Kq9"
    hexed = _chars("0123456789abcdef", 39) + "a"
    pem_body = "\n".join(_chars(ALNUM + "+/", 64) for _ in range(4))
    forms = [
        (s[0], f"SECRET_KEY={s[0]}"),
        (s[1], f"DJANGO_SECRET_KEY={s[1]} python manage.py migrate"),
        (s[2], f"STRIPE_SECRET_KEY={s[2]}"),
        (s[3], f"PRIVATE_KEY={s[3]}"),
        (s[4], f"APP_KEY={s[4]} php artisan serve"),
        (s[5], f"PASS={s[5]}"),
        (s[6], f"DB_PASS={s[6]} ./run.sh"),
        (s[7], f"SECRET_KEY: {s[7]}"),
        (s[8], f"  client_secret: {s[8]}"),
        (s[9], f'{{"apiKey": "{s[9]}"}}'),
        (s[10], f"export GITHUB_TOKEN={s[10]}"),
        (s[11], f"AUTH_TOKEN={s[11]}"),
        (s[12], f"access_token: '{s[12]}'"),
        (s[13], f"api_key={s[13]}"),
        (s[14], f"APIKEY={s[14]}"),
        (s[15], f"MY_APIKEY_VALUE={s[15]}"),
        (s[16], f"AWS_CREDENTIALS={s[16]}"),
        (s[17], f"credential={s[17]}"),
        (s[18], f"DB_PASSWORD={s[18]} alembic upgrade head"),
        (s[19], f'password: "{s[19]}"'),
        (s[20], f"passwd={s[20]}"),
        (s[21], f"REDIS_PASSWORD='{s[21]}'"),
        (s[22], f"SENDGRID_API_KEY={s[22]}"),
        (s[23], f"ENCRYPTION_KEY={s[23]}"),
        (s[24], f"JWT_SECRET={s[24]}"),
        (s[25], f"SESSION_SECRET: {s[25]}"),
        (s[26], f"curl 'https://api.example.com/v1?access_token={s[26]}'"),
        (s[27], f"psql --password {s[27]} -h db"),
        (s[28], f"deploy --token {s[28]}"),
        (s[29], f"mysql -uroot -p{s[29]} orders"),
        (s[30], f"curl -u admin:{s[30]} https://api.internal"),
        (s[31], f"git clone https://bot:{s[31]}@git.internal/app.git"),
        (s[32], f"Authorization: Bearer {s[32]}"),
        (s[33], f"the secret is {s[33]}"),
        (s[34], f"API key: {s[34]}"),
        (s[35], f"the password was {s[35]} until Monday"),
        (s[36], f"rotated the token {s[36]} yesterday"),
        (s[37], f"credential {s[37]} expired"),
        (s[38], f"set PGPASSWORD={s[38]} first"),
        (s[39], f"TF_VAR_db_password={s[39]}"),
        (aws, f"the AWS secret access key {aws} leaked in the logs"),
        (aws, f"{aws}"),
        (aws, f"aws_secret_access_key = {aws}"),
        (hexed, f"token {hexed}"),
        ("AK" + "IA" + _chars(string.ascii_uppercase + string.digits, 16), "AWS id below"),
        ("gh" + "p_" + _chars(ALNUM, 36), "pushed with a github token"),
        ("github" + "_pat_" + _chars(ALNUM + "_", 60), "fine-grained token"),
        ("gl" + "pat-" + _chars(ALNUM, 20), "gitlab"),
        ("xo" + "xb-" + _chars(string.digits, 12) + "-" + _chars(ALNUM, 24), "slack"),
        ("sk" + "-proj-" + _chars(ALNUM, 40), "openai"),
        ("sk" + "-ant-" + _chars(ALNUM, 48), "anthropic"),
        ("sk" + "_live_" + _chars(ALNUM, 24), "stripe"),
        ("AI" + "za" + _chars(ALNUM, 35), "google maps"),
        ("h" + "f_" + _chars(ALNUM, 34), "huggingface"),
        ("np" + "m_" + _chars(ALNUM, 36), "npm publish"),
        (
            "ey"
            + "J"
            + _chars(ALNUM, 20)
            + ".ey"
            + "J"
            + _chars(ALNUM, 30)
            + "."
            + _chars(ALNUM, 30),
            "session cookie",
        ),
        (pem_body.splitlines()[1], "deploy key"),
        (_random(16), "Authorization: Basic "),
        (_random(18), "SMTP_PASS="),
        (_random(18), "secret_token = "),
        (_random(18), "vault.credentials.prod_key = "),
    ]
    # Token-shaped secrets are found by their shape wherever they are written.
    shaped = []
    for secret, text in forms:
        if secret in text:
            shaped.append((secret, text))
        elif text == "deploy key":
            shaped.append(
                (
                    secret,
                    f"{text}:\n-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n"
                    "-----END RSA PRIVATE KEY-----",
                )
            )
        elif text.endswith((" ", "=")):
            shaped.append((secret, f"{text}{secret}"))
        else:
            shaped.append((secret, f"{text}: {secret}"))
    return shaped


FORMS = _forms()


def test_the_corpus_has_at_least_sixty_forms_and_each_is_redacted():
    assert len(FORMS) >= 60
    for secret, text in FORMS:
        redacted, counts = redact(text)
        assert secret not in redacted, text
        assert counts, text


def _strings(paths: list[Path]) -> str:
    """Printable runs in ``paths``, as binutils' ``strings`` prints them."""
    binary = shutil.which("strings")
    assert binary is not None, "binutils 'strings' is required for this test"
    done = subprocess.run(
        [binary, "-a", "-n", "6", *map(str, paths)], capture_output=True, check=True
    )
    return done.stdout.decode("utf-8", errors="replace")


def _every_file(*roots: Path) -> list[Path]:
    return sorted(path for root in roots for path in root.rglob("*") if path.is_file())


def _record(n: int, text: str) -> RecordRequest:
    return RecordRequest(
        task=f"task {n}: {text}",
        summary=f"summary {n}: {text}",
        outcome="passed",
        verification=Verification(
            command=f"pytest -q # {text}",
            exit_code=0,
            output_digest=text if len(text) <= 200 else None,
        ),
        steps=[f"step {n}: {text}"],
        commands=[
            CommandRun(command="make build", exit_code=0),
            CommandRun(command="make check", exit_code=0),
            CommandRun(command=f"echo {text}", exit_code=1),
        ],
        files=[f"config/{n}/{text.replace('..', '.')}.env"],
        project=f"project {text}",
        qa="approved",
        host=f"host {text}",
        model=f"model {text}",
        task_id=f"id {n} {text}",
    )


def test_no_planted_secret_reaches_any_file_the_store_writes(tmp_path):
    home = tmp_path / "home"
    exports = tmp_path / "exports"
    snapshot = tmp_path / "frozen.db"
    store = SqliteMemoryStore(home / "memory.db")
    target = Target(store=lambda: store, home=lambda: home, project_dir=lambda: tmp_path)
    try:
        ids = []
        for n, (_, text) in enumerate(FORMS):
            ids.append(store.record(_record(n, text)).id)
            store.prepare(PrepareRequest(task=f"brief {text}", project=f"p {text}"))
            store.set_evaluation_lock(
                LockRequest(evaluation_id=f"eval {n} {text}", holdout_tasks=[f"holdout {text}"])
            )
            operation("checkpoint").handler(
                target,
                CheckpointRequest(
                    scope=f"scope {n} {text}",
                    boundary="compaction",
                    summary=f"summary {text}",
                    notes=[f"note {text}"],
                    task=f"task {text}",
                    failed_commands=[FailedCommandInput(command=f"run {text}", exit_code=2)],
                ),
            )
            store.add_lesson(
                AddLessonRequest(
                    lesson_id=f"lesson-{n}-{text}",
                    specification_id=f"spec {text}",
                    requirements=f"requirements {text}",
                    files=[FileEntry(path=f"src/mod{n}.py", content=f"# {text}\n")],
                    tests=[FileEntry(path=f"tests/test_{n}.py", content=f"# {text}\n")],
                    validation={"reason": f"valid {text}", "runs": 2},
                )
            )
        secret, text = FORMS[0]
        skill = store.promote_skill(
            PromoteRequest(
                experience_ids=ids[:2], name="build-and-check", description=f"Builds. {text}"
            )
        )
        store.start(StartRequest(task=f"build and check {text}", project=f"p {text}"))
        operation("skills export").handler(target, SkillsExportRequest(directory=str(exports)))
        store.snapshot(SnapshotRequest(path=str(snapshot)))
        assert (home / "memory.db-wal").exists()  # the WAL is scanned while it holds data
        written = [*_every_file(home, exports), snapshot]
        assert any(path.suffix == ".json" for path in written)  # the checkpoints
        assert any(path.name == "SKILL.md" for path in written)
        found = _strings(written)
        # The lookups that take a scope or an id still find what was stored redacted.
        recovered = operation("recover").handler(
            target, RecoverRequest(scope=f"scope 0 {FORMS[0][1]}")
        )
        assert recovered.found
        lesson = store.get_lesson(LessonRequest(lesson_id=f"lesson-0-{FORMS[0][1]}"))
        assert secret not in lesson.id
        assert skill.description.startswith("Builds.")
    finally:
        store.close()
    leaked = [text for secret, text in FORMS if secret in found]
    assert leaked == []
    after = _strings(_every_file(home))
    assert [text for secret, text in FORMS if secret in after] == []


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=100 and budget_tokens=1200",
        "secrets: inherit",
        "primary_key: true",
        "src/lorelab/memory/aggregates/Experience1",
        "commit 3f9a1c0b8e7d6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
        "token limit exceeded while parsing the request",
        "the password reset page shows an error",
    ],
)
def test_settings_paths_and_hashes_are_not_mistaken_for_secrets(text):
    assert redact(text) == (text, {})
