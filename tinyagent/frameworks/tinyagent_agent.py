"""The course's own agents on the same footing as the frameworks: ReActAgent (text, lesson 06) and
FunctionCallingAgent (native calls, lesson 09), their requests recorded on the same wire."""

from __future__ import annotations

from tinyagent.agent import ReActAgent
from tinyagent.evaluation.grading import RunOutcome
from tinyagent.events import LlmCall
from tinyagent.frameworks.setup import Setup
from tinyagent.llm_client import LlmClient
from tinyagent.protocols.function_calling import FunctionCallingAgent

NAME = "tinyagent ReActAgent"


def run(setup: Setup, question: str, protocol: str = "text") -> str | None:
    options = {} if setup.max_tokens is None else {"max_tokens": setup.max_tokens}
    llm = LlmClient(setup.base_url.rstrip("/") + "/chat/completions", setup.api_key, setup.model,
                    session=setup.wire.requests_session(setup.base_url), read_timeout=setup.timeout, max_retries=0,
                    **options)
    kind = FunctionCallingAgent if protocol == "function" else ReActAgent
    result = kind(llm, setup.registry, max_steps=setup.max_steps).run(question)
    # the loop's own record of the calls, as lesson 18 reads it: no wrapper needed around the tools
    setup.tool_log.uses += RunOutcome.from_run(result, []).tool_calls
    setup.wire.with_usage([call.usage for call in result.trace.of_type(LlmCall)])
    setup.reason = result.reason  # a step cap's apology is an answer too: the reason says it is not the model's
    return result.answer


def run_function(setup: Setup, question: str) -> str | None:
    return run(setup, question, protocol="function")
