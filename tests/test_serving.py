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
    # and the service's own connections: a kept-alive connection of a running ServiceServer, read on its side
    with ServiceServer(config(), llm=LlmClient.classroom) as server, socket.create_connection(("127.0.0.1", server.port)) as client:
        client.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert client.recv(65536).startswith(b"HTTP/1.1 200")  # answered: the connection is the server's, and kept
        connections = server._server.server_state.connections
        assert [c.transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for c in connections
                ] == [1]


def test_a_port_in_use_is_one_sentence():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ServerAddressError, match="already in use"):
            ServiceServer(config(), port=taken.getsockname()[1], llm=LlmClient.classroom)
    with pytest.raises(ServerAddressError, match="from 0 to 65535"):
        ServiceServer(config(), port=70000, llm=LlmClient.classroom)


@pytest.mark.parametrize("said, store_error", [
    ("PostgreSQL at postgresql://tiny@db/x failed: the connection is lost", "PostgreSQL at postgresql://tiny@db/x failed"),
    ("", "SessionStoreError"),  # a store of one's own may say nothing: its first line was an IndexError, not the answer
])
def test_a_store_that_fails_after_the_run_still_gives_the_answer(service, said, store_error):
    from tinyagent.memory.session_store import SessionStoreError

    class Failing:
        def __init__(self, store):
            self.store = store

        def __getattr__(self, name):
            return getattr(self.store, name)

        def append_turn(self, session_id, turn):
            raise SessionStoreError(said)

    service.store = Failing(service.store)
    outcome = service.submit(LOGISTICS, None).result(60)
    # The tools have run: the answer comes back, with why it was not kept, rather than an error.
    assert outcome.result.reason == "final_answer" and outcome.turn is None
    assert outcome.store_error.startswith(store_error)


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


# -- a run that ends without its own answer after a refund was written still says so --------------------------------
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"


class _RefundThenTrouble:
    """A model that asks for the refund at once, then fails (or has the run stopped) at its next call."""

    model = "scripted"

    def __init__(self, trouble):
        self.trouble, self.calls = trouble, 0

    def chat(self, messages, **options):
        from tinyagent import ChatResult

        self.calls += 1
        if self.calls == 1:
            return ChatResult('Thought: refund it.\nAction: applyRefund\nAction Input: {"orderId": "88231", '
                              '"reason": "不回充"}\n', "stop", {})
        return self.trouble()

    def close(self):
        pass


def test_a_model_that_fails_after_the_refund_leaves_an_answer_that_says_it():
    # the answer was the loop's "the model cannot be reached", and the session's next turn denied the refund
    from tinyagent.errors import LlmConnectionError

    def unreachable():
        raise LlmConnectionError("the model stopped answering")

    service = AgentService(config(auto_approve=True), llm=lambda: _RefundThenTrouble(unreachable))
    try:
        outcome = service.submit(REFUND, None).result(60)
        refund_id = service.shop.refunds()[0]["refundId"]
        assert outcome.result.reason == "llm_error"
        assert "已经完成了以下操作" in outcome.result.answer and refund_id in outcome.result.answer
        assert refund_id in service.store.turns(outcome.session_id)[0].answer
    finally:
        service.close()


def test_a_run_stopped_after_the_refund_keeps_a_turn_and_names_the_refund():
    # the client went away after the yes: the refund stood, and the session kept nothing of it
    cancelled = threading.Event()

    def client_leaves():
        from tinyagent import ChatResult

        cancelled.set()
        return ChatResult("Thought: done.\nFinal Answer: 已退款。", "stop", {})

    service = AgentService(config(auto_approve=True), llm=lambda: _RefundThenTrouble(client_leaves))
    try:
        future = service.submit(REFUND, "s1", cancelled=cancelled)
        with pytest.raises(RunCancelled) as stopped:
            future.result(60)
        refund_id = service.shop.refunds()[0]["refundId"]
        assert len(stopped.value.changes) == 1 and refund_id in stopped.value.changes[0]
        assert stopped.value.turn == 1 and refund_id in stopped.value.said("stopped")
        [turn] = service.store.turns("s1")
        assert turn.reason == "cancelled" and turn.tools == ("applyRefund",) and refund_id in turn.answer
    finally:
        service.close()


def test_a_run_stopped_before_any_change_stores_nothing_and_says_nothing_was_done(service):
    cancelled = threading.Event()
    cancelled.set()
    with pytest.raises(RunCancelled) as stopped:
        service.submit(LOGISTICS, "s2", cancelled=cancelled).result(60)
    assert stopped.value.changes == [] and stopped.value.turn is None
    assert service.store.turns("s2") == []


def test_what_a_client_is_told_of_a_stopped_run_names_its_changes_or_says_there_were_none():
    from tinyagent.serving.app import stopped_message

    nothing = RunCancelled()
    assert stopped_message(nothing, "the service is stopping") == \
        "the service is stopping: nothing was done; ask again in a moment"
    refunded = RunCancelled(['applyRefund {"orderId": "88231"} -> {"refundId": "RF202606300001"}'], "en")
    refunded.turn = 3
    said = stopped_message(refunded, "the service is stopping")
    assert said.startswith("the service is stopping (kept as turn 3 of the session)\nBefore the run stopped")
    assert "RF202606300001" in said and "nothing was done" not in said


