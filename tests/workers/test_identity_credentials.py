"""Identity binding refuses credential-like operands and scripts without reading them."""

import os
import sys

import pytest

from lorelab.errors import InputFileError, UsageError
from lorelab.workers import (
    bind_identity,
)
from lorelab.workers.identity import _files as identity_files


@pytest.mark.parametrize(
    "operand",
    [
        ".env",
        ".env.production",
        "config/.netrc",
        "deploy/server.pem",
        "keys/id_rsa",
        "id_ed25519.pub",
        "api_token.txt",
        "my-credentials.json",
        "vault/secret.yaml",
        "--env-file=.env",
        "~/.ssh/config",
        "~/.aws/credentials",
        "~/.config/gcloud/application_default_credentials.json",
    ],
)
def test_a_credential_like_operand_is_refused_without_being_read(trial, operand, monkeypatch):
    hashed: list[str] = []
    real = identity_files.file_sha256

    def spy(path, *, cap):
        hashed.append(os.fspath(path))
        return real(path, cap=cap)

    monkeypatch.setattr(identity_files, "file_sha256", spy)
    target = trial / operand.split("=")[-1] if not operand.startswith("~") else None
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("SECRET=1\n")
    with pytest.raises(InputFileError, match="looks like a credential"):
        bind_identity([sys.executable, "-c", "pass", operand], cwd=trial, operator_identity=None)
    assert hashed == [sys.executable] or all(not p.startswith(str(trial)) for p in hashed)
    if target is not None:
        assert str(target) not in hashed


def test_a_credential_like_script_is_refused_before_it_is_hashed(trial, monkeypatch):
    secret = trial / "secret_worker.py"
    secret.write_text("print('{}')\n")
    hashed: list[str] = []
    real = identity_files.file_sha256
    monkeypatch.setattr(
        identity_files,
        "file_sha256",
        lambda path, *, cap: hashed.append(os.fspath(path)) or real(path, cap=cap),
    )
    with pytest.raises(InputFileError, match="contains 'secret'"):
        bind_identity([sys.executable, "secret_worker.py"], cwd=trial, operator_identity=None)
    assert str(secret) not in hashed


@pytest.mark.parametrize(
    "operand",
    [
        "-k~/.aws/credentials",
        "-k~/.aws/config",
        "-xk~/.ssh/known_hosts",
        "-kid_rsa",
        "-k.env",
        "-Kconfig/api_secret.txt",
        "--mount=type=bind,src=~/.ssh",
        "label:~/.config/gcloud/adc.json",
    ],
)
def test_a_credential_attached_to_a_flag_is_refused_without_being_read(
    trial, operand, monkeypatch, tmp_path
):
    home = tmp_path / "home"
    for sub in (".aws", ".ssh", ".config/gcloud"):
        (home / sub).mkdir(parents=True)
    (home / ".aws" / "config").write_text("[default]\n")
    monkeypatch.setenv("HOME", str(home))
    hashed: list[str] = []
    real = identity_files.file_sha256
    monkeypatch.setattr(
        identity_files,
        "file_sha256",
        lambda path, *, cap: hashed.append(os.fspath(path)) or real(path, cap=cap),
    )
    with pytest.raises(InputFileError, match="looks like a credential"):
        bind_identity([sys.executable, "-c", "pass", operand], cwd=trial, operator_identity=None)
    assert all(not path.startswith(str(home)) for path in hashed)


def test_an_absolute_credential_path_attached_to_a_flag_is_refused(trial, monkeypatch, tmp_path):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    operand = f"-k{home}/.aws/config"
    with pytest.raises(InputFileError, match=r"under ~/\.aws"):
        bind_identity([sys.executable, "w.py", operand], cwd=trial, operator_identity=None)


def test_ordinary_attached_flags_are_not_mistaken_for_credentials(trial):
    (trial / "w.py").write_text("print('{}')\n")
    identity = bind_identity(
        [sys.executable, "-Wignore::DeprecationWarning", "-Xutf8", "w.py", "-v/tmp/out", "-n3"],
        cwd=trial,
        operator_identity=None,
    )
    assert identity.bound_files[0].declared == "w.py"


def test_inline_source_and_free_text_are_not_mistaken_for_credentials(trial):
    identity = bind_identity(
        [
            sys.executable,
            "-c",
            "import os; print(os.environ.get('TOKEN'))",
            "count the token budget",
        ],
        cwd=trial,
        operator_identity=None,
    )
    assert identity.inline_sources


@pytest.mark.parametrize("argv", [[], [""], ["a\x00b"], "python3 worker.py"])
def test_a_malformed_argv_is_a_usage_error(trial, argv):
    with pytest.raises(UsageError):
        bind_identity(argv, cwd=trial, operator_identity=None)
