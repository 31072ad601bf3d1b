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
    result = agent.run(question, return_full_result=True)
    # At max_steps smolagents asks the model once more for an answer and returns it: its state says so.
    setup.reason = "max_steps" if result.state == "max_steps_error" else "final_answer"
    return str(result.output)
