"""Other frameworks' agents, unchanged, against the classroom model on loopback (the `frameworks` extra).

Each test gives a framework the shop's real tools in its own tool type and the refund request, lets the
framework's own loop run, and reads the refunds table afterwards: one refund, for order 88231, whose id the
answer names. Structured outputs are checked against order 88231's real values. A missing framework skips
the test with the reason, except in CI (the CI variable set), where it fails. docs/classroom-model.md lists
the dialects the model reads.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from tests.framework_shop import (
    CLASSIC_REACT_PROMPT,
    REFUND_REQUEST,
    assert_refunded,
    need,
    new_shop,
    shop_functions,
)
from tinyagent.classroom.server import ClassroomServer
from tinyagent.protocols.tool_rendering import function_specs, input_from_arguments

MODEL = "classroom"

# The frameworks' own deprecation notices (pydantic's `__fields__` inside LlamaIndex, LangGraph's moved names):
# nothing this project calls, and dozens of lines in every run's summary.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class OrderFacts(BaseModel):
    """What the shop knows about an order."""

    order_id: str
    product: str
    price: float
    status: str
    tracking_number: str | None
    customer_email: str | None  # nothing in the shop says it: must come back null, never invented


def assert_order_88231(facts: OrderFacts) -> None:
    assert facts == OrderFacts(order_id="88231", product="比特 S10 Pro 扫地机", price=1999, status="已签收",
                               tracking_number="SF1234567890", customer_email=None)


@pytest.fixture(scope="module")
def classroom():
    with ClassroomServer() as server:
        yield server


@pytest.fixture
def shop():
    return new_shop()


def test_a_missing_framework_skips_with_the_extra_to_install_but_fails_in_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r'pip install -e "\.\[frameworks\]"'):
        need("no_such_framework_here")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="missing in CI"):
        need("no_such_framework_here")


# -- the official openai client ---------------------------------------------------------------------------


def openai_client(classroom):
    openai = need("openai")
    return openai.OpenAI(base_url=classroom.base_url, api_key="classroom", max_retries=0, timeout=30)


def run_openai_loop(classroom, shop, create, tools_spec) -> object:
    """The hand-written function-calling loop of the openai docs: call, run each tool, send its result."""
    from tinyagent.shop import shop_tools

    tools = {tool.name: tool for tool in shop_tools(shop)}
    messages = [{"role": "user", "content": REFUND_REQUEST}]
    for _ in range(8):
        message = create(messages=messages, tools=tools_spec)
        if not message.tool_calls:
            return message
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        for call in message.tool_calls:
            tool = tools[call.function.name]
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": tool.invoke(input_from_arguments(tool, call.function.arguments))})
    raise AssertionError("no answer in 8 rounds")


def shop_specs(shop, strict: bool = False) -> list[dict]:
    from tinyagent.shop import shop_tools

    specs = function_specs(shop_tools(shop))
    return [{**s, "function": {**s["function"], "strict": True}} for s in specs] if strict else specs


def test_openai_client_tool_loop_refunds(classroom, shop):
    client = openai_client(classroom)

    def create(**kwargs):
        return client.chat.completions.create(model=MODEL, **kwargs).choices[0].message

    answer = run_openai_loop(classroom, shop, create, shop_specs(shop))
    assert_refunded(shop, answer.content)


def test_openai_client_streaming_tool_loop_refunds(classroom, shop):
    client = openai_client(classroom)

    def create(**kwargs):
        with client.chat.completions.stream(model=MODEL, **kwargs) as stream:
            for _ in stream:
                pass
            return stream.get_final_completion().choices[0].message

    answer = run_openai_loop(classroom, shop, create, shop_specs(shop, strict=True))
    assert_refunded(shop, answer.content)


def test_async_openai_client_refunds(classroom, shop):
    openai = need("openai")

    def create(**kwargs):
        async def once():  # a client per event loop: its connection pool belongs to the loop that made it
            async with openai.AsyncOpenAI(base_url=classroom.base_url, api_key="classroom", max_retries=0,
                                          timeout=30) as client:
                return (await client.chat.completions.create(model=MODEL, **kwargs)).choices[0].message

        return asyncio.run(once())

    answer = run_openai_loop(classroom, shop, create, shop_specs(shop))
    assert_refunded(shop, answer.content)


def test_openai_parse_fills_the_schema_with_order_88231s_real_values(classroom, shop):
    client = openai_client(classroom)
    asked = []

    def create(messages, tools):
        asked.append(messages[-1])
        messages = [{"role": "user", "content": "What do you have on order 88231?"}, *messages[1:]]
        return client.chat.completions.parse(model=MODEL, messages=messages, tools=tools,
                                             response_format=OrderFacts).choices[0].message

    answer = run_openai_loop(classroom, shop, create, shop_specs(shop, strict=True))
    assert_order_88231(answer.parsed)
    assert shop.refunds() == []  # asked for facts, not a refund


def test_openai_parse_refuses_a_required_field_nothing_says(classroom):
    client = openai_client(classroom)
    message = client.chat.completions.parse(
        model=MODEL, messages=[{"role": "user", "content": "Who bought order 88231?"}], response_format=OrderFacts,
    ).choices[0].message
    assert message.parsed is None and message.content is None
    assert "product, price, status" in message.refusal  # said, not invented


def test_json_object_answers_with_what_the_conversation_holds(classroom):
    client = openai_client(classroom)
    pasted = '{"orderId": "88231", "status": "已签收", "price": 1999}'
    content = client.chat.completions.create(
        model=MODEL, response_format={"type": "json_object"},
        messages=[{"role": "user", "content": f"Give me this order as JSON: {pasted}"}],
    ).choices[0].message.content
    data = json.loads(content)
    assert {k: data[k] for k in ("orderId", "status", "price")} == json.loads(pasted)


# -- LangChain and LangGraph ------------------------------------------------------------------------------


def chat_openai(classroom, **options):
    need("langchain_openai")
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=MODEL, base_url=classroom.base_url, api_key="classroom", max_retries=0, timeout=30,
                      **options)


def langchain_tools(shop):
    need("langchain_core")
    from langchain_core.tools import StructuredTool

    return [StructuredTool.from_function(fn, parse_docstring=True) for fn in shop_functions(shop)]


def test_langchain_bind_tools_loop_refunds(classroom, shop):
    from langchain_core.messages import HumanMessage, ToolMessage

    tools = {tool.name: tool for tool in langchain_tools(shop)}
    model = chat_openai(classroom).bind_tools(list(tools.values()))
    messages = [HumanMessage(REFUND_REQUEST)]
    for _ in range(8):
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        messages += [ToolMessage(tools[c["name"]].invoke(c["args"]), tool_call_id=c["id"]) for c in reply.tool_calls]
    assert_refunded(shop, reply.content)


def test_langchain_create_agent_refunds(classroom, shop):
    need("langchain.agents")
    from langchain.agents import create_agent

    agent = create_agent(chat_openai(classroom), langchain_tools(shop))
    state = agent.invoke({"messages": [{"role": "user", "content": REFUND_REQUEST}]})
    assert_refunded(shop, state["messages"][-1].content)


def test_langchain_create_agent_structured_response_fills_order_88231(classroom, shop):
    need("langchain.agents")
    from langchain.agents import create_agent

    # A model LangChain has no profile for gets its schema as a tool (ToolStrategy) and tool_choice "required".
    agent = create_agent(chat_openai(classroom), langchain_tools(shop), response_format=OrderFacts)
    state = agent.invoke({"messages": [{"role": "user", "content": "What do you have on order 88231?"}]})
    assert_order_88231(state["structured_response"])
    assert shop.refunds() == []


def test_langgraph_react_agent_refunds(classroom, shop):
    need("langgraph.prebuilt")
    import warnings

    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():  # deprecated in favour of create_agent above, and still widely used
        warnings.simplefilter("ignore")
        agent = create_react_agent(chat_openai(classroom), langchain_tools(shop))
    state = agent.invoke({"messages": [{"role": "user", "content": REFUND_REQUEST}]})
    assert_refunded(shop, state["messages"][-1].content)


def test_langchain_with_structured_output_fills_order_88231(classroom, shop):
    from langchain_core.messages import HumanMessage, ToolMessage

    tools = {tool.name: tool for tool in langchain_tools(shop)}
    asked = HumanMessage("What do you have on order 88231?")
    call = chat_openai(classroom).bind_tools(list(tools.values())).invoke([asked])
    (first,) = call.tool_calls
    looked_up = ToolMessage(tools[first["name"]].invoke(first["args"]), tool_call_id=first["id"])
    facts = chat_openai(classroom).with_structured_output(OrderFacts).invoke([asked, call, looked_up])
    assert_order_88231(facts)


# -- LlamaIndex -------------------------------------------------------------------------------------------


def llama_llm(classroom):
    need("llama_index.llms.openai_like")
    from llama_index.llms.openai_like import OpenAILike

    # LlamaIndex's way to any OpenAI-compatible server: what the model can do is said, not looked up by name.
    return OpenAILike(model=MODEL, api_base=classroom.base_url, api_key="classroom", max_retries=0, timeout=30,
                      is_chat_model=True, is_function_calling_model=True, context_window=32000)


def llama_tools(shop):
    from llama_index.core.tools import FunctionTool

    return [FunctionTool.from_defaults(fn) for fn in shop_functions(shop)]


def run_llama_agent(agent) -> str:
    async def run():
        return await agent.run(REFUND_REQUEST)

    return str(asyncio.run(run()))


def test_llama_index_function_agent_refunds(classroom, shop):
    need("llama_index.core.agent.workflow")
    from llama_index.core.agent.workflow import FunctionAgent

    answer = run_llama_agent(FunctionAgent(tools=llama_tools(shop), llm=llama_llm(classroom)))
    assert_refunded(shop, answer)


# -- pydantic-ai ------------------------------------------------------------------------------------------


def pydantic_ai_agent(classroom, shop, **options):
    need("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=classroom.base_url, api_key="classroom"))
    return Agent(model, tools=shop_functions(shop), **options)


def test_pydantic_ai_with_tools_refunds(classroom, shop):
    result = pydantic_ai_agent(classroom, shop).run_sync(REFUND_REQUEST)
    assert_refunded(shop, result.output)


def test_pydantic_ai_output_type_fills_order_88231(classroom, shop):
    result = pydantic_ai_agent(classroom, shop, output_type=OrderFacts).run_sync("What do you have on order 88231?")
    assert_order_88231(result.output)
    assert shop.refunds() == []


# -- the OpenAI Agents SDK --------------------------------------------------------------------------------


def agents_sdk_agent(shop):
    need("agents")
    from agents import Agent, function_tool

    return Agent(name="Bit Mall", instructions="You are the Bit Mall customer-service assistant.",
                 tools=[function_tool(fn) for fn in shop_functions(shop)])


def run_agents_sdk(classroom, shop, model_kind: str):
    from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel, RunConfig, Runner
    from openai import AsyncOpenAI

    async def run():
        client = AsyncOpenAI(base_url=classroom.base_url, api_key="classroom", max_retries=0, timeout=30)
        kinds = {"chat": OpenAIChatCompletionsModel, "responses": OpenAIResponsesModel}
        model = kinds[model_kind](model=MODEL, openai_client=client)
        config = RunConfig(model=model, tracing_disabled=True)
        return await Runner.run(agents_sdk_agent(shop), REFUND_REQUEST, run_config=config)

    return asyncio.run(run()).final_output


def test_agents_sdk_on_chat_completions_refunds(classroom, shop):
    assert_refunded(shop, run_agents_sdk(classroom, shop, "chat"))


def test_agents_sdk_default_responses_model_refunds(classroom, shop):
    assert_refunded(shop, run_agents_sdk(classroom, shop, "responses"))


def test_agents_sdk_streamed_run_on_the_responses_api_refunds(classroom, shop):
    from agents import OpenAIResponsesModel, RunConfig, Runner
    from openai import AsyncOpenAI

    async def run():
        client = AsyncOpenAI(base_url=classroom.base_url, api_key="classroom", max_retries=0, timeout=30)
        config = RunConfig(model=OpenAIResponsesModel(model=MODEL, openai_client=client), tracing_disabled=True)
        streamed = Runner.run_streamed(agents_sdk_agent(shop), REFUND_REQUEST, run_config=config)
        kinds = [event.type async for event in streamed.stream_events()]
        return streamed.final_output, kinds

    answer, kinds = asyncio.run(run())
    assert "raw_response_event" in kinds and "run_item_stream_event" in kinds
    assert_refunded(shop, answer)


# -- the Responses API with the openai client -------------------------------------------------------------


def responses_tools(shop) -> list[dict]:
    return [{"type": "function", "name": s["function"]["name"], "description": s["function"]["description"],
             "parameters": s["function"]["parameters"]} for s in shop_specs(shop)]


def run_responses_loop(classroom, shop, create, request: str = REFUND_REQUEST):
    """The Responses API's tool loop: the whole input each time, function_call items answered by outputs."""
    from tinyagent.shop import shop_tools

    tools = {tool.name: tool for tool in shop_tools(shop)}
    items: list = [{"role": "user", "content": request}]
    for _ in range(8):
        response = create(input=items, tools=responses_tools(shop))
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response
        for call in calls:
            tool = tools[call.name]
            items += [{"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
                      {"type": "function_call_output", "call_id": call.call_id,
                       "output": tool.invoke(input_from_arguments(tool, call.arguments))}]
    raise AssertionError("no answer in 8 rounds")


def test_responses_api_plain_answer(classroom):
    response = openai_client(classroom).responses.create(model=MODEL, input="What is a ReAct agent?",
                                                         instructions="Answer briefly.")
    assert response.status == "completed" and response.object == "response"
    assert "ReAct" in response.output_text
    assert response.usage.output_tokens > 0 and response.usage.total_tokens > response.usage.output_tokens


def test_responses_api_tool_loop_refunds(classroom, shop):
    client = openai_client(classroom)
    response = run_responses_loop(classroom, shop, lambda **kw: client.responses.create(model=MODEL, **kw))
    assert_refunded(shop, response.output_text)


def test_responses_api_streaming_tool_loop_refunds(classroom, shop):
    client = openai_client(classroom)
    seen: set[str] = set()

    def create(**kwargs):
        with client.responses.stream(model=MODEL, **kwargs) as stream:
            seen.update(event.type for event in stream)
            return stream.get_final_response()

    answer = run_responses_loop(classroom, shop, create).output_text
    assert {"response.created", "response.output_text.delta", "response.function_call_arguments.delta",
            "response.completed"} <= seen
    assert_refunded(shop, answer)


def test_responses_api_structured_output_fills_order_88231(classroom, shop):
    client = openai_client(classroom)

    def create(**kwargs):
        return client.responses.parse(model=MODEL, text_format=OrderFacts, **kwargs)

    response = run_responses_loop(classroom, shop, create, "What do you have on order 88231?")
    assert_order_88231(response.output_parsed)


# -- LangChain classic: the text ReAct agent --------------------------------------------------------------

def test_langchain_classic_react_agent_executor_refunds(classroom, shop):
    need("langchain_classic.agents")
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.prompts import PromptTemplate
    from langchain_core.tools import Tool

    from tinyagent.shop import shop_tools

    # The classic agent passes the Action Input on as one string: tools of one text input, the shop's own.
    tools = [Tool(name=t.name, description=t.description, func=t.invoke) for t in shop_tools(shop)]
    agent = create_react_agent(chat_openai(classroom), tools, PromptTemplate.from_template(CLASSIC_REACT_PROMPT))
    executor = AgentExecutor(agent=agent, tools=tools, max_iterations=8)
    result = executor.invoke({"input": REFUND_REQUEST})
    assert_refunded(shop, result["output"])


# -- smolagents ---------------------------------------------------------------------------------------------


def smol_model(classroom):
    need("smolagents")
    from smolagents import OpenAIServerModel

    return OpenAIServerModel(model_id=MODEL, api_base=classroom.base_url, api_key="classroom")


def smol_tools(shop):
    from smolagents import tool

    return [tool(fn) for fn in shop_functions(shop)]


def test_smolagents_tool_calling_agent_refunds(classroom, shop):
    from smolagents import ToolCallingAgent

    agent = ToolCallingAgent(tools=smol_tools(shop), model=smol_model(classroom), max_steps=8, verbosity_level=0)
    assert_refunded(shop, agent.run(REFUND_REQUEST))


def test_smolagents_code_agent_is_told_plainly_that_the_classroom_model_writes_no_code(classroom, shop):
    from smolagents import CodeAgent

    agent = CodeAgent(tools=smol_tools(shop), model=smol_model(classroom), max_steps=1, verbosity_level=0)
    agent.run(REFUND_REQUEST)
    said = [step.model_output for step in agent.memory.steps if getattr(step, "model_output", None)]
    assert said and "The classroom model writes no code" in said[0]
    assert shop.refunds() == []


def test_llama_index_react_agent_refunds(classroom, shop):
    need("llama_index.core.agent.workflow")
    from llama_index.core.agent.workflow import ReActAgent

    answer = run_llama_agent(ReActAgent(tools=llama_tools(shop), llm=llama_llm(classroom)))
    assert_refunded(shop, answer)


# -- three clients the lesson does not name: LiteLLM, Agno, AutoGen (the `clients` extra, in `dev`) ---------
# Each is used as its documentation shows, pointed at the classroom model's base URL: nothing in it knows the
# course. Offline switches: LiteLLM would fetch its price list, Agno would send telemetry.


def test_litellm_tool_loop_refunds_and_fills_order_88231(classroom, shop, monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = need("litellm", "clients")
    from tinyagent import Action
    from tinyagent.shop import shop_registry

    registry = shop_registry(shop)

    def complete(messages, **options):
        return litellm.completion(model=f"openai/{MODEL}", api_base=classroom.base_url, api_key="classroom",
                                  messages=messages, **options).choices[0].message

    messages = [{"role": "user", "content": REFUND_REQUEST}]
    for _ in range(8):
        reply = complete(messages, tools=function_specs(registry, "en"))
        if not reply.tool_calls:
            break
        messages.append(reply.model_dump())
        for call in reply.tool_calls:
            tool = registry.get(call.function.name)
            result = registry.execute(Action(call.function.name, input_from_arguments(tool, call.function.arguments)))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    assert_refunded(shop, reply.content)
    messages.append({"role": "user", "content": "Summarise order 88231 as the OrderFacts object."})
    summary = complete(messages, response_format=OrderFacts)
    assert_order_88231(OrderFacts.model_validate_json(summary.content))


def agno_agent(classroom, shop, monkeypatch, **options):
    monkeypatch.setenv("AGNO_TELEMETRY", "false")
    need("agno", "clients")
    from agno.agent import Agent
    from agno.models.openai.like import OpenAILike

    model = OpenAILike(id=MODEL, base_url=classroom.base_url, api_key="classroom")
    return Agent(model=model, tools=shop_functions(shop), telemetry=False, **options)


def test_agno_agent_refunds(classroom, shop, monkeypatch):
    result = agno_agent(classroom, shop, monkeypatch).run(REFUND_REQUEST)
    assert_refunded(shop, result.content)


def test_agno_output_schema_fills_order_88231(classroom, shop, monkeypatch):
    result = agno_agent(classroom, shop, monkeypatch, output_schema=OrderFacts).run("What do you have on order 88231?")
    assert_order_88231(result.content)
    assert shop.refunds() == []


def autogen_agent(classroom, shop, **options):
    need("autogen_agentchat", "clients")
    need("autogen_ext.models.openai", "clients")
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    # A model AutoGen does not know needs its abilities said; the classroom model has these.
    info = {"vision": False, "function_calling": True, "json_output": True, "structured_output": True,
            "family": "unknown"}
    client = OpenAIChatCompletionClient(model=MODEL, base_url=classroom.base_url, api_key="classroom", model_info=info)
    return AssistantAgent("shop", model_client=client, reflect_on_tool_use=True, max_tool_iterations=8, **options)


def test_autogen_assistant_agent_refunds(classroom, shop):
    result = asyncio.run(autogen_agent(classroom, shop, tools=shop_functions(shop)).run(task=REFUND_REQUEST))
    assert_refunded(shop, result.messages[-1].content)


# AutoGen's own result object warns about its `parsed` field's type while serialising it: nothing this test calls.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_autogen_output_content_type_fills_order_88231(classroom, shop):
    from autogen_core.tools import FunctionTool

    # Structured output beside tools needs strict tools in the openai client AutoGen calls.
    tools = [FunctionTool(function, description=function.__doc__ or function.__name__, strict=True)
             for function in shop_functions(shop)]
    agent = autogen_agent(classroom, shop, tools=tools, output_content_type=OrderFacts)
    result = asyncio.run(agent.run(task="What do you have on order 88231?"))
    assert_order_88231(result.messages[-1].content)
    assert shop.refunds() == []
