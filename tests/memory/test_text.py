from lorelab.memory._text import (
    fts_query,
    normalise_command,
    stem,
    task_key,
    terms,
    unique_terms,
)


def test_inflections_of_one_word_share_a_stem():
    assert {stem(w) for w in ("fail", "fails", "failed", "failing")} == {"fail"}
    assert {stem(w) for w in ("parse", "parses", "parsed", "parsing")} == {"pars"}
    assert {stem(w) for w in ("migration", "migrations", "migrated", "migrating")} == {"migrat"}
    assert stem("passes") == stem("passed") == stem("pass") == "pass"


def test_short_words_and_numbers_are_kept_as_written():
    assert stem("ci") == "ci"
    assert stem("api") == "api"
    assert stem("2024") == "2024"


def test_terms_split_identifiers_on_underscores_and_drop_stopwords():
    assert terms("Fix the failing test_parse_version in CI") == [
        "fail",
        "test",
        "pars",
        "version",
        "ci",
    ]


def test_unique_terms_keep_first_seen_order():
    assert unique_terms("tests test testing pydantic Pydantic") == ["test", "pydantic"]


def test_commands_that_split_to_the_same_argv_normalise_equal():
    assert normalise_command("pytest   'tests/test_a.py'  -q") == normalise_command(
        "pytest tests/test_a.py -q"
    )
    assert normalise_command("echo 'unterminated") == "echo 'unterminated"


def test_task_keys_ignore_whitespace_and_case():
    assert task_key("  Fix   the\tBuild ") == task_key("fix the build")
    assert task_key("fix the build") != task_key("fix the builds")


def test_fts_query_quotes_every_term():
    assert fts_query(["a", 'b"c']) == '"a" OR "b""c"'
