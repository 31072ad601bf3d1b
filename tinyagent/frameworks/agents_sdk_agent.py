"""The OpenAI Agents SDK: `Agent` + `Runner`, on chat completions (its default model speaks the Responses
API, which the classroom model serves too but many local servers do not)."""

from __future__ import annotations

from tinyagent.frameworks.setup import Setup, run_async

NAME = "OpenAI Agents SDK"
INSTRUCTIONS = "You are the Bit Mall customer-service assistant."


def run(setup: Setup, question: str, responses: bool = False) -> str:
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        RunConfig,
        Runner,
        function_tool,
    )

    async def go():
        kind = OpenAIResponsesModel if responses else OpenAIChatCompletionsModel
        model = kind(model=setup.model, openai_client=setup.async_openai_client())
        agent = Agent(name="Bit Mall", instructions=INSTRUCTIONS, model_settings=ModelSettings(
            max_tokens=setup.max_tokens), tools=[function_tool(fn) for fn in setup.functions()])
        config = RunConfig(model=model, tracing_disabled=True)  # tracing would post to OpenAI's servers
        result = await Runner.run(agent, question, run_config=config, max_turns=setup.max_steps)
        return result.final_output

    return str(run_async(go))
