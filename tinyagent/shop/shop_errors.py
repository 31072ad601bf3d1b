"""What the shop refuses, as exceptions: raised by the database (database.py) and the document import
(documents.py), turned into error Observations by the tools. A module of their own, so that the two can share
them without importing each other."""

from __future__ import annotations

from tinyagent.errors import TinyAgentError


class ShopError(TinyAgentError):
    """The shop refused a request: the message says why, in words a customer-service agent can pass on."""


class OrderNotFoundError(ShopError, LookupError):
    """No order has this id."""


class RefundNotAllowedError(ShopError):
    """The order exists but its status rules out a refund (cancelled, unpaid, already refunded or returned:
    NON_REFUNDABLE_STATUSES)."""


class ShopReadOnlyError(ShopError):
    """The database cannot be written (a read-only file, folder or disk): it can be read, not changed."""


class ShopWriteError(ShopError):
    """A write failed on the way to the disk (a full disk, an I/O error): nothing of it was kept."""


class ShopBusyError(ShopError):
    """Another program held the database's lock past BUSY_TIMEOUT_SECONDS: a read or write gave up, changing
    nothing; it may be tried again shortly."""


class InputTooLongError(ShopError, ValueError):
    """A query or a field is longer than the shop accepts; the message states the limit."""
