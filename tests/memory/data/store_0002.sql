-- A lorelab memory store as written by schema version 0002 (migrations 0001 and 0002),
-- with two verified experiences, one failed experience and one Skill. Loaded by
-- tests/memory/test_migrations.py to show that an older store migrates forward.
BEGIN;
CREATE TABLE _lorelab_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO _lorelab_migrations VALUES ('0001_experiences_and_briefs', '2026-01-15T09:00:00.000000+00:00');
INSERT INTO _lorelab_migrations VALUES ('0002_skills_plans_and_health', '2026-01-15T09:00:00.000000+00:00');
CREATE TABLE experiences (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    task TEXT NOT NULL,
    task_key TEXT NOT NULL,
    task_id TEXT,
    summary TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('passed', 'failed')),
    verification_command TEXT NOT NULL,
    verification_exit_code INTEGER NOT NULL,
    output_digest TEXT,
    steps TEXT NOT NULL,
    commands TEXT NOT NULL,
    files TEXT NOT NULL,
    project TEXT,
    qa TEXT NOT NULL CHECK (qa IN ('approved', 'unreviewed')),
    plan_id INTEGER,
    skill_id INTEGER,
    host TEXT,
    model TEXT,
    trust TEXT NOT NULL CHECK (trust IN ('verified', 'unverified')),
    redactions TEXT NOT NULL,
    procedure TEXT NOT NULL,
    terms TEXT NOT NULL
);
CREATE INDEX experiences_trust_project ON experiences (trust, project);
CREATE VIRTUAL TABLE experiences_fts USING fts5(
    terms, content='experiences', content_rowid='id', tokenize='unicode61 remove_diacritics 0'
);
CREATE VIRTUAL TABLE experiences_vocab USING fts5vocab(experiences_fts, 'row');
CREATE TRIGGER experiences_fts_insert AFTER INSERT ON experiences BEGIN
    INSERT INTO experiences_fts (rowid, terms) VALUES (new.id, new.terms);
END;
CREATE TRIGGER experiences_no_delete BEFORE DELETE ON experiences BEGIN
    SELECT RAISE(ABORT, 'experiences are never deleted');
END;
CREATE TABLE briefs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    task TEXT NOT NULL,
    project TEXT,
    empty INTEGER NOT NULL,
    experience_ids TEXT NOT NULL,
    skill_ids TEXT NOT NULL,
    avoid_commands TEXT NOT NULL,
    tokens_estimate INTEGER NOT NULL,
    budget_tokens INTEGER NOT NULL,
    plan_id INTEGER,
    text TEXT NOT NULL
);
CREATE TABLE skills (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    steps TEXT NOT NULL,
    source_experience_ids TEXT NOT NULL,
    origin TEXT NOT NULL CHECK (origin IN ('promoted', 'dream')),
    candidate_id INTEGER,
    project TEXT,
    health INTEGER NOT NULL CHECK (health >= 0),
    terms TEXT NOT NULL
);
CREATE VIRTUAL TABLE skills_fts USING fts5(
    terms, content='skills', content_rowid='id', tokenize='unicode61 remove_diacritics 0'
);
CREATE VIRTUAL TABLE skills_vocab USING fts5vocab(skills_fts, 'row');
CREATE TRIGGER skills_fts_insert AFTER INSERT ON skills BEGIN
    INSERT INTO skills_fts (rowid, terms) VALUES (new.id, new.terms);
END;
CREATE TRIGGER skills_no_delete BEFORE DELETE ON skills BEGIN
    SELECT RAISE(ABORT, 'skills are never deleted');
