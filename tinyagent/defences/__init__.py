"""Prompt injection, shown and defended (lesson 25).

    planting.py         the four channels an instruction is planted in, and the harm it does (refunds, outbox)
    fenced_data.py      (a) Observations fenced and marked as data, and a rule in the system prompt (a request part)
    customer_words.py   (b) a write tool's ids only from the customer's own words (an act part)
    least_privilege.py  (c) a task offered and allowed only its skill's tools (a request part and an act part)
    sourced_gate.py     (d) lesson 15's gate, showing the person where each id of the call came from
    attack_suite.py     twenty planted instructions run under each defence: attack success and task success
"""
