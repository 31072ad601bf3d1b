"""The classroom server over TLS (`--certfile`, `--keyfile`), as the hub runs it: each connection's handshake in its
own thread, within read_timeout; plain HTTP to it closed unanswered; a certificate or key it cannot use is one line.

Certificates are made with the openssl command line; where it is missing these tests are skipped.
"""

from __future__ import annotations

import shutil
import signal
import socket
import ssl
import struct
import subprocess
import time

import pytest
import requests

from tests.conftest import ServerProcess
from tests.serving_process import wait_for
from tinyagent.__main__ import main
from tinyagent.classroom.server import ClassroomServer, tls_context

if shutil.which("openssl") is None:
    pytest.skip("the openssl command is not installed", allow_module_level=True)

CHAT = {"model": "classroom", "messages": [{"role": "user", "content": "hi"}]}


def make_certificate(folder, name: str) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its unencrypted key, as PEM files: (certfile, keyfile)."""
    certfile, keyfile = folder / f"{name}.crt", folder / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(keyfile), "-out", str(certfile), "-days", "2", "-subj", f"/CN={name}",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    return str(certfile), str(keyfile)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return make_certificate(tmp_path_factory.mktemp("tls"), "classroom")


def raw_connection(room: ClassroomServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", room.port), timeout=60)


def test_a_request_over_tls_is_served_and_the_urls_say_https(certificate):
    certfile, keyfile = certificate
    with ClassroomServer(tls=tls_context(certfile, keyfile)) as room:
        assert room.base_url.startswith("https://127.0.0.1:")
        with requests.Session() as session:  # two requests on one kept-alive TLS connection
            models = session.get(room.base_url + "/models", verify=certfile, timeout=60)
            chat = session.post(room.chat_url, json=CHAT, verify=certfile, timeout=60)
        assert models.status_code == 200 and "classroom" in [m["id"] for m in models.json()["data"]]
        assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"]


def test_plain_http_to_a_tls_server_is_closed_unanswered_and_tls_clients_are_still_served(certificate):
    certfile, keyfile = certificate
    with ClassroomServer(tls=tls_context(certfile, keyfile)) as room:
        with raw_connection(room) as plain:
            plain.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            try:
                answer = plain.recv(65536)
            except ConnectionResetError:
                answer = b""
        assert answer == b""  # closed, nothing sent back: no HTTP answer, no TLS alert a browser would show as text
        assert requests.get(room.base_url + "/models", verify=certfile, timeout=60).status_code == 200


def test_a_handshake_that_never_comes_holds_its_own_thread_only(certificate):
    # Clients that open a connection and send a byte of a ClientHello, then nothing: each has a thread, waiting in
    # its handshake, and the server still answers everyone else at once, not after read_timeout.
    certfile, keyfile = certificate
    with ClassroomServer(tls=tls_context(certfile, keyfile), read_timeout=600) as room:
        stalled = [raw_connection(room) for _ in range(5)]
        try:
            for connection in stalled:
                connection.sendall(b"\x16")  # a TLS record begins: the loop gives it a thread
            started = time.monotonic()
            answer = requests.get(room.base_url + "/models", verify=certfile, timeout=120)
            assert answer.status_code == 200
            assert time.monotonic() - started < 120  # far below the stalled handshakes' 600 s
            for connection in stalled:  # still waiting: the answer did not come from their being closed
                connection.setblocking(False)
                with pytest.raises(BlockingIOError):
                    connection.recv(1)
        finally:
            for connection in stalled:
                connection.close()


def test_a_handshake_slower_than_read_timeout_is_closed(certificate):
    certfile, keyfile = certificate
    with ClassroomServer(tls=tls_context(certfile, keyfile), read_timeout=1) as room:
        with raw_connection(room) as stalled:
            stalled.sendall(b"\x16")
            started = time.monotonic()
            try:
                assert stalled.recv(65536) == b""  # the server closed it
            except ConnectionResetError:
                pass
            assert time.monotonic() - started < 60
        assert requests.get(room.base_url + "/models", verify=certfile, timeout=60).status_code == 200


def test_a_refused_client_that_resets_over_tls_leaves_no_traceback(certificate, capfd):
    # Refused from its headers, its body read past: the reset came as an SSLEOFError, printed twice a connection
    # (the classroom command is verbose), where on plain HTTP a reset is quiet.
    certfile, keyfile = certificate
    client = ssl.create_default_context(cafile=certfile)
    with ClassroomServer(tls=tls_context(certfile, keyfile), api_key="k", verbose=True) as room:
        for _ in range(3):
            tls = client.wrap_socket(raw_connection(room), server_hostname="127.0.0.1")
            tls.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 100000\r\n\r\nabc")
            assert tls.recv(65536).startswith(b"HTTP/1.1 401 ")
            tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
            tls.close()
            wait_for(lambda: not room._httpd._open, "the connection's thread to end")
        assert requests.get(room.base_url + "/models", verify=certfile, timeout=60,
                            headers={"Authorization": "Bearer k"}).status_code == 200
    assert "Traceback" not in capfd.readouterr().err


def test_python_m_tinyagent_classroom_serves_https_with_certfile_and_keyfile(certificate):
    certfile, keyfile = certificate
    with ServerProcess("classroom", "--port", "0", "--certfile", certfile, "--keyfile", keyfile) as server:
        url = server.wait_for_line("TINYAGENT_API_URL=").split("=", 1)[1].strip()
        assert url.startswith("https://")
        context = ssl.create_default_context(cafile=certfile)
        with socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])), timeout=60) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert tls.recv(65536).startswith(b"HTTP/1.1 200 OK")
        assert server.stop(signal.SIGTERM) == 0


@pytest.fixture(scope="module")
def other_key(tmp_path_factory):
    return make_certificate(tmp_path_factory.mktemp("other"), "other")[1]


@pytest.fixture(scope="module")
def encrypted_key(certificate, tmp_path_factory):
    """The certificate's own key, encrypted with a pass phrase: OpenSSL would ask for it on the terminal."""
    encrypted = tmp_path_factory.mktemp("encrypted") / "classroom.key"
    subprocess.run(["openssl", "pkey", "-in", certificate[1], "-out", str(encrypted), "-aes256", "-passout",
                    "pass:a pass phrase"], check=True, capture_output=True, timeout=60)
    return str(encrypted)


