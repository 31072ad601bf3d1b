"""How many connections the classroom server holds, and what it does past that: one server serves a whole hub.

Each test runs the server in a child process allowed 64 file descriptors, so that a few dozen connections reach
its limits: it then gives a thread to 16 connections at once (server.connection_cap: a quarter of them). Before
the cap, clients sending a byte a second past the limit held every thread and descriptor, and every other client
was accepted and closed unanswered until they stopped.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import select
import signal
import socket
import ssl
import sys
import time
from contextlib import ExitStack, contextmanager

import pytest
import requests

from .conftest import PATIENCE, ServerProcess, ended_cleanly
from .serving_process import wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the server's threads in /proc")

DESCRIPTORS = 64
CAP = DESCRIPTORS // 4  # what connection_cap() gives for 64 descriptors
PER_CLIENT = CAP // 4  # what one client address may hold of them, unless it is this machine's (loopback)

LIMITED_SERVER = f"""
import os, resource, signal, threading
resource.setrlimit(resource.RLIMIT_NOFILE, ({DESCRIPTORS}, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from tinyagent.classroom.server import ClassroomServer

hoard = []

def take_every_descriptor(signum, frame):  # as a notebook kernel's own files and sockets could
    try:
        while True:
            hoard.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        print(f"hoarding {{len(hoard)}}", flush=True)

def give_them_back(signum, frame):
    while hoard:
        os.close(hoard.pop())
    print("released", flush=True)

signal.signal(signal.SIGUSR1, take_every_descriptor)
signal.signal(signal.SIGUSR2, give_them_back)
BEFORE_START
server = ClassroomServer(tls=TLS).start()
loop = next(thread for thread in threading.enumerate() if thread.name.startswith("classroom-server"))
print(f"port {{server.port}} loop {{loop.native_id}}", flush=True)
server.serve_forever()
"""

BODY = json.dumps({"model": "classroom", "messages": [{"role": "user", "content": "Hello there."}]}).encode()
REQUEST = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(BODY)) + BODY


@contextmanager
def limited_server(certificate: tuple[str, str] | None = None, before_start: str = ""):
    """The child's ServerProcess, its port and its serving loop's thread id; stopped (or killed) on the way out.
    With a (certfile, keyfile), it serves TLS; `before_start` is code the child runs before the server starts."""
    tls = ("None" if certificate is None else
           f"__import__('tinyagent.classroom.server').classroom.server.tls_context{certificate!r}")
    code = LIMITED_SERVER.replace("tls=TLS", f"tls={tls}").replace("BEFORE_START", before_start)
    with ServerProcess(code=code) as process:
        words = process.wait_for_line("port ").split()
        yield process, int(words[1]), int(words[3])
        assert process.stop(signal.SIGTERM) == 0, process.output()


def threads(process: ServerProcess) -> int:
    with open(f"/proc/{process.process.pid}/status") as status:
        return int(next(line for line in status if line.startswith("Threads:")).split()[1])


def descriptors(process: ServerProcess) -> int:
    return len(os.listdir(f"/proc/{process.process.pid}/fd"))


def wake_ups(process: ServerProcess, thread_id: int) -> int:
    """How many times the thread has gone to sleep and been woken (each select or sleep that waited)."""
    with open(f"/proc/{process.process.pid}/task/{thread_id}/status") as status:
        return int(next(line for line in status if line.startswith("voluntary_ctxt_switches:")).split()[1])


def chat(port: int) -> requests.Response:
    return requests.post(f"http://127.0.0.1:{port}/v1/chat/completions", data=BODY,
                         headers={"Content-Type": "application/json"}, timeout=PATIENCE)


def answer_to(connection: socket.socket) -> bytes:
    """Everything the server sends on the connection until it closes it."""
    connection.settimeout(PATIENCE)
    answer = b""
    while part := connection.recv(65536):
        answer += part
    return answer


def test_past_its_cap_a_request_gets_a_503_without_a_thread_and_is_served_once_room_frees():
    with limited_server() as (process, port, _), ExitStack() as held:
        before = threads(process)
        # Dribblers: each sends the start of a request line and waits (within read_timeout), holding a thread.
        dribblers = [held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE))
                     for _ in range(CAP)]
        for dribbler in dribblers:
            dribbler.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")
        wait_for(lambda: threads(process) == before + CAP, f"{CAP} threads for the dribblers")

        busy = chat(port)
        assert busy.status_code == 503, busy.text
        assert busy.headers["Retry-After"] == "1"
        error = busy.json()["error"]
        assert error["type"] == "server_error" and error["code"] == "server_busy" and error["param"] is None
        assert f"({CAP})" in error["message"] and "try again" in error["message"]

        # A client slow between its request's head and its body gets the answer to the head: the server closed
        # at once, the body that came after met a closed socket, and its reset could take the answer with it
        # ("Connection reset by peer" where the 503 was). Now the server ends its side and reads on.
        with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) as slow:
            slow.sendall(REQUEST[:-len(BODY)])
            answered = select.poll()
            answered.register(slow, select.POLLIN)
            assert answered.poll(PATIENCE * 1000)
            slow.sendall(BODY)
            assert ended_cleanly(slow)
            assert answer_to(slow).startswith(b"HTTP/1.1 503 ")

        # More dribblers, reconnecting each time they are closed, than the server has descriptors: each is
        # answered with the 503 and closed, and none gets a thread (ten at a time: each is refused as it sends).
        for _ in range(DESCRIPTORS // 8):
            with ExitStack() as round_:
                more = [round_.enter_context(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE))
                        for _ in range(10)]
                for connection in more:
                    connection.sendall(b"P")
                assert all(answer_to(connection).startswith(b"HTTP/1.1 503 ") for connection in more)
        assert threads(process) == before + CAP

        held.close()  # the dribblers give up: their threads end, and a new request is served again
        wait_for(lambda: chat(port).status_code == 200, "a request served once the dribblers are gone")


def test_refused_connections_their_clients_keep_open_hold_few_descriptors_and_not_for_long():
    # After its answer a refused connection is read until the client closes it (ended_cleanly above); clients that
    # never close theirs may keep at most CAP of them open, each for REFUSAL_SECONDS at most.
    from tinyagent.classroom.server import MAX_BODY_BYTES, REFUSAL_SECONDS

    with limited_server() as (process, port, _), ExitStack() as held:
        before = threads(process)
        for _ in range(CAP):
            held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)).sendall(b"P")
        wait_for(lambda: threads(process) == before + CAP, f"{CAP} threads for the dribblers")
        served = descriptors(process)

        refused_at = time.monotonic()
        for _ in range(3 * CAP):
            kept = held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE))
            kept.sendall(REQUEST)
            assert answer_to(kept).startswith(b"HTTP/1.1 503 ")  # answered, and kept open by its client
            assert descriptors(process) <= served + CAP
        wait_for(lambda: descriptors(process) == served, "the refused connections closed",
                 patience=REFUSAL_SECONDS + PATIENCE)
        assert time.monotonic() - refused_at >= REFUSAL_SECONDS  # not closed before their time was up
        assert chat(port).status_code == 503

        # A client that sends on and on after its answer is read no further than a request's most, MAX_BODY_BYTES:
        # then closed (a reset, its bytes unread), long before its time is up.
        with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) as flooding:
            flooding.sendall(REQUEST)
            assert answer_to(flooding).startswith(b"HTTP/1.1 503 ")
            sent, chunk = 0, b"x" * 65536
            # BrokenPipeError or ConnectionResetError once the server has closed it; well before 16 times as much
            # (what the two sockets buffer comes on top: the kernel may let a receiving socket's grow to 32 MiB).
            with pytest.raises((BrokenPipeError, ConnectionResetError)):  # not a timeout: it was read, then closed
                while sent < 16 * MAX_BODY_BYTES:
                    sent += flooding.send(chunk)
        assert sent >= MAX_BODY_BYTES, sent


def test_connections_left_idle_between_requests_make_room_for_new_requests():
    # A script that opens a Session for each call and never closes it: each connection is kept alive, idle, after
    # its answer; more of them than the server has descriptors.
    with limited_server() as (process, port, _), ExitStack() as sessions:
        before = threads(process)
        for _ in range(DESCRIPTORS + 6):
            session = sessions.enter_context(requests.Session())
            answer = session.post(f"http://127.0.0.1:{port}/v1/chat/completions", data=BODY,
                                  headers={"Content-Type": "application/json"}, timeout=PATIENCE)
            assert answer.status_code == 200
        assert chat(port).status_code == 200
        wait_for(lambda: threads(process) <= before + CAP, f"at most {CAP} threads for the idle connections")


def test_out_of_descriptors_the_server_waits_without_spinning_and_serves_when_they_come_back():
    with limited_server() as (process, port, loop), socket.socket() as client:
        process.process.send_signal(signal.SIGUSR1)
        process.wait_for_line("hoarding")
        # The kernel completes the connection on its own; the server needs a descriptor to accept it.
        client.settimeout(PATIENCE)
        client.connect(("127.0.0.1", port))
        client.sendall(REQUEST)
        woken = wake_ups(process, loop)
        time.sleep(1.0)
        woken = wake_ups(process, loop) - woken
        # Pausing to accept again, it wakes about 10 times a second; one that retried every 10 ms woke 100 times.
        assert woken < 40, f"the serving loop woke {woken} times in a second while out of descriptors"
        process.process.send_signal(signal.SIGUSR2)
        process.wait_for_line("released")
        assert answer_to(client).startswith(b"HTTP/1.1 200 ")
        assert chat(port).status_code == 200


STARTED_SHORT_OF_DESCRIPTORS = f"""
import os, resource, time
import requests
resource.setrlimit(resource.RLIMIT_NOFILE, ({DESCRIPTORS}, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from tinyagent.classroom.server import ClassroomServer

ClassroomServer().stop()  # what it imports on first use, imported now
for free in range(8):
    hoard = []
    try:
        while True:
            hoard.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    for _ in range(free):
        os.close(hoard.pop())
    try:
        server = ClassroomServer().start()
    except Exception as error:
        print(free, "refused:", type(error).__name__, error, flush=True)
    else:
        time.sleep(0.2)  # the serving thread under way, still short of descriptors
        while hoard:
            os.close(hoard.pop())
        try:  # (not `with server`, which would start a thread again if the first had died)
            answer = requests.post(f"http://127.0.0.1:{{server.port}}/v1/chat/completions", timeout={PATIENCE},
                                   json={{"model": "classroom", "messages": [{{"role": "user", "content": "Hi"}}]}})
            print(free, "served:", answer.status_code, flush=True)
        finally:
            server.stop()
    while hoard:
        os.close(hoard.pop())
"""


def test_started_short_of_descriptors_it_says_so_or_serves():
    # The serving loop made its selector in its own thread: started with a descriptor or two left (a kernel's files
    # take them), the loop died there ("Too many open files", on stderr) and the server never answered.
    with ServerProcess(code=STARTED_SHORT_OF_DESCRIPTORS) as process:
        process.wait_for_line("7 ")
        assert process.process.wait(timeout=PATIENCE) == 0, process.output()
        lines = process.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [str(free) for free in range(8)], process.output()
    for line in lines:
        served = line.split(" ", 1)[1]
        assert served == "served: 200" or served == (
            "refused: ServerAddressError cannot listen on 127.0.0.1:0: this program has no file descriptor left to "
            "serve with (too many open files); close some, or raise its limit (ulimit -n)"), line
    assert "refused" in lines[0] and "served" in lines[-1]


def test_past_its_cap_over_tls_a_request_still_gets_the_503(tmp_path):
    # Over TLS the 503 needs a handshake, which the serving loop never waits for: a few threads of their own give
    # it. Closed unanswered, as it first was, LlmClient took the server for a broken one ("could not reach ...
    # (SSLError)") instead of waiting and asking again.
    from tests.test_classroom_tls import make_certificate

    certfile, keyfile = make_certificate(tmp_path, "capped")
    context = ssl.create_default_context(cafile=certfile)
    with limited_server((certfile, keyfile)) as (process, port, _), ExitStack() as held:
        before = threads(process)
        for _ in range(CAP):  # each holds a thread: its handshake done, its request begun and never finished
            dribbler = held.enter_context(context.wrap_socket(
                socket.create_connection(("127.0.0.1", port), timeout=PATIENCE), server_hostname="127.0.0.1"))
            dribbler.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")
        wait_for(lambda: threads(process) == before + CAP, f"{CAP} threads for the dribblers")

        busy = requests.post(f"https://127.0.0.1:{port}/v1/chat/completions", data=BODY, verify=certfile,
                             headers={"Content-Type": "application/json"}, timeout=PATIENCE)
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "1", busy.text
        assert busy.json()["error"]["code"] == "server_busy"

        # A request in two records, as urllib3 sends a body after its head. The server read only the first before
        # it answered, then closed with the body unread, which sent a reset: a client that came to read a moment
        # later found nothing (requests, now and then on a loaded machine: "Remote end closed connection without
        # response"). Now it ends its side after the answer (a FIN, no reset) and reads on until the client closes.
        for _ in range(3):
            with context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE),
                                     server_hostname="127.0.0.1") as client:
                client.sendall(REQUEST[:-len(BODY)])
                client.sendall(BODY)
                assert ended_cleanly(client)
                assert answer_to(client).startswith(b"HTTP/1.1 503 ")


def lan_address() -> str:
    """An address of this machine that is not loopback: connecting from it, a test is a machine on the LAN."""
    from tinyagent.hosting.address import this_machine_address

    address = this_machine_address()
    try:
        if not ipaddress.ip_address(address).is_loopback:
            return address
    except ValueError:
        pass
    pytest.skip(f"this machine has no address but loopback to connect from ({address})")


def test_one_client_address_holds_at_most_a_quarter_of_the_threads_and_this_machine_is_not_capped():
    # One address took every thread, each connection dripping its body, and every other learner got the 503 for
    # as long as it went on. Loopback is not capped: behind the hub, every learner's request comes from the proxy.
    address = lan_address()
    with limited_server() as (process, port, _), ExitStack() as held:
        def from_the_lan() -> socket.socket:
            return held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE,
                                                               source_address=(address, 0)))

        before = threads(process)
        for _ in range(PER_CLIENT):
            from_the_lan().sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        wait_for(lambda: threads(process) == before + PER_CLIENT, f"{PER_CLIENT} threads for one client")

        one_more = from_the_lan()
        one_more.sendall(REQUEST)
        head, _, body = answer_to(one_more).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 429 ") and b"Retry-After: 1" in head, head
        error = json.loads(body)["error"]
        assert error["code"] == "too_many_connections" and f"{PER_CLIENT} connections" in error["message"]
        assert threads(process) == before + PER_CLIENT  # refused without a thread

        for _ in range(PER_CLIENT + 2):  # this machine: more than one LAN client may hold, and still served
            loopback = held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE))
            loopback.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        wait_for(lambda: threads(process) == before + 2 * PER_CLIENT + 2, "threads for this machine's connections")
        assert chat(port).status_code == 200

        held.close()  # the client lets go: it is served again
        def served_from_the_lan() -> bool:
            with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE, source_address=(address, 0)) as again:
                again.sendall(REQUEST)
                return answer_to(again).startswith(b"HTTP/1.1 200 ")
        wait_for(served_from_the_lan, "the client served once its connections are gone")


# Each connection's thread, once its answer has gone out, waits a minute before it looks for the next request: as a
# thread the loaded machine has not run yet does.
SLOW_AFTER_ANSWERS = """
import time
from tinyagent.classroom import server as classroom_server
answer_one = classroom_server._Handler.handle_one_request
def answer_then_wait(self):
    answer_one(self)
    time.sleep(60)
classroom_server._Handler.handle_one_request = answer_then_wait
"""


@pytest.mark.parametrize("threads_after_answers", ["prompt", "slow"])
def test_a_client_at_its_cap_makes_room_with_its_own_idle_connections(threads_after_answers):
    # A script on a learner's machine that opens a connection per call and never closes one (a Session each time)
    # is served: each new one closes one of its own, idle between two requests, as the server does for all. A
    # connection whose answer is out is idle, though its thread has not got back to wait for the next request: on a
    # loaded machine the script's next connection came first and got a 429 (the threads made slow here).
    address = lan_address()
    slow = SLOW_AFTER_ANSWERS if threads_after_answers == "slow" else ""
    with limited_server(before_start=slow) as (_, port, _), ExitStack() as kept:
        for _ in range(PER_CLIENT + 3):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE, source_address=(address, 0))
            kept.callback(connection.close)
            connection.request("POST", "/v1/chat/completions", BODY, {"Content-Type": "application/json"})
            answer = connection.getresponse()
            assert answer.status == 200, answer.read()
            answer.read()