def test_a_runs_time_limit_allows_a_persons_answer_for_every_round_that_may_ask_one():
    # one approval's time only: a run asking for two refunds got a 504 while the second waited for its yes
    assert config(timeout_s=60, approval_timeout_s=35, max_steps=4).longest_run_s == 60 + 4 * 35
    assert config(timeout_s=60, approval_timeout_s=35, auto_approve=True).longest_run_s == 60


def test_a_specialists_declined_refund_is_no_change_of_the_teams_run():
    # in a team's trace a specialist's round 1 sits inside the triage's: its declined applyRefund was paired with
    # the triage's handoff result, and a stopped run said a refund had been made
    from tinyagent.events import ToolCall
    from tinyagent.memory.run_changes import changes_made
    from tinyagent.trace import Trace

    declined = '{"error":"applyRefund was not run: a person declined it"}'
    trace = Trace([ToolCall(1, "handOffToRefunds", "退款", agent="triage"),
                   ToolCall(1, "applyRefund", '{"orderId": "88231"}', agent="refunds"),
                   Observation(1, declined, error=True, agent="refunds"),
                   Observation(1, '{"agent": "refunds", "answer": "not approved"}', agent="triage")])
    assert changes_made(trace, lambda name: name == "applyRefund") == []
    written = Trace([*trace.events[:2], Observation(1, '{"refundId": "RF202606300001"}', agent="refunds")])
    assert changes_made(written, lambda name: name == "applyRefund") == [
        'applyRefund {"orderId": "88231"} -> {"refundId": "RF202606300001"}']



def test_each_client_may_have_only_its_share_of_requests_waiting():
    from tinyagent.parser import Action
    from tinyagent.serving.approvals import Approvals
    from tinyagent.toolkit.confirmation import ConfirmationGate

    approvals = Approvals(per_client=2)
    gates: dict[str, ConfirmationGate] = {}

    def ask(run_id: str, client: str):
        """Run `run_id` of `client` asks for a refund (its gate opens a request, as the loop does)."""
        if run_id not in gates:
            gates[run_id] = ConfirmationGate()
            approvals.add(run_id, gates[run_id], "refund 88231", client)
        request = gates[run_id].open(Action("applyRefund", '{"orderId":"88231"}'), 1)
        approvals.asked(run_id, request.id)
        return gates[run_id], request

    first = [ask(f"a{n}", "192.0.2.7") for n in range(2)]
    assert all(gate.pending == [request] for gate, request in first)  # its share: both wait
    gate, third = ask("a2", "192.0.2.7")
    decision = gate.decide(third)  # ended at once, not after the gate's time limit
    assert (decision.outcome, decision.by) == ("error", "the service") and "2 refunds" in decision.detail
    # Another client has a share of its own; a run started inside the process ("") is not counted.
    gate, other = ask("b0", "192.0.2.8")
    assert gate.pending == [other]
    assert all(ask(f"own{n}", "")[0].pending for n in range(3))
    # A second request of a run already waiting counts too; once one of the client's requests is answered, a new
    # one may wait again.
    gate, fourth = ask("a0", "192.0.2.7")
    assert gate.decide(fourth).outcome == "error"
    assert approvals.answer(f"a0.{first[0][1].id}", False).outcome == "declined"
    gate, fifth = ask("a3", "192.0.2.7")
    assert gate.pending == [fifth]
    assert sorted(p["approval_id"] for p in approvals.pending() if p["approval_id"][0] == "a") == [
        f"a1.{first[1][1].id}", f"a3.{fifth.id}"]


def test_a_clients_share_of_waiting_refunds_is_its_share_of_the_connections():
    assert ServiceConfig().approvals_per_client == 16  # 64 threads × 128 / 512 connections
    assert ServiceConfig(max_connections=256, max_connections_per_client=8).approvals_per_client == 2
    assert ServiceConfig(max_connections=512, max_connections_per_client=512).approvals_per_client == 64  # a proxy
    assert ServiceConfig(max_connections=1000, max_connections_per_client=1).approvals_per_client == 1


def test_a_closing_reply_at_the_cap_that_leaves_the_refund_out_is_followed_by_it():
    # The service's runs end at max_steps with one last call for the model's best answer (lesson 10's StopRules);
    # a reply that does not mention the refund written before it must still not hide it, here or in the turn kept.
    from tinyagent import ChatResult

    replies = ['Thought: refund\nAction: applyRefund\nAction Input: {"orderId": "88231", "reason": "x"}',
               'Thought: look\nAction: queryOrder\nAction Input: {"orderId": "88231"}']

    class Scripted:
        model = "scripted"

        def chat(self, messages, **options):
            return ChatResult(replies.pop(0) if replies else "Thought: done\nFinal Answer: fine", "stop")

        def close(self):
            pass

    running = AgentService(config(auto_approve=True, max_steps=2), llm=Scripted)
    try:
        outcome = running.submit("请给订单 88231 退款", None).result(60)
        refund_id = running.shop.refunds()[0]["refundId"]
        answer = outcome.result.answer
        assert outcome.result.reason == "max_steps" and answer.startswith("fine\n这次运行做了以下更改：\n- applyRefund")
        assert refund_id in answer and answer.count("applyRefund") == 1
        assert running.store.turns(outcome.session_id)[-1].answer == answer
    finally:
        running.close()
