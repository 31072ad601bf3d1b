"""The shop's skills (lesson 17): Markdown files with a front matter, read by `tinyagent.architectures.skills.load_skills`.

    logistics.md   where a parcel is: queryOrder, queryLogistics
    policies.md    after-sales policy questions: searchKnowledge
    refunds.md     refunds and returns of an order: queryOrder, getCurrentTime, searchKnowledge, applyRefund

Each is package data (pyproject's package-data), like lesson 16's policy documents.
"""

from __future__ import annotations

from pathlib import Path

SKILL_FOLDER = Path(__file__).resolve().parent
