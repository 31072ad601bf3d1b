"""The head of an HTTP request, read as RFC 9112 asks, by the course's servers built on http.server (the classroom
model, classroom/server.py; lesson 15's weather API, toolkit/weather_api.py), and the host a request names, which
the service of lesson 19 reads the same way (serving/app.py).

http.server alone skipped none of these: it closed without a word on an empty line before the request line, held a
TLS handshake sent to its plain-HTTP port until its read timeout, answered headers cut short by the end of the stream
as if whole, ended the headers at the first line that was no "Name: value" (and read the request's body as the next
request), and read a Host header as written (a user in it, or anything after an IPv6 address, passed for a name).
"""

from __future__ import annotations

import io
import json
import re
from email.errors import FirstHeaderLineIsContinuationDefect, MissingHeaderBodySeparatorDefect
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from tinyagent.chat_result import finite_float, no_json_constant
from tinyagent.safe_text import utf8_json_text
from tinyagent.tools import keys_once

TLS_HANDSHAKE = b"\x16"  # the first byte of a TLS connection: a handshake record, the client's ClientHello
# What a client that took a plain-HTTP server for HTTPS is told.
PLAIN_HTTP_ONLY = "This server speaks plain HTTP, and the client began a TLS handshake: use http://, not https://."
EMPTY_LINES_IGNORED = 4  # before a request line: RFC 9112 §2.2 asks a server to ignore at least one
# What the email package, which reads a request's headers for http.server, notes of a line that is no header
HEADER_LINE_DEFECTS = (MissingHeaderBodySeparatorDefect, FirstHeaderLineIsContinuationDefect)


class HeadReader(io.BufferedReader):
    """A connection's buffered reader that keeps the last line it read: http.server ends a request's headers at an
    empty line and at the end of the stream alike, and only `last_line` tells which it was (b"": the end)."""

    last_line = b""

    def readline(self, size: int | None = -1) -> bytes:
        self.last_line = super().readline(size)
        return self.last_line


class HeadCheckingHandler(BaseHTTPRequestHandler):
    """BaseHTTPRequestHandler reading a request's head as RFC 9112 asks. Its rfile must be a HeadReader, and its
    `handle` must call `refused_tls_hello()` first.

        an empty line before the request line     skipped (at most EMPTY_LINES_IGNORED; a 400 after more)
        a request line of spaces                  a 400 (the base class closed without a word)
        a request line with no HTTP version        a 400 (HTTP/0.9's bare answer has no status, no headers)
        headers cut short by the end of the stream a 400, never an answer to the part that came
        a header line that is no Name: value      a 400 (the base class ended the headers there, and dropped the
                                                  rest unread: a Content-Length lost made the body a request)
        a CR, LF or NUL in a header's value        a 400 (an obsolete folded line kept its line break)
        a TLS handshake on the plain-HTTP port    a 400 that says to use http://
        the Server header                         `server_version`, not the Python version
        Expect: 100-continue                      "100 Continue" only when the handler calls send_continue(),
                                                  before it reads the body; a refusal from the head is sent alone
    """

    continue_owed = False  # the request asked "Expect: 100-continue", and no "100 Continue" has gone out yet

    def handle_expect_100(self) -> bool:
        # The base class sent "100 Continue" as soon as it read the head, so a request then refused from its head
        # alone (an unknown path, a body too large, no key) was first invited to send its body. RFC 9110 §10.1.1: the
        # interim answer asks for the body, and a server that will not read it sends the final answer instead.
        self.continue_owed = True
        return True

    def send_continue(self) -> None:
        """Send the "100 Continue" the request asked for, if it did, now that its body is going to be read. Flushed
        at once: a buffered wfile held it until the final answer, and the client waited for it in vain."""
        if self.continue_owed:
            self.continue_owed = False
            self.send_response_only(HTTPStatus.CONTINUE)
            self.end_headers()
            self.wfile.flush()

    def version_string(self) -> str:
        return self.server_version  # not the Python version: nobody needs it, and it varies

    def refused_tls_hello(self) -> bool:
        """Whether the connection opened with a TLS handshake, from a client given https:// for this plain-HTTP
        server; it has its 400 now if so."""
        try:
            first = self.rfile.peek(1)[:1]
        except OSError:  # out of time, or reset: handle_one_request meets the same and ends it as always
            return False
        # A ClientHello holds no line break for a request line to end on: it was held until the read timeout, then
        # closed without a word.
        if first != TLS_HANDSHAKE:
            return False
        self._refuse_unparsed(HTTPStatus.BAD_REQUEST, PLAIN_HTTP_ONLY)
        return True

    def parse_request(self) -> bool:
        self.continue_owed = False  # a keep-alive connection's next request asks afresh
        # RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request line; the base class took
        # it for a request line of no words, and closed the connection without an answer.
        for _ in range(EMPTY_LINES_IGNORED):
            if self.raw_requestline not in (b"\r\n", b"\n"):
                break
            self.raw_requestline = self.rfile.readline(65537)
        if not self.raw_requestline:  # the client closed after its empty lines: nobody to answer
            self.close_connection = True
            return False
        # The base class closes without a word on a request line of no words: more empty lines than are skipped,
        # or a line of spaces.
        if not self.raw_requestline.strip():
            self._refuse_unparsed(HTTPStatus.BAD_REQUEST, "The request line is missing: a request starts with a line "
                                                          "such as GET /path HTTP/1.1, after at most "
                                                          f"{EMPTY_LINES_IGNORED} empty lines.")
            return False
        if len(self.raw_requestline) > 65536:  # as handle_one_request refuses a first line this long
            self._refuse_unparsed(HTTPStatus.REQUEST_URI_TOO_LONG)
            return False
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":  # "GET /health" alone: the base class answers it with a bare body
            self.request_version = "HTTP/1.0"  # so that the refusal has its status line and headers
            self.send_error(HTTPStatus.BAD_REQUEST, "A request line needs its HTTP version: GET /path HTTP/1.1.")
            return False
        # The base class ends the headers at the end of the stream too, and the part that came was answered as if whole.
        if self.rfile.last_line == b"":
            self.send_error(HTTPStatus.BAD_REQUEST, "The request's headers ended with the connection, not with an "
                                                    "empty line: send the whole request.")
            return False
        # The base class reads the headers with the email package, which ends them at the first line that is no
        # "Name: value" (a space before the colon, no colon, a bare CR) and keeps the lines after it as a body nobody
        # reads: a Content-Length among them was lost, and the request's body then read as the next request. (Its
        # other defects are about a MIME body, which a request's head has not: a multipart Content-Type has some.)
        if any(isinstance(defect, HEADER_LINE_DEFECTS) for defect in self.headers.defects):
            self.send_error(HTTPStatus.BAD_REQUEST, "A header line is not Name: value (a space before the colon, a "
                                                    "line without one, or a bare CR): send each header on a line "
                                                    "of its own, as Name: value.")
            return False
        # RFC 9110 §5.5: CR, LF and NUL are never part of a value; a folded line (RFC 9112 §5.2) kept its line break.
        if any(character in value for value in self.headers.values() for character in "\r\n\0"):
            self.send_error(HTTPStatus.BAD_REQUEST, "A header's value holds a line break or a NUL (a folded line, "
                                                    "perhaps): send each header on one line.")
            return False
        return True

    def _refuse_unparsed(self, status: HTTPStatus, message: str | None = None) -> None:
        """send_error for a request line not parsed yet, with what the answer reads set as handle_one_request sets it
        for its own 414."""
        self.requestline = self.request_version = self.command = ""
        self.send_error(status, message)

    def authority(self) -> str:
        """The host (and port) the request names: its target's authority when the target is a whole URL
        ("GET http://host:port/path": RFC 9112 §3.2.2 says a server then uses it and ignores Host), else its Host
        header; "" for neither, or a target urlsplit cannot read."""
        try:
            target = urlsplit(self.path)
        except ValueError:
            return ""
        return target.netloc if target.scheme else self.headers.get("Host") or ""


