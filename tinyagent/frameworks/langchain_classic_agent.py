"""LangChain classic: `create_react_agent` + `AgentExecutor`, text ReAct with the hub's standard prompt.

The executor is lesson 06's loop: it formats the prompt, calls the model with stop=["\\nObservation"], parses
Action / Action Input, runs the tool, and appends the Observation to a scratchpad, until a Final Answer.
"""

from __future__ import annotations

from tinyagent.frameworks.langchain_agent import chat_model
from tinyagent.frameworks.setup import Setup

NAME = "LangChain classic AgentExecutor"

# LangChain hub's "hwchase17/react" prompt, the one create_react_agent is documented with: the tools, the
# format, and the scratchpad (earlier Thoughts, Actions and Observations) all inside one human message.
REACT_PROMPT = """Answer the following questions as best you can. You have access to the following tools:

{tools}

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [{tool_names}]
Action Input: the input to the action
Observation: the result of the action
... (this Thought/Action/Action Input/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Begin!

Question: {input}
Thought:{agent_scratchpad}"""


def run(setup: Setup, question: str, handle_parsing_errors: bool = False) -> str:
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.prompts import PromptTemplate
    from langchain_core.tools import Tool

    def tool(spec) -> Tool:
        # The classic agent hands a tool the Action Input as one string, which is what the shop's tools read.
        return Tool(name=spec.name, description=spec.description,
                    func=lambda text: setup.tool_log.run(setup.registry, spec.name, text))

    shop = [tool(spec) for spec in setup.registry]
    agent = create_react_agent(chat_model(setup), shop, PromptTemplate.from_template(REACT_PROMPT))
    executor = AgentExecutor(agent=agent, tools=shop, max_iterations=setup.max_steps,
                             handle_parsing_errors=handle_parsing_errors, return_intermediate_steps=True)
    result = executor.invoke({"input": question})
    # At its cap the executor hands back a stop text as the output ("Agent stopped due to iteration limit or time
    # limit."); the cap is how to tell: each round it ran is one step (an Action, or a reply it could not read).
    stopped = len(result["intermediate_steps"]) >= setup.max_steps
    setup.reason = "max_steps" if stopped else "final_answer"
    return str(result["output"])
