"""Lessons 02 and 05: wrong answers the checks let through or misnamed (a tool run twice, a suggestion in a list, a
limit ignored, '' for no answer line), each failing with a message that names the mistake; the solutions still pass."""

from __future__ import annotations

import difflib
import json

from tests.test_exercises import (
    FINAL,
    CappedRegistry,
    CarefulRegistry,
    SuggestingRegistry,
    fails,
    final_answer_anchored,
    passes,
)
from tinyagent.checks import check_anchored_final_answer, check_capped_registry, check_suggesting_registry


def test_02_solutions_still_pass():
    assert passes(check_suggesting_registry, SuggestingRegistry)
    assert passes(check_capped_registry, CappedRegistry)


def test_02_suggesting_registry_that_runs_each_tool_twice_fails():
    class TwiceFirst(SuggestingRegistry):  # runs the tool a second time, returns the first run's Observation
        def execute(self, action):
            observation = super().execute(action)
            super().execute(action)
            return observation

    class TwiceSecond(SuggestingRegistry):  # the second run's Observation (a refund's says "duplicate")
        def execute(self, action):
            super().execute(action)
            return super().execute(action)

    for answer in (TwiceFirst, TwiceSecond):
        fails(check_suggesting_registry, answer, says="a real tool still runs, once")
        fails(check_suggesting_registry, answer, says="ran applyRefund 2 times")


def test_02_capped_registry_that_runs_the_tool_twice_fails():
    class TwiceFirst(CappedRegistry):
        def execute(self, action):
            observation = super().execute(action)
            super().execute(action)
            return observation

    fails(check_capped_registry, TwiceFirst, says="the tool runs once (applyRefund asks the shop for one refund)")
    fails(check_capped_registry, TwiceFirst, says="ran applyRefund 2 times")


def test_02_suggestion_in_a_list_is_named():
    class SuggestsAList(CarefulRegistry):  # did_you_mean: the list get_close_matches returns, not its name
        def execute(self, action):
            observation = super().execute(action)
            data = json.loads(observation) if observation.startswith("{") else None
            if isinstance(data, dict) and "available_tools" in data:
                close = difflib.get_close_matches(action.tool_name.strip(), list(self.tools), n=1)
                if close:
                    data["did_you_mean"] = close
                return json.dumps(data, ensure_ascii=False)
            return observation

    fails(check_suggesting_registry, SuggestsAList, says="did_you_mean is one name, a string ('queryOrder'), not a list")


def test_02_limit_ignored_is_named():
    class Always120(CappedRegistry):  # the lesson's limit=120 written in: the limit given is ignored
        def execute(self, action):
            observation = CarefulRegistry.execute(self, action)
            if len(observation) <= 120:
                return observation
            return observation[:120] + f"… [cut: {len(observation) - 120} more characters]"

    fails(check_capped_registry, Always120, says="but it kept 120 characters: cut at limit=1, the registry's own")


def test_05_empty_string_for_no_answer_line_is_named():
    assert passes(check_anchored_final_answer, final_answer_anchored)

    def empty_when_missing(text):  # '' where there is no `Final Answer:` line
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.strip().startswith(FINAL):
                return "\n".join([line.strip()[len(FINAL):]] + lines[i + 1:]).strip()
        return ""

    fails(check_anchored_final_answer, empty_when_missing, says="with no line that starts with `Final Answer:`")
    fails(check_anchored_final_answer, empty_when_missing, says="return None; '' is for a key with nothing after it")
