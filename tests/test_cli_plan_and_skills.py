"""`python -m tinyagent ask --plan` and `--skill NAME` (lesson 17), end to end on the classroom model."""

import os
import subprocess
import sys

from tinyagent import Trace
from tinyagent.architectures.plan_execute import PlanMade
from tinyagent.architectures.skills import SkillActivated
from tinyagent.events import LlmCall, Observation

TWO_ORDERS_AND_A_POLICY = "订单 88231 和 88232 的物流都查一下，另外七天无理由退货怎么算运费？"


def ask(tmp_path, *args):
    env = {**os.environ, "TINYAGENT_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "tinyagent", "ask", *args, "--db", str(tmp_path / "shop.db"), "--now",
         "2026-06-30T19:05:23"],
        check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )


def test_plan_prints_the_plan_the_steps_and_the_answer(tmp_path):
    done = ask(tmp_path, TWO_ORDERS_AND_A_POLICY, "--plan")
    assert done.returncode == 0, done.stderr
    assert "[计划]\n  1. 查询订单 88231 的物流\n  2. 查询订单 88232 的物流" in done.stdout
    answer = done.stdout.split("[最终答复]")[1]
    assert "SF1234567890" in answer and "YT2468013579" in answer and "寄回运费由买家承担" in answer


def test_plan_json_holds_the_plan_events(tmp_path):
    done = ask(tmp_path, TWO_ORDERS_AND_A_POLICY, "--plan", "--json")
    trace = Trace.from_json(done.stdout)
    assert done.returncode == 0 and len(trace.of_type(PlanMade)[0].steps) == 3 and trace.reason == "final_answer"


def test_skill_limits_the_tools_and_says_so_in_the_trace(tmp_path):
    done = ask(tmp_path, "订单 88231 的扫地机充不进电了，帮我退款", "--skill", "logistics", "--json")
    assert done.returncode == 0, done.stderr
    trace = Trace.from_json(done.stdout)
    assert trace.of_type(SkillActivated)[0].tools == ("queryOrder", "queryLogistics")
    # SkillActivated is written from the skill's file after the run: it is no evidence of what the agent had.
    # So: the model was offered the skill's tools and not the refund (the system prompt it was sent) ...
    system = trace.of_type(LlmCall)[0].messages[0]
    assert system["role"] == "system" and "queryOrder" in system["content"] and "queryLogistics" in system["content"]
    assert "applyRefund" not in system["content"]
    # ... it looked the order up, once, and that call was run, not refused (a skill that refused its own
    # tools, or an empty run, passed a subset check) ...
    assert [call.name for call in trace.tool_calls] == ["queryOrder"]
    observations = trace.of_type(Observation)
    assert len(observations) == 1 and not observations[0].error and '"orderId":"88231"' in observations[0].text
    # ... and then answered, rather than running out of steps.
    assert trace.reason == "final_answer"


def test_an_unknown_skill_is_one_line_and_exit_2(tmp_path):
    done = ask(tmp_path, "Where is order 88231?", "--skill", "shipping")
    assert done.returncode == 2 and "=====" not in done.stdout
    assert done.stderr.strip() == ("error: --skill 'shipping': the shop's skills are logistics, policies, refunds "
                                   "(see python -m tinyagent ask --help)")
    assert not (tmp_path / "shop.db").exists() and not list(tmp_path.glob("*.sqlite3"))  # refused before any file


def test_plan_and_skill_together_are_refused(tmp_path):
    done = ask(tmp_path, "Where is order 88231?", "--plan", "--skill", "logistics")
    assert done.returncode == 2 and "not allowed with argument" in done.stderr and "Traceback" not in done.stderr
