"""pydantic-ai: `Agent` with plain functions as tools, on its OpenAI chat model."""

from __future__ import annotations

from tinyagent.frameworks.setup import Setup, run_async

NAME = "pydantic-ai Agent"


def run(setup: Setup, question: str) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    async def go():
        provider = OpenAIProvider(openai_client=setup.async_openai_client())
        agent = Agent(OpenAIChatModel(setup.model, provider=provider), tools=setup.functions())
        settings = {} if setup.max_tokens is None else {"max_tokens": setup.max_tokens}
        result = await agent.run(question, usage_limits=UsageLimits(request_limit=setup.max_steps),
                                 model_settings=settings or None)
        return result.output

    return str(run_async(go))
