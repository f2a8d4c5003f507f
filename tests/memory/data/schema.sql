-- index candidate_checks_candidate
CREATE INDEX candidate_checks_candidate ON candidate_checks (candidate_id);

-- index evaluation_lock_tasks_key
CREATE INDEX evaluation_lock_tasks_key ON evaluation_lock_tasks (task_key);

-- index evaluation_locks_active
CREATE UNIQUE INDEX evaluation_locks_active ON evaluation_locks (evaluation_id)
    WHERE cleared_at IS NULL;

-- index experiences_trust_project
CREATE INDEX experiences_trust_project ON experiences (trust, project);

-- index feedback_experience
CREATE INDEX feedback_experience ON feedback (experience_id);

-- index plans_skill
CREATE INDEX plans_skill ON plans (skill_id);

-- index serve_tokens_live_name
CREATE UNIQUE INDEX serve_tokens_live_name ON serve_tokens (name) WHERE revoked_at IS NULL;

-- index skill_health_events_skill
CREATE INDEX skill_health_events_skill ON skill_health_events (skill_id);

-- index validity_events_item
CREATE INDEX validity_events_item ON validity_events (item_id);

-- table _lorelab_migrations
CREATE TABLE _lorelab_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);

-- table briefs
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

-- table candidate_checks
CREATE TABLE candidate_checks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    candidate_id INTEGER NOT NULL REFERENCES candidates (id),
    passed INTEGER NOT NULL,
    results TEXT NOT NULL,
    timeout_seconds REAL NOT NULL,
    copy_method TEXT NOT NULL
);

-- table candidates
CREATE TABLE candidates (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    steps TEXT NOT NULL,
    checks TEXT NOT NULL,
    source_experience_ids TEXT NOT NULL,
    fingerprint TEXT NOT NULL UNIQUE,
    origin TEXT NOT NULL,
    project TEXT,
    state TEXT NOT NULL CHECK (state IN ('candidate', 'checked', 'check_failed', 'promoted')),
    skill_id INTEGER
, provenance TEXT);

-- table evaluation_lock_tasks
CREATE TABLE evaluation_lock_tasks (
    lock_id INTEGER NOT NULL REFERENCES evaluation_locks (id),
    task_key TEXT NOT NULL
);

-- table evaluation_locks
CREATE TABLE evaluation_locks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    evaluation_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    cleared_at TEXT,
    holdout_tasks TEXT NOT NULL
);

-- table experience_term_counts
CREATE TABLE experience_term_counts (term TEXT PRIMARY KEY, docs INTEGER NOT NULL CHECK (docs > 0)) WITHOUT ROWID;

-- table experience_vectors
CREATE TABLE "experience_vectors" (
    model TEXT NOT NULL,
    id INTEGER NOT NULL REFERENCES experiences (id),
    vector BLOB NOT NULL,
    PRIMARY KEY (model, id)
) WITHOUT ROWID;

-- table experiences
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
, validity TEXT NOT NULL DEFAULT 'trusted'
    CHECK (validity IN ('trusted', 'superseded', 'contradicted', 'deprecated')), validity_reason TEXT, recorded_by TEXT);

-- table experiences_fts
CREATE VIRTUAL TABLE experiences_fts USING fts5(
    terms, content='experiences', content_rowid='id', tokenize='unicode61 remove_diacritics 0'
);

-- table feedback
CREATE TABLE feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    experience_id INTEGER NOT NULL REFERENCES experiences (id),
    brief_id INTEGER REFERENCES briefs (id),
    rating TEXT NOT NULL CHECK (rating IN ('helpful', 'ignored', 'misleading', 'harmful')),
    note TEXT
);

-- table lesson_vectors
CREATE TABLE "lesson_vectors" (
    model TEXT NOT NULL,
    seq INTEGER NOT NULL REFERENCES lessons (seq),
    vector BLOB NOT NULL,
    PRIMARY KEY (model, seq)
) WITHOUT ROWID;

-- table lessons
CREATE TABLE lessons (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    specification_id TEXT,
    requirements TEXT NOT NULL,
    files TEXT NOT NULL,
    tests TEXT NOT NULL,
    validation TEXT NOT NULL,
    test_names TEXT NOT NULL,
    terms TEXT NOT NULL
);

