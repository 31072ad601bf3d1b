"""searchKnowledge that cites its sources: the passages of the imported documents, each with where it is from.

    registry = cited_shop_registry(shop)     # the five shop tools, this one in place of the default searchKnowledge

Built with lesson 07's `@tool`, so its input is checked against a schema like every typed tool's. It
searches the imported documents only (documents.py), because only a document has a section to cite, and
re-ranks bm25's best by default (rerank.py). Its Observation:

    {"query": "质量问题 退货",
     "results": [{"title": "退换货政策", "section": "质量问题退换货 › 期限与检测", "source": "zh/returns.md#5",
                  "content": "签收次日起 15 天内出现性能故障的，……", "score": 1.643}, ...]}

`title` and `section` are what an answer names ("根据《退换货政策》「质量问题退换货 › 期限与检测」"); `source`
is the exact passage (document and chunk position), for a person who wants to check it. The default
searchKnowledge (tools.py) keeps the shape lessons 00-11 show.
"""

from __future__ import annotations

from tinyagent.clock import Clock
from tinyagent.registry import ToolRegistry, error_observation
from tinyagent.shop.database import MAX_QUERY_CHARS, Shop, checked_limit
from tinyagent.shop.shop_errors import InputTooLongError, ShopError
from tinyagent.shop.tools import shop_tools
from tinyagent.toolkit.typed_tool import TypedTool, tool
from tinyagent.tools import Tool


def cited_search_tool(shop: Shop, limit: int = 3, rerank: bool = True) -> TypedTool:
    """A `searchKnowledge` tool over `shop`'s imported documents whose results carry their sources."""
    limit = checked_limit(limit)  # refused here, not as a failure of every call

    @tool(
        name="searchKnowledge",
        descriptions={"zh": "检索售后政策文档。每条结果都带出处（文档标题 title 和章节 section），回答时请注明出处。"},
        param_descriptions={"zh": {"query": "检索关键词，如 质量问题 退货"}},
        read_only=True,  # a look-up, as the default searchKnowledge is
    )
    def search_knowledge(query: str) -> dict | str:
        """Search the after-sales policy documents. Every result carries its source (document title and
        section): name it in your answer.

        Args:
            query: keywords, e.g. quality problem return
        """
        query = query.strip()
        if not query:
            return error_observation("请提供检索关键词（a search query is needed）", expected="如 质量问题 退货、warranty")
        try:
            passages = shop.search_passages(query, limit, scope="documents", rerank=rerank)
        except InputTooLongError as exc:  # the shop states its limit
            return error_observation(str(exc), expected=f"检索词，最多 {MAX_QUERY_CHARS} 个字符，如 质量问题 退货")
        except ShopError as exc:  # the database is busy: nothing wrong with the query, so no other one is suggested
            return error_observation(str(exc))
        answer: dict = {"query": query, "results": [passage.as_cited() for passage in passages]}
        if not passages:
            answer["hint"] = (
                "没有匹配的段落，换个说法试试（nothing matched: try other words）" if shop.documents()
                else "知识库里还没有导入任何文档（no documents have been imported yet）"
            )
        return answer

    return search_knowledge


def cited_shop_tools(shop: Shop, clock: Clock | None = None) -> list[Tool]:
    """The five shop tools (tools.py's `shop_tools`, in their order), with `cited_search_tool` in place of the default
    searchKnowledge."""
    return [cited_search_tool(shop) if each.name == "searchKnowledge" else each for each in shop_tools(shop, clock)]


def cited_shop_registry(shop: Shop, clock: Clock | None = None) -> ToolRegistry:
    """A `ToolRegistry` of `cited_shop_tools`: the shop agent whose searchKnowledge names its sources."""
    return ToolRegistry(cited_shop_tools(shop, clock))
