"""``lorelab serve`` as a process: health, one server per store, SIGTERM, TLS, a reverse proxy."""

from __future__ import annotations

import datetime
import ipaddress
import json
import shutil
import socket
import ssl
import stat
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from lorelab._state import server_file
from lorelab.cli.main import app
from tests.support.missing_tools import missing
from tests.support.serve import (
    http_client,
    make_token,
    running_server,
    start_server,
    stop,
    wait_for_state,
)


def test_healthz_answers_without_a_token_and_says_nothing_of_the_store(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    with running_server(tmp_path / "home", project) as server:
        response = httpx2.get(f"{server.url}/healthz", timeout=60)
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["server"] == "lorelab"
    assert str(tmp_path) not in response.text


def test_the_state_file_is_private_and_names_a_local_write_token_kept_out_of_the_store(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    with running_server(home, project) as server:
        path = server_file(home)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert not (home / "serve.json").exists()  # never in a project tree
        assert server.state["url"] == server.url
        listed = CliRunner().invoke(app, ["serve", "token", "list", "--home", str(home), "--json"])
        live = {t["name"]: t["scope"] for t in json.loads(listed.stdout) if not t["revoked_at"]}
        assert live == {"test-client": "admin"}  # the hooks' token is in the server's memory
        assert server.state["token"].encode() not in (home / "memory.db").read_bytes()

        async def main() -> int:
            async with http_client(server.mcp_url, server.state["token"]) as client:
                return len((await client.list_tools()).tools)

        assert anyio.run(main) > 0


def test_a_second_server_on_the_same_store_is_refused(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    with running_server(home, project) as first:
        second = subprocess.run(
            [*start_server_args(home, project)], capture_output=True, text=True, timeout=120
        )
        assert second.returncode == 3
        assert second.stderr.strip() == (
            f"lorelab: error: {home}: another lorelab serve (pid {first.process.pid}) "
            "already serves this store"
        )
        # The first one still serves, and still owns the state file.
        assert httpx2.get(f"{first.url}/healthz", timeout=60).status_code == 200
        assert json.loads(server_file(home).read_text())["pid"] == first.process.pid


def start_server_args(home: Path, project: Path) -> list[str]:
    from tests.support.serve import PY

    return [PY, "-m", "lorelab", "serve", "start", "--home", str(home), "--project", str(project)]


def test_sigterm_shuts_down_gracefully_withdrawing_the_state_file(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    make_token(home, project, "ci", "read")
    process = start_server(home, project)
    wait_for_state(process, home)
    code = stop(process)  # SIGTERM
    assert code == 143  # the shell's convention for SIGTERM, after a graceful shutdown
    assert not server_file(home).exists()
    listed = CliRunner().invoke(app, ["serve", "token", "list", "--home", str(home), "--json"])
    tokens = {t["name"]: t["revoked_at"] for t in json.loads(listed.stdout)}
    assert tokens == {"ci": None}
    # The lock went with it: the next server starts.
    again = start_server(home, project)
    wait_for_state(again, home)
    assert stop(again) == 143


def test_a_token_is_printed_once_and_only_its_hash_is_stored(tmp_path):
    home = tmp_path / "home"
    runner = CliRunner()
    made = runner.invoke(
        app, ["serve", "token", "create", "alice", "--scope", "write", "--home", str(home)]
    )
    assert made.exit_code == 0, made.output
    token = made.stdout.strip()
    assert token.startswith("llb_")
    assert len(token) >= 40
    assert token.encode() not in (home / "memory.db").read_bytes()
    again = runner.invoke(
        app, ["serve", "token", "create", "alice", "--scope", "read", "--home", str(home)]
    )
    assert again.exit_code == 2
    assert "a live token already has it; revoke it first" in again.stderr
    revoked = runner.invoke(app, ["serve", "token", "revoke", "alice", "--home", str(home)])
    assert revoked.exit_code == 0
    missing = runner.invoke(app, ["serve", "token", "revoke", "alice", "--home", str(home)])
    assert missing.exit_code == 2
    assert missing.stderr.strip() == (
        "lorelab: error: token name 'alice': no live token has it (see `lorelab serve token list`)"
    )


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, signed by its own key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lorelab test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def test_tls_serves_https_to_the_sdk_client_that_trusts_the_certificate(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    cert, key = _self_signed(tmp_path)
    # Two processes: the server hands each TLS connection over before its handshake.
    args = ["--tls-cert", str(cert), "--tls-key", str(key), "--workers", "2"]
    with running_server(home, project, args=args) as server:
        assert server.url.startswith("https://127.0.0.1:")
        trusted = ssl.create_default_context(cafile=str(cert))

        async def main() -> int:
            async with http_client(server.mcp_url, server.token, verify=trusted) as client:
                return len((await client.list_tools()).tools)

        assert anyio.run(main) > 0
        with pytest.raises(httpx2.ConnectError):  # a client that does not trust it stops
            httpx2.get(f"{server.url}/healthz", timeout=60)
        for _ in range(4):  # new connections, handed to each process in turn: all served
            assert (
                httpx2.get(f"{server.url}/healthz", timeout=60, verify=trusted).status_code == 200
            )


def test_tls_flags_must_come_together(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    result = CliRunner().invoke(
        app,
        [
            "serve",
            "start",
            "--home",
            str(tmp_path / "h"),
            "--project",
            str(project),
            "--tls-cert",
            "x",
        ],
    )
    assert result.exit_code == 2
    assert (
        result.stderr.strip() == "lorelab: error: --tls-cert and --tls-key: give both, or neither"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


NGINX_EXAMPLE = Path(__file__).parents[2] / "examples" / "serve" / "nginx.conf"


@pytest.mark.skipif(shutil.which("nginx") is None, reason=missing("nginx"))
def test_the_documented_nginx_configuration_proxies_mcp_with_tls(tmp_path):
    # docs/serve.md shows examples/serve/nginx.conf; this runs that file, with its
    # placeholders filled in, in front of a real server.
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    cert, key = _self_signed(tmp_path)
    port = _free_port()
    with running_server(home, project) as server:
        upstream = server.url.removeprefix("http://")
        config = (
            NGINX_EXAMPLE.read_text()
            .replace("443", str(port))
            .replace("/etc/ssl/lorelab/cert.pem", str(cert))
            .replace("/etc/ssl/lorelab/key.pem", str(key))
            .replace("127.0.0.1:8765", upstream)
        )
        wrapper = (
            f"daemon off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;\n"
            f"events {{}}\nhttp {{\naccess_log off;\nclient_body_temp_path {tmp_path};\n"
            f"proxy_temp_path {tmp_path};\n{config}\n}}\n"
        )
        (tmp_path / "nginx.conf").write_text(wrapper)
        proxy = subprocess.Popen(
            ["nginx", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
            stderr=subprocess.PIPE,
        )
        try:
            trusted = ssl.create_default_context(cafile=str(cert))
            _wait_for_port(port)

            async def main() -> str:
                async with http_client(
                    f"https://localhost:{port}/mcp", server.token, verify=trusted
                ) as client:
                    listed = await client.list_tools()
                    return listed.tools[0].name

            assert anyio.run(main).startswith("lore_")
            refused = httpx2.post(f"https://localhost:{port}/mcp", json={}, verify=trusted)
            assert refused.status_code == 401  # the token is checked behind the proxy too
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)


def _wait_for_port(port: int) -> None:
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nginx did not listen on {port}")