-- table lessons_fts
CREATE VIRTUAL TABLE lessons_fts USING fts5(
    terms, content='lessons', content_rowid='seq', tokenize='unicode61 remove_diacritics 0'
);

-- table memory_state
CREATE TABLE memory_state (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;

-- table plans
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

-- table serve_tokens
CREATE TABLE serve_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);

-- table skill_health_events
CREATE TABLE skill_health_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    skill_id INTEGER NOT NULL REFERENCES skills (id),
    plan_id INTEGER NOT NULL REFERENCES plans (id),
    passed INTEGER NOT NULL,
    health_before INTEGER NOT NULL,
    health_after INTEGER NOT NULL
);

-- table skills
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
, validity TEXT NOT NULL DEFAULT 'trusted'
    CHECK (validity IN ('trusted', 'superseded', 'contradicted', 'deprecated')), validity_reason TEXT);

-- table skills_fts
CREATE VIRTUAL TABLE skills_fts USING fts5(
    terms, content='skills', content_rowid='id', tokenize='unicode61 remove_diacritics 0'
);

-- table skills_vocab
CREATE VIRTUAL TABLE skills_vocab USING fts5vocab(skills_fts, 'row');

-- table store_settings
CREATE TABLE store_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

-- table validity_events
CREATE TABLE validity_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    item_id TEXT NOT NULL,
    state_before TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('trusted', 'superseded', 'contradicted', 'deprecated')),
    reason TEXT,
    superseded_by TEXT
);

-- trigger briefs_no_delete
CREATE TRIGGER briefs_no_delete BEFORE DELETE ON briefs BEGIN
    SELECT RAISE(ABORT, 'briefs are never deleted');
END;

-- trigger candidate_checks_no_delete
CREATE TRIGGER candidate_checks_no_delete BEFORE DELETE ON candidate_checks BEGIN
    SELECT RAISE(ABORT, 'candidate checks are never deleted');
END;

-- trigger candidates_no_delete
CREATE TRIGGER candidates_no_delete BEFORE DELETE ON candidates BEGIN
    SELECT RAISE(ABORT, 'candidates are never deleted');
END;

-- trigger evaluation_lock_tasks_no_delete
CREATE TRIGGER evaluation_lock_tasks_no_delete BEFORE DELETE ON evaluation_lock_tasks BEGIN
    SELECT RAISE(ABORT, 'evaluation lock tasks are never deleted');
END;

-- trigger evaluation_locks_no_delete
CREATE TRIGGER evaluation_locks_no_delete BEFORE DELETE ON evaluation_locks BEGIN
    SELECT RAISE(ABORT, 'evaluation locks are never deleted');
END;

-- trigger experiences_no_delete
CREATE TRIGGER experiences_no_delete BEFORE DELETE ON experiences BEGIN
    SELECT RAISE(ABORT, 'experiences are never deleted');
END;

-- trigger feedback_no_delete
CREATE TRIGGER feedback_no_delete BEFORE DELETE ON feedback BEGIN
    SELECT RAISE(ABORT, 'feedback is never deleted');
END;

-- trigger lessons_no_delete
CREATE TRIGGER lessons_no_delete BEFORE DELETE ON lessons BEGIN
    SELECT RAISE(ABORT, 'lessons are never deleted');
END;

-- trigger plans_no_delete
CREATE TRIGGER plans_no_delete BEFORE DELETE ON plans BEGIN
    SELECT RAISE(ABORT, 'plans are never deleted');
END;

-- trigger serve_tokens_no_delete
CREATE TRIGGER serve_tokens_no_delete BEFORE DELETE ON serve_tokens BEGIN
    SELECT RAISE(ABORT, 'serve tokens are never deleted');
END;

-- trigger skill_health_events_no_delete
CREATE TRIGGER skill_health_events_no_delete BEFORE DELETE ON skill_health_events BEGIN
    SELECT RAISE(ABORT, 'skill health events are never deleted');
END;

-- trigger skills_no_delete
CREATE TRIGGER skills_no_delete BEFORE DELETE ON skills BEGIN
    SELECT RAISE(ABORT, 'skills are never deleted');
END;

-- trigger validity_events_no_delete
CREATE TRIGGER validity_events_no_delete BEFORE DELETE ON validity_events BEGIN
    SELECT RAISE(ABORT, 'validity events are never deleted');
END;

