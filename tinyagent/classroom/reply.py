"""What the classroom model decides to say, before the server applies the API's rules to it.

The model (`behaviour.py`) turns a conversation into a `Reply`: the whole text it would "type" if
nothing stopped it, or the tool calls it makes. The server (`server.py`) then does what a real
inference server does to that text: cut it at a stop string, cut it at `max_tokens`, stream it, count
its tokens. Keeping the two apart means every API rule is tested once, whatever the model says.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ToolCallRequest:
    """One native function call: the tool's name and its arguments (JSON-serialisable)."""

    name: str
    arguments: dict


@dataclass(frozen=True)
class Reply:
    """The model's next message, uncut.

    text:          everything the model would write, as an autoregressive model does without a stop
                   sequence (for text ReAct this may run on through invented Observations)
    tool_calls:    native function calls (only when the request offered `tools`)
    ignores_stop:  True for the variant that behaves like providers that ignore `stop`
    splits_stop:   True for the variant that ignores `stop` and, streaming, splits every stop string
                   across two chunks (lesson 14), so a client must find it in pieces
    refusal:       why the model cannot answer in the shape asked for (structured outputs: a required
                   field nothing in the conversation says); `text` is None then
    """

    text: str | None
    tool_calls: tuple[ToolCallRequest, ...] = field(default_factory=tuple)
    ignores_stop: bool = False
    splits_stop: bool = False
    refusal: str | None = None
