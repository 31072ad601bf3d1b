"""Events are frozen dataclasses whose repr, == and hash come from Event once (events.py's @event): they must
behave exactly as the ones @dataclass(frozen=True) would have generated for each kind."""

from __future__ import annotations

import dataclasses

import pytest

from tinyagent.events import EVENT_KINDS, Final, LlmCall, Observation, ToolCall


def test_every_event_kind_is_a_frozen_dataclass():
    for cls in EVENT_KINDS.values():
        assert dataclasses.is_dataclass(cls)
        assert cls.__dataclass_params__.frozen, cls.__name__
        event = cls(step=1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            event.step = 2


def test_repr_reads_as_the_generated_one_with_the_agent_only_when_there_is_one():
    call = ToolCall(step=2, name="queryOrder", input="88231")
    shown = ", ".join(f"{f.name}={getattr(call, f.name)!r}" for f in dataclasses.fields(call) if f.name != "agent")
    assert repr(call) == f"ToolCall({shown})" == "ToolCall(step=2, name='queryOrder', input='88231')"
    named = ToolCall(step=2, name="queryOrder", input="88231", agent="refunds")
    assert repr(named) == "ToolCall(step=2, agent='refunds', name='queryOrder', input='88231')"
    # a field kept out of repr stays out, as dataclass leaves it out: a call's latency varies run to run
    call = LlmCall(step=1, text="x", latency_s=0.25, model="classroom")
    assert "latency_s" not in repr(call) and repr(call).startswith("LlmCall(step=1, messages=(), text='x'")


def test_equal_when_same_kind_and_fields_and_hashed_alike():
    a, b = Final(step=3, answer="好的"), Final(step=3, answer="好的")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert Final(step=3, answer="好的") != Final(step=4, answer="好的")
    assert Final(step=3, answer="x") != Final(step=3, answer="y")
    # different kinds are never equal, even with the same field values
    assert ToolCall(step=1) != Observation(step=1)
    assert Final(step=1).__eq__("Final(step=1)") is NotImplemented


def test_replace_and_asdict_still_work():
    call = ToolCall(step=1, name="queryOrder", input="88231")
    moved = dataclasses.replace(call, step=5)
    assert moved.step == 5 and moved.name == "queryOrder" and moved != call
    assert dataclasses.asdict(call)["input"] == "88231"
    assert call.to_dict()["type"] == ToolCall.kind


def test_every_event_kind_holds_only_plain_values_so_to_dict_needs_no_deep_copy():
    # Event.to_dict reads the fields as they are (no asdict): a field holding a dataclass would reach JSON as an
    # object json cannot write. Every kind any lesson defines, loaded first.
    import importlib
    import re
    from dataclasses import fields

    from tinyagent.events import EVENT_KINDS

    for module in ("architectures.handoffs", "architectures.skills", "architectures.tree_search", "protocols.streaming",
                   "robustness.stop_rules", "serving.edits", "toolkit.confirmation"):
        importlib.import_module(f"tinyagent.{module}")  # each adds its lesson's event kinds to EVENT_KINDS

    plain = {"str", "int", "float", "bool", "dict", "tuple", "list", "None"}
    assert len(EVENT_KINDS) >= 17
    for kind, cls in EVENT_KINDS.items():
        for f in fields(cls):
            names = set(re.findall(r"[A-Za-z_]\w*", str(f.type)))
            assert names <= plain, f"{kind}.{f.name}: {f.type}"
