"""Checks that a lesson runs: the learner's exercise answers graded, classroom-only checks explained.

Each exercise in a lesson leaves a named place for the answer (`predicted_tools = None`, or a class the
learner writes), then one visible cell calls a check from this package on it:

    from tinyagent.checks import check_parcel_prediction
    check_parcel_prediction(predicted_tools)

A check prints "not attempted yet" while the answer is still None (so a lesson runs top to bottom
untouched), prints "passed" with the reason when the answer is right, and raises `ExerciseFailed` (an
`AssertionError`) saying what is wrong when it is not. It returns nothing, so a check cell shows only that
line. Checks grade the learner's own answer (their prediction, their function, their class) on inputs chosen
here, never the path a model happened to take, so they hold on any model. The solutions notebooks
(`notebooks/solutions/`) pass the same checks.

`classroom_only(settings, why)` guards the asserts that only hold for the scripted classroom model (in this
process, or served as `classroom`, as in a JupyterHub room): on a real model it prints "skipped on a real
model: <why>" instead of skipping in silence.

One module per lesson, named after it (`lesson07_tool_schemas.py` holds lesson 07's two checks), and
`reporting.py`, the way every check reports. A lesson's module loads when one of its names is first used,
so a lesson that imports `classroom_only` does not compile the other lessons' checks (nor lesson 19's
service).
"""

from __future__ import annotations

from tinyagent.checks.reporting import COURSE_NOW, ExerciseFailed, classroom_only
from tinyagent.lazy_names import lazy_getattr

# Every name the one-file checks.py offered, by the lesson module that holds it now: the lessons, their
# solutions and the tests import them from here.
_LESSONS = {
    "lesson00_welcome": ("check_parcel_prediction", "check_missing_order_prediction"),
    "lesson01_tools": ("check_toy_logistics_tool", "check_forgiving_query_order", "FORGIVING_INPUTS"),
    "lesson02_registry": ("check_suggesting_registry", "check_capped_registry", "CUT_NOTE"),
    "lesson03_raw_http": ("check_unknown_model", "check_prompt_share"),
    "lesson04_stop_sequence": (
        "check_invented_counter", "check_pretended_calls", "STOPPED", "INVENTION_SAMPLES",
        "PRETENDED_SAMPLES"
    ),
    "lesson05_parser": (
        "check_parser_stops_at_observation", "check_anchored_final_answer", "INVENTED_STEP",
        "MULTI_LINE_ANSWER", "PARSER_CASES", "ANCHORED_CASES"
    ),
    "lesson06_react_loop": (
        "check_counting_llm", "check_record_replay", "ScriptedModel", "ORDER_STEP", "SCRIPTS"
    ),
    "lesson07_tool_schemas": (
        "check_typed_logistics_tool", "check_error_fields", "PICKUP_INPUTS", "Address", "pickup_tool"
    ),
    "lesson08_prompt_design": (
        "check_lean_prompt", "check_shorter_predictions", "LEAN_SHARE", "LEAN_KEYS", "shorter_pairs",
        "SHORTER_HINTS"
    ),
    "lesson09_function_calling": (
        "check_tool_messages", "check_fewest_model_calls", "TOOL_CALLS_REPLY", "KNOWLEDGE_OFFLINE",
        "FEWEST_CALLS_REQUESTS"
    ),
    "lesson10_stopping": (
        "check_fixed_seed_loop", "check_cost_budget", "GivingUpModel", "MISSING_TOOL_STEP", "FINAL_STEP",
        "LOOP_COUNTER_CASES"
    ),
    "lesson11_robust_parsing": (
        "check_bracket_actions", "check_action_over_final", "BRACKET_CASES", "ACTION_FIRST_CASES"
    ),
    "lesson12_memory": ("check_first_and_last", "check_token_window", "FIVE_TURN_CONVERSATION"),
    "lesson13_context": ("check_fold_logistics", "check_trim_to_budget"),
    "lesson14_streaming": (
        "check_cut_stream", "check_read_chunks", "RUN_ON", "STREAMED_STEP", "CUT_STREAM_TEXTS"
    ),
    "lesson15_real_tools": (
        "check_safe_eval", "check_inside_workspace", "SAFE_EVAL_VALUES", "SAFE_EVAL_REFUSALS",
        "_workspace_traps"
    ),
    "lesson16_knowledge": (
        "check_overlapping_windows", "check_coverage_rerank", "WINDOW_CASES", "rerank_cases"
    ),
    "lesson17_plan_and_skills": ("check_plan_parser", "check_plan_rule", "PLAN_RULES", "ROUTER_RULES"),
    "lesson18_evaluation": (
        "check_eval_task", "check_variant_failures", "EVAL_EXERCISE_REQUEST", "VARIANT_BEHAVIOUR"
    ),
    "lesson19_serving": (
        "check_sse_reader", "check_status_predictions", "SSE_EXERCISE_STREAMS", "read_sse_reference",
        "registry_with_a_broken_courier", "SERVING_EXERCISE_REQUESTS"
    ),
    "lesson20_frameworks": (
        "check_observations_in", "check_part_lessons", "OBSERVATION_CASES", "FRAMEWORK_PARTS"
    ),
    "lesson21_several_agents": ("check_scoped_registry", "check_rains_during", "RAIN_CASES"),
    "lesson22_tree_of_thoughts": ("check_shop_rule", "check_keep_best", "RULE_CASES", "BEAM_CASES"),
    "lesson23_constrained_decoding": ("check_tracking_grammar", "check_ids_seen", "TRACKING_NUMBERS"),
    "lesson24_mcp": ("check_observation_from_result", "check_merged_names"),
    "lesson25_prompt_injection": ("check_fence", "check_ids_from_customer"),
}
_LAZY = {name: module for module, names in _LESSONS.items() for name in names}

__all__ = ["COURSE_NOW", "ExerciseFailed", "classroom_only"]
__all__ += [name for name in _LAZY if not name.startswith("_")]

__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    # dir() lists the lazy names too, before any of them is loaded.
    return sorted({*globals(), *_LAZY})
