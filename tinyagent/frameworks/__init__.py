"""Lesson 20: the shop agent in other people's frameworks, against any OpenAI-compatible model.

    from tinyagent.frameworks import run_framework, FRAMEWORKS
    run = run_framework("langchain", "Order 88231 won't charge. Please refund it.", base_url=url)
    run.answer, run.model_calls, run.tokens, run.tool_uses, run.calls[0].body    # what it did, as sent

One small module per framework builds that framework's agent from the same parts: the shop's five tools as
typed functions (shop_functions.py) and an HTTP client that records every request and the usage that came
back (wire.py). `import tinyagent` loads none of this, and this package loads a framework only when it runs.

    key               module                      the framework's agent
    tinyagent         tinyagent_agent.py          the course's ReActAgent (06), for comparison
    tinyagent-function tinyagent_agent.py         the course's FunctionCallingAgent (09)
    langchain         langchain_agent.py          langchain.agents.create_agent (LangGraph)
    langchain-classic langchain_classic_agent.py  langchain_classic create_react_agent + AgentExecutor
    llama-index       llama_index_agent.py        llama_index FunctionAgent
    llama-index-react llama_index_agent.py        llama_index ReActAgent
    smolagents        smolagents_agent.py         smolagents ToolCallingAgent
    pydantic-ai       pydantic_ai_agent.py        pydantic_ai Agent
    agents-sdk        agents_sdk_agent.py         agents Agent + Runner (chat completions)

suite.py runs lesson 18's evaluation through any of them, graded by lesson 18's own checks.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from tinyagent.clock import fixed_clock
from tinyagent.errors import named_first_line
from tinyagent.evaluation.grading import ToolUse
from tinyagent.frameworks.setup import Setup
from tinyagent.frameworks.shop_functions import ToolFailed, ToolLog, in_asked_order
from tinyagent.frameworks.wire import Wire, WireCall
from tinyagent.protocols.protocol_comparison import COURSE_NOW
from tinyagent.shop import Shop, shop_registry

# key -> (module, its run function): the order of the lesson's tables
FRAMEWORKS: dict[str, tuple[str, str]] = {
    "tinyagent": ("tinyagent_agent", "run"),
    "tinyagent-function": ("tinyagent_agent", "run_function"),
    "langchain": ("langchain_agent", "run"),
    "langchain-classic": ("langchain_classic_agent", "run"),
    "llama-index": ("llama_index_agent", "run"),
    "llama-index-react": ("llama_index_agent", "run_react"),
    "smolagents": ("smolagents_agent", "run"),
    "pydantic-ai": ("pydantic_ai_agent", "run"),
    "agents-sdk": ("agents_sdk_agent", "run"),
}
# the package each one needs, for a message that says what to install
PACKAGES = {"tinyagent": "tinyagent", "tinyagent-function": "tinyagent", "langchain": "langchain",
            "langchain-classic": "langchain_classic", "llama-index": "llama_index", "llama-index-react": "llama_index",
            "smolagents": "smolagents", "pydantic-ai": "pydantic_ai", "agents-sdk": "agents"}


@dataclass
class FrameworkRun:
    """One request through one framework: its answer (None if it raised), and what went over the wire.

    reason says how the run ended, in lesson 18's words, where the framework says so: tinyagent's own end reason
    ("max_steps", "llm_error", ... as lesson 18's evaluate reads the same run), and "max_steps" or "final_answer"
    from langchain-classic and smolagents, which hand back text at their step cap too (a stop sentence, or one
    last reply). The others raise at their cap, so a run of theirs with an answer ended on it: reason None."""

    framework: str
    question: str
    answer: str | None
    error: str | None = None
    calls: list[WireCall] = field(default_factory=list)
    tool_uses: list[ToolUse] = field(default_factory=list)
    refunds: list[dict] = field(default_factory=list)
    reason: str | None = None

    @property
    def model_calls(self) -> int:
        return len(self.calls)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def usage_known(self) -> bool:
        """Whether every reply carried its usage (a streamed one without include_usage does not)."""
        return bool(self.calls) and all(c.usage_returned for c in self.calls)

    @property
    def first_request_size(self) -> int:
        """Bytes of the first request's JSON body: the system prompt, the tool list, the question."""
        return self.calls[0].size if self.calls else 0


def endpoint(settings: Any) -> dict[str, str]:
    """run_framework's base_url, model and api_key for the configured model (`load_settings()`)."""
    url = settings.api_url
    for tail in ("/chat/completions", "/responses"):
        url = url.removesuffix(tail)
    return {"base_url": url, "model": settings.model, "api_key": settings.api_key or "none"}


def framework_name(key: str) -> str:
    """The framework's own name for its agent, e.g. "LangChain create_agent"."""
    check_key(key)
    names = {"llama-index-react": "LlamaIndex ReActAgent", "tinyagent-function": "tinyagent FunctionCallingAgent"}
    return names.get(key) or _module(key).NAME


def available(key: str) -> bool:
    """Whether the framework is installed (the `frameworks` extra)."""
    check_key(key)
    return importlib.util.find_spec(PACKAGES[key]) is not None


def check_key(key: str) -> None:
    """A ValueError naming the keys there are, for a key that is none of them."""
    if key not in FRAMEWORKS:
        raise ValueError(f"no framework {key!r}: choose one of {', '.join(FRAMEWORKS)}")


def run_framework(key: str, question: str, *, base_url: str, model: str = "classroom", api_key: str = "none",
                  shop: Shop | None = None, now: str = COURSE_NOW, max_steps: int = 8, timeout: float = 60,
                  max_tokens: int | None = None, tool_errors: str = "return", **options: Any) -> FrameworkRun:
    """Ask `question` through the framework `key` (see FRAMEWORKS) with the shop's real tools.

    The shop is a fresh in-memory one on the course's day unless given. A framework that raises (an
    iteration limit, a reply it cannot read) gives a run with `error` set and `answer` None: a real model's
    failure is a result to look at, not a traceback. max_tokens caps each reply (None: the framework's own
    default, which is no cap for the other frameworks; tinyagent's client sends 512); tool_errors="raise" makes a
    failing shop tool raise ToolFailed instead of returning its error text, to see what the framework does with
    it (tinyagent's own loops run the registry, which always returns the error as an Observation). Options go
    to the framework's run function (langchain-classic: handle_parsing_errors; agents-sdk: responses).
    """
    if not available(key):
        raise ImportError(f'{PACKAGES[key]} is not installed: pip install -e ".[frameworks]"')
    if tool_errors not in ("return", "raise"):
        raise ValueError(f"tool_errors must be 'return' or 'raise', got {tool_errors!r}")
    clock = fixed_clock(now)
    own = shop is None
    shop = Shop(":memory:", clock=clock) if own else shop
    setup = Setup(base_url, model, api_key, shop_registry(shop, clock), max_steps=max_steps, timeout=timeout,
                  max_tokens=max_tokens, wire=Wire(), tool_log=ToolLog(raise_errors=tool_errors == "raise"))
    function = FRAMEWORKS[key][1]
    answer, error = None, None
    try:
        answer = getattr(_module(key), function)(setup, question, **options)
    except Exception as exc:  # noqa: BLE001 - any framework's failure becomes the run's error
        error = named_first_line(exc)
    calls = list(setup.wire.calls)
    asked = [tool_call for call in calls for tool_call in call.asked]
    run = FrameworkRun(key, question, answer, error, calls, in_asked_order(setup.tool_log.uses, asked),
                       shop.refunds(), setup.reason if error is None else None)
    if own:
        shop.close()
    return run


def _module(key: str):
    return importlib.import_module(f".{FRAMEWORKS[key][0]}", __name__)


__all__ = ["FRAMEWORKS", "FrameworkRun", "Setup", "ToolFailed", "Wire", "WireCall", "available", "endpoint",
           "framework_name", "run_framework"]