END;
CREATE TABLE plans (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    skill_id INTEGER NOT NULL REFERENCES skills (id),
    task TEXT NOT NULL,
    project TEXT,
    score REAL NOT NULL,
    steps TEXT NOT NULL,
    brief_id INTEGER,
    passed INTEGER,
    rework_count INTEGER,
    reported_at TEXT
);
CREATE INDEX plans_skill ON plans (skill_id);
CREATE TABLE skill_health_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    skill_id INTEGER NOT NULL REFERENCES skills (id),
    plan_id INTEGER NOT NULL REFERENCES plans (id),
    passed INTEGER NOT NULL,
    health_before INTEGER NOT NULL,
    health_after INTEGER NOT NULL
);
CREATE INDEX skill_health_events_skill ON skill_health_events (skill_id);
INSERT INTO experiences (id, created_at, task, task_key, task_id, summary, outcome, verification_command, verification_exit_code, output_digest, steps, commands, files, project, qa, plan_id, skill_id, host, model, trust, redactions, procedure, terms) VALUES (1, '2026-01-15T09:00:00.000000Z', 'Alembic migration fails: column invoices.currency already exists', 'alembic migration fails: column invoices.currency already exists', NULL, 'Removed the duplicate op.add_column and chained down_revision to the hotfix revision.', 'passed', 'alembic upgrade head', 0, NULL, '[]', '[{"command":"alembic upgrade head","exit_code":1},{"command":"alembic history --verbose","exit_code":0},{"command":"alembic upgrade head","exit_code":0}]', '[]', 'payments-api', 'approved', NULL, NULL, 'claude-code', 'claude-sonnet-4', 'verified', '{}', '["alembic history --verbose","alembic upgrade head"]', 'alembic migrat fail column invoic currency already exist remov duplicat op column chain revision hotfix revision alembic upgrad head alembic history verbos alembic upgrad head');
INSERT INTO experiences (id, created_at, task, task_key, task_id, summary, outcome, verification_command, verification_exit_code, output_digest, steps, commands, files, project, qa, plan_id, skill_id, host, model, trust, redactions, procedure, terms) VALUES (2, '2026-01-15T09:00:00.000000Z', 'Alembic upgrade head fails with DuplicateTable on refunds', 'alembic upgrade head fails with duplicatetable on refunds', NULL, 'Dropped the duplicated create_table from the autogenerated revision and re-pointed down_revision.', 'passed', 'alembic upgrade head', 0, NULL, '[]', '[{"command":"alembic history --verbose","exit_code":0},{"command":"alembic upgrade head","exit_code":0}]', '[]', 'payments-api', 'approved', NULL, NULL, 'codex', NULL, 'verified', '{}', '["alembic history --verbose","alembic upgrade head"]', 'alembic upgrad head fail duplicatetabl refund drop duplicat creat tabl autogenerat revision re point revision alembic history verbos alembic upgrad head');
INSERT INTO experiences (id, created_at, task, task_key, task_id, summary, outcome, verification_command, verification_exit_code, output_digest, steps, commands, files, project, qa, plan_id, skill_id, host, model, trust, redactions, procedure, terms) VALUES (3, '2026-01-15T09:00:00.000000Z', 'Flaky test_idempotency_key_reuse', 'flaky test_idempotency_key_reuse', NULL, 'froze time', 'failed', 'pytest tests/test_idempotency.py', 1, NULL, '[]', '[]', '[]', 'payments-api', 'unreviewed', NULL, NULL, NULL, NULL, 'unverified', '{}', '[]', 'flaky test idempotency key reus froz time');
INSERT INTO skills (id, created_at, name, description, steps, source_experience_ids, origin, candidate_id, project, health, terms) VALUES (1, '2026-01-15T09:00:00.000000Z', 'alembic-duplicate-column', 'Repair an autogenerated Alembic revision that re-creates an existing column or table.', '[{"command":"alembic history --verbose","expected_exit_code":0},{"command":"alembic upgrade head","expected_exit_code":0}]', '["exp-1","exp-2"]', 'promoted', NULL, 'payments-api', 2, 'alembic duplicat column repair autogenerat alembic revision re creat exist column tabl alembic migrat fail column invoic currency already exist remov duplicat op column chain revision hotfix revision alembic upgrad head fail duplicatetabl refund drop duplicat creat tabl autogenerat revision re point revision');
COMMIT;
