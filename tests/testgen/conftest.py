import pytest

from tests.support.testgen import REQUIREMENTS, SOURCE


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / SOURCE.path).write_text(SOURCE.content)
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS)
    return root
