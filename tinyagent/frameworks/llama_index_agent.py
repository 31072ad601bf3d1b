"""LlamaIndex: `FunctionAgent` (native tool calls) and `ReActAgent` (text ReAct), both workflows."""

from __future__ import annotations

from tinyagent.frameworks.setup import Setup, run_async

NAME = "LlamaIndex FunctionAgent"


def llm(setup: Setup):
    from llama_index.llms.openai_like import OpenAILike

    # LlamaIndex's way to any OpenAI-compatible server: what the model can do is said, not looked up by name.
    return OpenAILike(model=setup.model, api_base=setup.base_url, api_key=setup.api_key, max_retries=0,
                      timeout=setup.timeout, is_chat_model=True, is_function_calling_model=True,
                      context_window=32000, http_client=setup.wire.client(setup.timeout),
                      async_http_client=setup.wire.async_client(setup.timeout), max_tokens=setup.max_tokens)


def run(setup: Setup, question: str, react: bool = False) -> str:
    from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
    from llama_index.core.tools import FunctionTool

    tools = [FunctionTool.from_defaults(fn) for fn in setup.functions()]
    kind = ReActAgent if react else FunctionAgent
    agent = kind(tools=tools, llm=llm(setup))

    async def go():
        return await agent.run(question, max_iterations=setup.max_steps)

    return str(run_async(go))


def run_react(setup: Setup, question: str) -> str:
    return run(setup, question, react=True)
