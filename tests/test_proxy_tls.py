"""``toolstitch proxy`` in front of an https:// upstream: the real server of
``tests/http_server.py`` serving TLS with certificates of a certificate authority made
for the test (``trustme``), trusted through ``SSL_CERT_FILE`` (both relays honour it:
docs/integrations.md). Each test runs on both relays (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import trustme
from http_server import RecordingServer
from test_proxy import CHAT_TOOLS, ROUTES, STRICT_CHAT_TOOLS, proxy, raw
from test_watch import MESSAGES, OPENAI_CHAT


def _serving(ca: trustme.CA, *names: str) -> ssl.SSLContext:
    """A server context with a certificate of ``ca`` for ``names``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return context


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def trusted(ca: trustme.CA, tmp_path: Path) -> dict[str, str]:
    """The environment that trusts ``ca`` (and nothing else)."""
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return {"SSL_CERT_FILE": str(path)}


@pytest.fixture
def https_upstream(ca: trustme.CA) -> Iterator[RecordingServer]:
    with RecordingServer(ROUTES, tls=_serving(ca, "127.0.0.1")) as server:
        yield server


def _refused(url: str) -> tuple[int, dict[str, object]]:
    """Status and JSON body of one chat request through the proxy at ``url``."""
    with pytest.raises(openai.InternalServerError) as raised:
        openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0).chat.completions.create(
            model="m", messages=MESSAGES, stream=True, tools=CHAT_TOOLS
        )
    return raised.value.status_code, json.loads(raised.value.response.content)


# The answer both relays give when the upstream's certificate is refused: the provider's
# own 502 shape, naming no detail of the handshake.
REFUSED = {
    "error": {
        "message": "toolstitch proxy: the upstream cannot be reached: ConnectError",
        "type": "upstream_error",
        "param": None,
        "code": "upstream_unavailable",
    }
}


def test_a_stream_from_an_https_upstream_arrives_intact_through_the_guard(
    https_upstream: RecordingServer, trusted: dict[str, str], tmp_path: Path
) -> None:
    assert https_upstream.url.startswith("https://127.0.0.1:")
    with proxy(https_upstream.url, tmp_path, "--enforce", env=trusted) as running:
        request = {"model": "gpt-4o", "messages": MESSAGES, "stream": True, "tools": CHAT_TOOLS}
        status, body, _ = raw(f"{running.url}/v1/chat/completions", request)
        assert (status, body) == (200, OPENAI_CHAT)
        client = openai.OpenAI(base_url=f"{running.url}/v1", api_key="k", max_retries=0)
        chunks = list(
            client.chat.completions.create(
                model="gpt-4o", messages=MESSAGES, stream=True, tools=CHAT_TOOLS
            )
        )
        reasons = [c.choices[0].finish_reason for c in chunks if c.choices]
        assert reasons[-1] == "tool_calls" and set(reasons[:-1]) == {None}
        # The guard still blocks over TLS.
        with pytest.raises(openai.APIError, match="GetWeatherArgs"):
            for _ in client.chat.completions.create(
                model="gpt-4o", messages=MESSAGES, stream=True, tools=STRICT_CHAT_TOOLS
            ):
                pass
        records = running.records(3)
    assert [r["enforced"] for r in records] == ["passed", "passed", "blocked"]
    assert records[0]["bytes"] == len(OPENAI_CHAT)
    assert len(https_upstream.requests) == 3


def test_an_untrusted_certificate_fails_closed(
    https_upstream: RecordingServer, tmp_path: Path
) -> None:
    other = trustme.CA()
    path = tmp_path / "other.pem"
    other.cert_pem.write_to_path(str(path))
    with proxy(
        https_upstream.url, tmp_path, "--enforce", env={"SSL_CERT_FILE": str(path)}
    ) as running:
        assert _refused(running.url) == (502, REFUSED)
        (record,) = running.records(1)
    assert record["status"] == 502
    assert record["reason"] == "the upstream cannot be reached: ConnectError"
    assert record["enforced"] == "unchecked"
    assert https_upstream.requests == []
    # The operator is told why; the log names the upstream and the handshake's failure.
    line = next(x for x in running.stderr.splitlines() if "TLS handshake" in x)
    assert f"the TLS handshake with {https_upstream.url} failed: " in line
    assert "issuer" in line.lower(), line


def test_a_certificate_for_another_name_is_refused(
    ca: trustme.CA, trusted: dict[str, str], tmp_path: Path
) -> None:
    with (
        RecordingServer(ROUTES, tls=_serving(ca, "localhost")) as upstream,
        proxy(upstream.url, tmp_path, env=trusted) as running,
    ):
        assert _refused(running.url) == (502, REFUSED)
        (record,) = running.records(1)
        assert upstream.requests == []
    assert record["reason"] == "the upstream cannot be reached: ConnectError"
    line = next(x for x in running.stderr.splitlines() if "TLS handshake" in x)
    assert "127.0.0.1" in line.split("failed: ", 1)[1], line


@pytest.mark.parametrize("relay_name", ["python", "rust"])
@pytest.mark.parametrize("where", ["an empty file", "no such directory", "an empty directory"])
def test_no_trusted_certificate_is_said_at_start(
    relay_name: str, where: str, tmp_path: Path
) -> None:
    """No certificate to trust is the operator's error at start (exit status 2), on both
    relays alike, wherever the certificates were to come from."""
    if where == "an empty file":
        (tmp_path / "empty.pem").write_text("")
        name, value = "SSL_CERT_FILE", tmp_path / "empty.pem"
    else:
        name, value = "SSL_CERT_DIR", tmp_path / "certs"
        if where == "an empty directory":
            value.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "toolstitch", "proxy", "--relay", relay_name),
            *("--upstream", "https://127.0.0.1:9", "--listen", "127.0.0.1:0"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, name: str(value)},
    )
    assert done.returncode == 2, done.stderr
    said = f"--upstream https://127.0.0.1:9: no trusted certificate found in {name}={value}"
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "listening" not in done.stderr


@pytest.mark.skipif(shutil.which("openssl") is None, reason="names the file by its hash")
def test_a_certificate_directory_is_trusted_by_both_relays(
    ca: trustme.CA, https_upstream: RecordingServer, tmp_path: Path
) -> None:
    """The twin of the refusals above: SSL_CERT_DIR holding the authority's certificate
    under its subject hash (as `openssl rehash` names it) is trusted by both relays."""
    pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    hashed = subprocess.run(
        ["openssl", "x509", "-subject_hash", "-noout", "-in", str(pem)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    certs = tmp_path / "certs"
    certs.mkdir()
    (certs / f"{hashed}.0").write_bytes(pem.read_bytes())
    # SSL_CERT_FILE set empty is unset to both relays (and SSL_CERT_DIR then read).
    env = {"SSL_CERT_FILE": "", "SSL_CERT_DIR": str(certs)}
    with proxy(https_upstream.url, tmp_path, env=env) as running:
        request = {"model": "m", "messages": MESSAGES, "stream": True}
        assert raw(f"{running.url}/v1/chat/completions", request)[:2] == (200, OPENAI_CHAT)


def test_an_http_upstream_needs_no_trusted_certificate(tmp_path: Path) -> None:
    """The trusted certificates are read for an https:// upstream only."""
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    with (
        RecordingServer(ROUTES) as upstream,
        proxy(upstream.url, tmp_path, env={"SSL_CERT_FILE": str(empty)}) as running,
    ):
        request = {"model": "m", "messages": MESSAGES, "stream": True}
        assert raw(f"{running.url}/v1/chat/completions", request)[:2] == (200, OPENAI_CHAT)
