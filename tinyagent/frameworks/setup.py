"""What every adapter is given: where the model is, the shop's tools, and the recorders (lesson 20)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from tinyagent.frameworks.shop_functions import ToolLog, shop_functions
from tinyagent.frameworks.wire import Wire
from tinyagent.registry import ToolRegistry


@dataclass
class Setup:
    """One run's model (an OpenAI-compatible base URL), its tools, and what records the run."""

    base_url: str
    model: str
    api_key: str
    registry: ToolRegistry
    max_steps: int = 8
    timeout: float = 60
    max_tokens: int | None = None
    wire: Wire = field(default_factory=Wire)
    tool_log: ToolLog = field(default_factory=ToolLog)
    # how the run ended, in lesson 18's words ("final_answer", "max_steps", ...), when the framework says so
    reason: str | None = None

    def functions(self) -> list[Callable[..., str]]:
        """The five shop tools as typed functions that note each call in `tool_log`."""
        return shop_functions(self.registry, self.tool_log)

    def openai_client(self) -> Any:
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0, timeout=self.timeout,
                             http_client=self.wire.client(self.timeout))

    def async_openai_client(self) -> Any:
        import openai

        return openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0,
                                  timeout=self.timeout, http_client=self.wire.async_client(self.timeout))


def run_async(make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run a coroutine to its end from plain code, also inside Jupyter, whose kernel already runs an event
    loop (asyncio.run refuses to start a second one in the same thread): a thread of its own runs it."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(make())
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread below
            box["error"] = exc

    thread = threading.Thread(target=work, name="framework-run")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
