"""The Bit Mall (比特严选) shop: an SQLite backend and the five tools the customer-service agent calls.

    from tinyagent.shop import Shop, shop_registry
    shop = Shop()                         # in memory, seeded; Shop("shop.db") keeps state in a file
    registry = shop_registry(shop)        # queryOrder, queryLogistics, applyRefund, searchKnowledge, getCurrentTime

Lesson 16: `shop.import_documents(POLICY_FOLDER)` adds policy documents to the knowledge base, and
`cited_shop_registry(shop)` (cited_search.py) searches them with a searchKnowledge whose results name their
sources.
"""

from tinyagent.errors import ShopDatabaseError
from tinyagent.lazy_names import lazy_getattr
from tinyagent.shop.database import Shop
from tinyagent.shop.knowledge import KNOWLEDGE_BASE, KnowledgeEntry, Passage
from tinyagent.shop.shop_errors import (
    InputTooLongError,
    OrderNotFoundError,
    RefundNotAllowedError,
    ShopError,
    ShopReadOnlyError,
    ShopWriteError,
)
from tinyagent.shop.tools import (
    ApplyRefundTool,
    GetCurrentTimeTool,
    QueryLogisticsTool,
    QueryOrderTool,
    SearchKnowledgeTool,
    shop_registry,
    shop_tools,
)

__all__ = [
    "KNOWLEDGE_BASE",
    "ApplyRefundTool",
    "DocumentError",
    "GetCurrentTimeTool",
    "ImportResult",
    "InputTooLongError",
    "KnowledgeEntry",
    "OrderNotFoundError",
    "Passage",
    "QueryLogisticsTool",
    "QueryOrderTool",
    "RefundNotAllowedError",
    "SearchKnowledgeTool",
    "Shop",
    "ShopDatabaseError",
    "ShopError",
    "ShopReadOnlyError",
    "ShopWriteError",
    "describe_refund",
    "refund_gate",
    "shop_registry",
    "shop_tools",
]

# Lesson 16's import errors and lesson 15's refund review load on first use: a shop that only answers
# questions (every lesson before them, and `python -m tinyagent ask`) never compiles them.
_LAZY = {
    "DocumentError": "documents",
    "ImportResult": "documents",
    "describe_refund": "refund_review",  # what a person sees before approving a refund
    "refund_gate": "refund_review",  # and a confirmation gate that shows it
}


__getattr__ = lazy_getattr(__name__, _LAZY)
