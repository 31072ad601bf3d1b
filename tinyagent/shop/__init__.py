"""The Bit Mall (比特严选) shop: an SQLite backend and the five tools the customer-service agent calls.

    from tinyagent.shop import Shop, shop_registry
    shop = Shop()                         # in memory, seeded; Shop("shop.db") keeps state in a file
    registry = shop_registry(shop)        # queryOrder, queryLogistics, applyRefund, searchKnowledge, getCurrentTime
"""

from .database import OrderNotFoundError, RefundNotAllowedError, Shop, ShopError
from .knowledge import KNOWLEDGE_BASE, KnowledgeEntry
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
    "KnowledgeEntry",
    "OrderNotFoundError",
    "QueryLogisticsTool",
    "QueryOrderTool",
    "RefundNotAllowedError",
    "SearchKnowledgeTool",
    "Shop",
    "ShopError",
    "shop_registry",
    "shop_tools",
]
