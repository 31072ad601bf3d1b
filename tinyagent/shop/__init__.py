"""The Bit Mall (比特严选) shop: an SQLite backend and the five tools the customer-service agent calls.

    from tinyagent.shop import Shop, shop_registry
    shop = Shop()                         # in memory, seeded; Shop("shop.db") keeps state in a file
    registry = shop_registry(shop)        # queryOrder, queryLogistics, applyRefund, searchKnowledge, getCurrentTime
"""

from ..errors import ShopDatabaseError
from .database import (
    InputTooLongError,
    OrderNotFoundError,
    RefundNotAllowedError,
    Shop,
    ShopError,
    ShopReadOnlyError,
)
from .knowledge import KNOWLEDGE_BASE, KnowledgeEntry

# Lesson 15: what a person sees before approving a refund, and a confirmation gate that shows it.
from .refund_review import describe_refund, refund_gate
from .tools import (
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
    "GetCurrentTimeTool",
    "InputTooLongError",
    "KnowledgeEntry",
    "OrderNotFoundError",
    "QueryLogisticsTool",
    "QueryOrderTool",
    "RefundNotAllowedError",
    "SearchKnowledgeTool",
    "Shop",
    "ShopDatabaseError",
    "ShopError",
    "ShopReadOnlyError",
    "describe_refund",
    "refund_gate",
    "shop_registry",
    "shop_tools",
]
