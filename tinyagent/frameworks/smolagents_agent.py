"""smolagents: `ToolCallingAgent` (native tool calls, with a `final_answer` tool to end the run)."""

from __future__ import annotations

from tinyagent.frameworks.setup import Setup

NAME = "smolagents ToolCallingAgent"


def run(setup: Setup, question: str) -> str:
    from smolagents import LogLevel, OpenAIServerModel, ToolCallingAgent, tool

    cap = {} if setup.max_tokens is None else {"max_tokens": setup.max_tokens}  # sent with every request
    model = OpenAIServerModel(model_id=setup.model, api_base=setup.base_url, api_key=setup.api_key,
                              client_kwargs={"http_client": setup.wire.client(setup.timeout), "max_retries": 0},
                              **cap)
    agent = ToolCallingAgent(tools=[tool(fn) for fn in setup.functions()], model=model,
                             max_steps=setup.max_steps, verbosity_level=LogLevel.OFF)  # quiet: errors too
    return str(agent.run(question))
