import errno
from pathlib import Path

import pytest
import yaml

from lorelab.errors import InputFileError, OutputExistsError, SchemaError
from lorelab.memory import PromoteRequest, Skill, SkillsRequest, SkillStep, _export
from lorelab.memory._export import export_skills, skill_markdown
from tests.support.memory import experience


def _skill(name: str, description: str) -> Skill:
    return Skill(
        id="skill-1",
        name=name,
        description=description,
        steps=[SkillStep(command="pytest -q `x`"), SkillStep(command="ruff check .")],
        source_experience_ids=["exp-1", "exp-2"],
        origin="promoted",
        candidate_id=None,
        project=None,
        health=2,
        state="trusted",
        created_at="2026-01-01T00:00:00.000000Z",
    )


def _front_matter(path: Path) -> dict[str, object]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    block = text.split("---\n", 2)[1]
    data = yaml.safe_load(block)
    assert isinstance(data, dict)
    return data


def test_an_exported_skill_is_a_valid_agent_skills_folder(tmp_path):
    hostile = 'Fix: "quoted" text\n---\nname: evil\n# and a colon: here ' + "é" * 3
    [path] = export_skills([_skill("refund-rounding", hostile)], tmp_path / "skills")
    assert path == tmp_path / "skills" / "refund-rounding" / "SKILL.md"
    meta = _front_matter(path)
    assert meta["name"] == "refund-rounding" == path.parent.name
    assert meta["description"] == hostile
    assert len(str(meta["description"])) <= 1024
    assert all(isinstance(v, str) for v in dict(meta["metadata"]).values())  # type: ignore[call-overload]
    body = path.read_text(encoding="utf-8")
    assert "1. Run `` pytest -q `x` `` and expect exit code 0." in body
    assert "2. Run `ruff check .` and expect exit code 0." in body


def test_unicode_line_separators_never_split_a_line_of_skill_md(tmp_path):
    description = "Fix rounding\u2028---\u2029name: evil\u0085done"
    skill = _skill("refund-rounding", description).model_copy(
        update={"steps": [SkillStep(command="echo a\u2028b")]}
    )
    [path] = export_skills([skill], tmp_path / "skills")
    text = path.read_text(encoding="utf-8")
    # str.splitlines treats U+0085, U+2028 and U+2029 as line breaks; none is written raw.
    assert text.splitlines() == text.removesuffix("\n").split("\n")
    assert _front_matter(path)["description"] == description
    assert '1. Run "echo a\\u2028b" and expect exit code 0.' in text


def test_export_never_overwrites_an_existing_skill_folder(tmp_path):
    (tmp_path / "refund-rounding").mkdir()
    with pytest.raises(OutputExistsError, match="refund-rounding"):
        export_skills([_skill("other", "d"), _skill("refund-rounding", "d")], tmp_path)
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("name", ["Bad_Name", "aaa-zzz-", "-lead", "two--hyphens", "x" * 65])
def test_skill_markdown_refuses_an_invalid_name_with_a_lorelab_error(name):
    with pytest.raises(SchemaError, match="cannot be exported as an Agent Skill: skill name"):
        skill_markdown(_skill(name, "d"))


def test_skill_markdown_refuses_a_description_over_the_agent_skills_limit():
    with pytest.raises(SchemaError, match="1,025 characters; the Agent Skills limit is 1,024"):
        skill_markdown(_skill("fine-name", "d" * 1025))


def test_an_invalid_skill_refuses_the_whole_export_before_anything_is_created(tmp_path):
    out = tmp_path / "new" / "skills"
    with pytest.raises(SchemaError, match="aaa-zzz-"):
        export_skills([_skill("good-one", "d"), _skill("aaa-zzz-", "d")], out)
    assert not (tmp_path / "new").exists()


def test_a_write_failing_part_way_removes_the_folders_the_export_created(tmp_path, monkeypatch):
    out = tmp_path / "new" / "skills"
    real_open = open
    calls = []

    def full_disk(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(_export, "open", full_disk, raising=False)
    with pytest.raises(InputFileError, match="No space left on device; nothing was exported"):
        export_skills([_skill("first", "d"), _skill("second", "d")], out)
    assert len(calls) == 2
    assert not (tmp_path / "new").exists()


def test_an_export_directory_that_cannot_be_created_is_one_lorelab_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputFileError, match="cannot write the Skills export"):
        export_skills([_skill("first", "d")], tmp_path / "file" / "skills")


def test_store_skills_export_with_their_sources(store, tmp_path):
    first = store.record(experience()).id
    second = store.record(experience(task="refund rounding again")).id
    skill = store.promote_skill(
        PromoteRequest(experience_ids=[first, second], name="refunds", description="Refunds.")
    )
    [path] = export_skills(store.skills(SkillsRequest()).skills, tmp_path)
    meta = _front_matter(path)
    assert meta["name"] == skill.name
    assert meta["metadata"]["lorelab-source-experiences"] == f"{first} {second}"  # type: ignore[index]
