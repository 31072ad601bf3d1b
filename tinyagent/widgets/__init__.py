"""Widgets to watch the agent think, for JupyterLab (ipywidgets).

    from tinyagent.widgets import ApprovalPanel, ChatPanel, StepDebugger, StopComparison, TraceViewer

    TraceViewer(result.trace)                      # a finished run, one card per round
    StepDebugger(agent, question)                  # one model call or tool call per click
    ChatPanel(agent)                               # a multi-turn chat with its live trace
    StopComparison.from_agent(agent, question)     # lesson 04: without and with stop, side by side
    ApprovalPanel(agent.start(question))            # lesson 15: Approve / Decline before a side effect

Each widget keeps its state in plain attributes (`.cards`, `.step_count`, `.turns`, ...) and
saves into a notebook as readable, deterministic text (`.text()`), so nbval can check it.
Imported separately from `tinyagent` so the core stays free of ipywidgets: it is the `widgets` extra
(`pip install -e ".[widgets]"` in the course folder; `make course` installs it).
"""

try:  # ipywidgets is the `widgets` extra, not a core dependency: say in one line how to get it
    import ipywidgets  # noqa: F401
except ImportError:
    raise ImportError(
        'tinyagent.widgets needs ipywidgets: pip install -e ".[widgets]" in the course folder', name="ipywidgets"
    ) from None

# The card parts and step parts of later lessons' events, each registered in cards.CARD_PARTS or
# step_debugger.STEP_PARTS as its module is imported: here, so that every part is in place before a card is drawn
# or a debugger steps.
from tinyagent.widgets import (  # noqa: F401
    approval_cards,
    approval_steps,
    architecture_cards,
    limit_cards,
    limit_steps,
    streamed_cards,
)
from tinyagent.widgets.approval_panel import ApprovalPanel
from tinyagent.widgets.cards import Card, apply_event, build_cards
from tinyagent.widgets.chat_panel import ChatPanel, Turn, describe_model
from tinyagent.widgets.step_debugger import StepDebugger
from tinyagent.widgets.stop_comparison import Row, StopComparison
from tinyagent.widgets.trace_viewer import TraceViewer

__all__ = [
    "ApprovalPanel",
    "Card",
    "ChatPanel",
    "Row",
    "StepDebugger",
    "StopComparison",
    "TraceViewer",
    "Turn",
    "apply_event",
    "build_cards",
    "describe_model",
]
