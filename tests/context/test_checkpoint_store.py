import json
import os
import stat
from datetime import UTC, datetime, timedelta

import pytest

from lorelab.context import (
    Checkpoint,
    CheckpointStore,
    FailedCommand,
    RequestContext,
    RequestMessage,
    handoff_brief,
    recover,
    scope_key,
    write_checkpoint,
)
from lorelab.errors import IntegrityFailure, OutputExistsError, PathError, SchemaError, UsageError

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def _write(store: CheckpointStore, scope: str = "task-1", **kwargs: object) -> Checkpoint:
    fields: dict[str, object] = {
        "boundary": "compaction",
        "summary": "ran the tests; the port is 5432",
        "notes": ["keep the port"],
        "request_context": RequestContext(
            task="Find the port",
            messages=[RequestMessage(index=0, author="user", text="What port?")],
        ),
        "failed_commands": [FailedCommand(command="make test", exit_code=2, index=3)],
        "source_event_indices": [0, 1, 2, 3],
    }
    fields.update(kwargs)
    return write_checkpoint(store, scope=scope, **fields)  # type: ignore[arg-type]


def test_written_checkpoint_is_recovered_from_a_new_store_object(tmp_path):
    written = _write(CheckpointStore(tmp_path / "home"))
    recovered = recover(CheckpointStore(tmp_path / "home"), "task-1")
    assert recovered == written
    assert recovered.failed_commands[0].exit_code == 2
    assert recovered.request_context.messages[0].text == "What port?"


def test_latest_is_the_newest_checkpoint_of_its_own_scope(tmp_path):
    store = CheckpointStore(tmp_path)
    _write(store, created_at=T0)
    newest = _write(store, created_at=T0 + timedelta(seconds=1), boundary="restart")
    _write(store, scope="other", created_at=T0 + timedelta(seconds=5))
    assert store.latest("task-1") == newest
    assert [c.boundary for c in store.history("task-1")] == ["compaction", "restart"]


def test_recover_of_an_unknown_scope_is_none(tmp_path):
    assert recover(CheckpointStore(tmp_path / "never"), "task-1") is None


def test_get_finds_a_checkpoint_by_id_and_refuses_a_malformed_id(tmp_path):
    store = CheckpointStore(tmp_path)
    written = _write(store)
    assert store.get(written.id) == written
    assert store.get("ckpt-20250101T000000000000Z-000000000000") is None
    with pytest.raises(UsageError, match="not a checkpoint id"):
        store.get("../../etc/passwd")


def test_files_are_private_and_camel_case_json(tmp_path):
    store = CheckpointStore(tmp_path / "home")
    written = _write(store)
    directory = tmp_path / "home" / "checkpoints" / scope_key("task-1")
    path = directory / f"{written.id}.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    data = json.loads(path.read_text())
    assert data["schemaVersion"] == 1
    assert data["failedCommands"] == [{"command": "make test", "exitCode": 2, "index": 3}]
    assert "requestContext" in data
    assert "sourceEventIndices" in data


def test_a_stored_checkpoint_is_never_replaced(tmp_path):
    store = CheckpointStore(tmp_path)
    written = _write(store)
    with pytest.raises(OutputExistsError, match="already exists"):
        store.write(written)


def test_a_failed_command_with_exit_code_zero_is_refused(tmp_path):
    with pytest.raises(SchemaError, match="nonzero exit code"):
        _write(CheckpointStore(tmp_path), failed_commands=[{"command": "ls", "exitCode": 0}])


def test_an_empty_scope_and_a_naive_time_are_refused(tmp_path):
    store = CheckpointStore(tmp_path)
    with pytest.raises(SchemaError, match="scope"):
        _write(store, scope="")
    with pytest.raises(UsageError, match="time zone"):
        _write(store, created_at=datetime(2025, 1, 1))  # noqa: DTZ001


def test_an_oversized_checkpoint_is_refused_and_nothing_is_written(tmp_path):
    store = CheckpointStore(tmp_path)
    with pytest.raises(UsageError, match="exceeds the store limit"):
        _write(store, summary="x" * (1024 * 1024 + 1))
    assert store.latest("task-1") is None


def test_a_checkpoint_moved_to_another_scope_is_an_integrity_failure(tmp_path):
    store = CheckpointStore(tmp_path)
    written = _write(store, scope="a")
    source = tmp_path / "checkpoints" / scope_key("a") / f"{written.id}.json"
    target_dir = tmp_path / "checkpoints" / scope_key("b")
    target_dir.mkdir()
    os.link(source, target_dir / source.name)
    os.unlink(source)
    with pytest.raises(IntegrityFailure, match="another place"):
        store.latest("b")


def test_a_corrupt_checkpoint_file_is_a_named_error_not_a_silent_skip(tmp_path):
    store = CheckpointStore(tmp_path)
    written = _write(store)
    path = tmp_path / "checkpoints" / scope_key("task-1") / f"{written.id}.json"
    os.chmod(path, 0o600)
    path.write_text('{"schemaVersion": 1}')
    with pytest.raises(SchemaError, match=written.id):
        store.latest("task-1")


def test_handoff_brief_carries_request_summary_notes_and_failed_commands(tmp_path):
    checkpoint = _write(CheckpointStore(tmp_path), boundary="child_handoff")
    brief = handoff_brief(checkpoint)
    assert "after a child handoff" in brief
    assert checkpoint.id in brief
    assert "Find the port" in brief
    assert "[0] user: What port?" in brief
    assert "the port is 5432" in brief
    assert "- keep the port" in brief
    assert "`make test` (exit 2, event 3)" in brief
    assert handoff_brief(checkpoint) == brief


def test_handoff_brief_keeps_a_command_with_backticks_in_one_code_span(tmp_path):
    checkpoint = _write(
        CheckpointStore(tmp_path),
        failed_commands=[FailedCommand(command="echo `date`", exit_code=1)],
    )
    assert "`` echo `date` `` (exit 1)" in handoff_brief(checkpoint)


def test_every_directory_the_store_creates_is_private_whatever_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        written = _write(CheckpointStore(tmp_path / "a" / "b" / "home"))
    finally:
        os.umask(previous)
    created = [
        tmp_path / "a",
        tmp_path / "a" / "b",
        tmp_path / "a" / "b" / "home",
        tmp_path / "a" / "b" / "home" / "checkpoints",
        tmp_path / "a" / "b" / "home" / "checkpoints" / scope_key("task-1"),
    ]
    assert [oct(stat.S_IMODE(os.stat(d).st_mode)) for d in created] == [oct(0o700)] * 5
    stored = created[-1] / f"{written.id}.json"
    assert stat.S_IMODE(os.stat(stored).st_mode) == 0o600


def test_an_existing_directory_keeps_its_mode(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o755)
    _write(CheckpointStore(home))
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(home / "checkpoints").st_mode) == 0o700


def test_a_home_that_is_a_file_is_a_path_error_not_a_traceback(tmp_path):
    home = tmp_path / "home"
    home.write_text("not a directory")
    with pytest.raises(PathError, match="not a directory"):
        _write(CheckpointStore(home))
