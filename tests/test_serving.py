"""Lesson 19's parts in-process: the service's runs (threads, sessions, stopping), and ServiceServer's life."""

from __future__ import annotations

import socket
import threading

import pytest

pytest.importorskip("starlette")

from tinyagent import LlmClient  # after the skip: these tests need the serve extra
from tinyagent.events import Observation
from tinyagent.hosting.address import ServerAddressError
from tinyagent.protocols.streaming import ReplyDelta
from tinyagent.serving import AgentService, RunCancelled, ServiceConfig, ServiceServer

LOGISTICS = "帮我看看订单 88231 的快递到哪了。"


def config(**changes) -> ServiceConfig:
    return ServiceConfig(shop_db=":memory:", session_store=":memory:", now="2026-06-30T19:05:23", **changes)


@pytest.fixture
def service():
    running = AgentService(config(), llm=LlmClient.classroom)
    yield running
    running.close()


def test_a_run_reports_every_event_as_it_happens_and_stores_its_turn(service):
    seen = []
    outcome = service.submit(LOGISTICS, None, stream=True, on_event=seen.append).result(60)
    assert outcome.result.reason == "final_answer" and outcome.turn == 1
    assert [e.kind for e in seen if not isinstance(e, ReplyDelta)] == [e.kind for e in outcome.result.trace
                                                                       if not isinstance(e, ReplyDelta)]
    assert any(isinstance(e, ReplyDelta) for e in seen)  # streamed: the pieces of each reply come first
    assert [t.question for t in service.store.turns(outcome.session_id)] == [LOGISTICS]
    assert service.counts == {"running": 0, "finished": 1, "cancelled": 0, "failed": 0}


def test_a_session_id_continues_the_conversation(service):
    first = service.submit(LOGISTICS, None).result(60)
    second = service.submit("那快递现在到哪了？", first.session_id).result(60)
    assert second.session_id == first.session_id and second.turn == 2
    assert service.session_exists(first.session_id) and not service.session_exists("never-issued")


def test_a_cancelled_run_stops_at_the_next_event_and_stores_nothing(service):
    cancelled = threading.Event()
    seen = []

    def on_event(event):
        seen.append(event)
        cancelled.set()  # the client goes away as soon as the first event arrives

    future = service.submit(LOGISTICS, "left-early", stream=True, on_event=on_event, cancelled=cancelled)
    with pytest.raises(RunCancelled):
        future.result(60)
    assert len(seen) == 1 and isinstance(seen[0], ReplyDelta)
    assert service.store.turns("left-early") == []
    assert service.counts["cancelled"] == 1 and service.counts["running"] == 0


def test_a_failing_tool_is_an_observation_not_an_error():
    from tinyagent.checks import registry_with_a_broken_courier

    broken = AgentService(config(), llm=LlmClient.classroom, tools=registry_with_a_broken_courier)
    try:
        outcome = broken.submit(LOGISTICS, None).result(60)
    finally:
        broken.close()
    failed = [o for o in outcome.result.trace.of_type(Observation) if o.error]
    assert failed and "ConnectionError" in failed[0].text
    assert outcome.result.trace.end.kind in ("final", "stopped") and broken.counts["finished"] == 1


def test_the_server_binds_first_so_its_port_is_known_and_stop_twice_is_fine():
    server = ServiceServer(config(), llm=LlmClient.classroom)
    assert server.port > 0 and repr(server).endswith("not started)")
    with server:
        assert server.running
    assert not server.running and repr(server).endswith("stopped)")
    server.stop()
    with pytest.raises(RuntimeError, match="create a new one"):
        server.start()


def test_a_connection_to_the_service_has_nagle_off():
    """uvicorn serves the socket with asyncio, which turns Nagle's algorithm off on the connections it accepts only
    when the socket says TCP. With it on, each request over a kept-alive connection waited 40 ms for the client's
    delayed ACK, between the response's headers and its body."""
    import asyncio

    from tinyagent.hosting.address import listening_socket

    async def accept_one() -> int:
        accepted: asyncio.Future = asyncio.get_running_loop().create_future()

        class Protocol(asyncio.Protocol):
            def connection_made(self, transport):
                accepted.set_result(transport.get_extra_info("socket"))

        server = await asyncio.get_running_loop().create_server(Protocol, sock=listening_socket("127.0.0.1", 0))
        async with server:
            _, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
            nodelay = (await accepted).getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            writer.close()
        return nodelay

    assert asyncio.run(accept_one()) == 1


def test_a_port_in_use_is_one_sentence():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ServerAddressError, match="already in use"):
            ServiceServer(config(), port=taken.getsockname()[1], llm=LlmClient.classroom)
    with pytest.raises(ServerAddressError, match="from 0 to 65535"):
        ServiceServer(config(), port=70000, llm=LlmClient.classroom)


def test_a_store_that_fails_after_the_run_still_gives_the_answer(service):
    from tinyagent.memory.session_store import SessionStoreError

    class Failing:
        def __init__(self, store):
            self.store = store

        def __getattr__(self, name):
            return getattr(self.store, name)

        def append_turn(self, session_id, turn):
            raise SessionStoreError("PostgreSQL at postgresql://tiny@db/x failed: the connection is lost")

    service.store = Failing(service.store)
    outcome = service.submit(LOGISTICS, None).result(60)
    # The tools have run: the answer comes back, with why it was not kept, rather than an error.
    assert outcome.result.reason == "final_answer" and outcome.turn is None
    assert outcome.store_error.startswith("PostgreSQL at postgresql://tiny@db/x failed")


def test_the_openapi_document_is_valid_and_describes_every_route(service):
    from openapi_spec_validator import validate

    from tinyagent.serving import create_app
    from tinyagent.serving.openapi import openapi_document

    document = openapi_document()
    validate(document)  # raises with what is wrong
    app = create_app(service)
    routes = getattr(app, "app", app).routes  # without a key the app is wrapped in its host check
    served = {(route.path, method.lower()) for route in routes for method in route.methods if method != "HEAD"}
    described = {(path, method) for path, methods in document["paths"].items() for method in methods}
    assert served == described