@pytest.mark.parametrize("case", ["no certfile", "no keyfile", "a folder", "the key of another certificate",
                                  "certificate and key swapped", "certfile without keyfile", "keyfile without certfile",
                                  "an encrypted key"])
def test_a_certificate_or_key_it_cannot_use_is_one_line_and_exit_2(case, certificate, other_key, encrypted_key,
                                                                    tmp_path, capsys):
    certfile, keyfile = certificate
    options, said = {
        "an encrypted key": (["--certfile", certfile, "--keyfile", encrypted_key],
                             f"error: the key in {encrypted_key} is encrypted: give it unencrypted"),
        "no certfile": (["--certfile", str(tmp_path / "none.crt"), "--keyfile", keyfile],
                        f"error: cannot read {tmp_path / 'none.crt'}: No such file or directory"),
        "no keyfile": (["--certfile", certfile, "--keyfile", str(tmp_path / "none.key")],
                       f"error: cannot read {tmp_path / 'none.key'}: No such file or directory"),
        "a folder": (["--certfile", certfile, "--keyfile", str(tmp_path)], f"error: cannot read {tmp_path}: "),
        "the key of another certificate": (["--certfile", certfile, "--keyfile", other_key],
                                           f"error: the key in {other_key} is not the key of the certificate in"),
        "certificate and key swapped": (["--certfile", keyfile, "--keyfile", certfile],
                                        f"error: cannot use {keyfile} as a PEM certificate"),
        "certfile without keyfile": (["--certfile", certfile], "error: --certfile and --keyfile go together"),
        "keyfile without certfile": (["--keyfile", keyfile], "error: --certfile and --keyfile go together"),
    }[case]
    code = main(["classroom", "--port", "0", *options])  # returns before it would listen: a port is never taken
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith(said), err
    assert "Traceback" not in err and out == ""


def test_llmclient_sends_again_when_a_tls_server_closes_without_a_word(certificate):
    # A TLS server that closes a connection before its handshake (as the classroom did past its cap) shows as an
    # SSLError, not as "remote end closed": LlmClient gave up at once ("could not reach ... (SSLError)"). It now
    # sends once more on a fresh connection, as it does when a plain HTTP server closes one unanswered.
    import json
    import threading

    import requests

    from tinyagent import LlmClient

    certfile, keyfile = certificate
    listener = socket.create_server(("127.0.0.1", 0))
    context = tls_context(certfile, keyfile)
    reply = json.dumps({"id": "x", "object": "chat.completion", "model": "classroom", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}]}).encode()
    served = []

    def serve():
        connection, _ = listener.accept()
        connection.close()  # the first: closed before any handshake, as a server with no room did
        served.append(0)
        connection, _ = listener.accept()
        with context.wrap_socket(connection, server_side=True) as tls:
            tls.settimeout(60)
            request = b""
            while b"\r\n\r\n" not in request:  # the head, then the body it announces: all read before answering
                request += tls.recv(65536)
            head, _, body = request.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:")))
            while len(body) < length:
                body += tls.recv(65536)
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                        b"Connection: close\r\n\r\n%s" % (len(reply), reply))
            served.append(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with requests.Session() as session:
            session.verify = certfile
            session.trust_env = False  # else REQUESTS_CA_BUNDLE, where set, wins over session.verify
            llm = LlmClient(f"https://127.0.0.1:{listener.getsockname()[1]}/v1", "", "classroom", session=session)
            assert llm.chat([{"role": "user", "content": "hi"}]).text == "hello"
        assert served == [0, 1]
    finally:
        listener.close()
        thread.join(timeout=60)