def host_name(host: str) -> str:
    """The name in a Host header (or a URL's authority), without its port, lower-cased: "[::1]:8000" -> "::1",
    "Shop.LAN.:80" -> "shop.lan". "" for a value no client sends for a host, which names none: one with a user
    ("127.0.0.1:8000@evil.example" names evil.example to a URL parser), anything after an IPv6 address but its port
    ("[::1].evil.example"), a port that is no number."""
    text = host.strip().lower()
    if text.startswith("["):
        address, _, after = text[1:].partition("]")
        return address if re.fullmatch(r"(:[0-9]*)?", after) else ""
    if "@" in text:
        return ""
    if text.count(":") == 1:
        text, _, port = text.partition(":")
        if not re.fullmatch(r"[0-9]*", port):
            return ""
    return text.rstrip(".")


def origin_host(origin: str) -> str | None:
    """The host:port of an Origin header, lower-cased; None for one no page sends ("http://[" makes urlsplit raise).
    Its scheme is not compared: no page of another scheme can be served on a server's own host and port, and behind
    a proxy that ends TLS (JupyterHub's) the server does not know the scheme its pages were fetched with."""
    try:
        return urlsplit(origin).netloc.lower()
    except ValueError:
        return None


def other_site(fetch_site: str | None, origin: str | None, host: str) -> str | None:
    """Who sent a request, when a browser says it is a page of another site than `host` (the host:port the request
    names), else None: "another site (cross-site)" from its Sec-Fetch-Site, "the page of 'http://...'" from its
    Origin. A browser sends these even with a simple request (an <img>'s GET, a form's POST) it lets any page send
    anywhere without asking; programs (requests, curl) send neither."""
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return f"another site ({fetch_site[:40]})"
    if origin is not None and origin_host(origin) != host.lower():
        return f"the page of {origin[:80]!r}"
    return None


def request_json(raw: bytes) -> object:
    """A request's JSON body as the course's servers read it (the classroom model's and lesson 19's service): UTF-8
    only (UnicodeDecodeError), each key of an object once (tools.RepeatedKey: Python would keep the last, another
    reader the first), and no number JSON lacks, NaN, Infinity or one past a float (chat_result.NotJsonNumber);
    json.JSONDecodeError when it is no JSON, RecursionError when it nests deeper than the parser goes. Each server
    says these in its own words."""
    return json.loads(utf8_json_text(raw), parse_constant=no_json_constant, parse_float=finite_float,
                      object_pairs_hook=keys_once)
