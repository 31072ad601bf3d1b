"""The service described for programs (`GET /openapi.json`, OpenAPI 3.1) and for people (`GET /docs`).

Written out by hand rather than generated: the service has a handful of routes, and each description here is
the sentence a client needs (what to send, what comes back, which error codes). The docs page is made from the
same document on the server, as plain HTML with its style inside: it loads nothing from elsewhere (the usual
Swagger UI pages fetch their script from a CDN, which a classroom offline or a careful reader would not).
"""

from __future__ import annotations

import html
from importlib import metadata

from tinyagent.serving import openai_chat

_ERROR = {"$ref": "#/components/schemas/Error"}
_QUESTION = {"$ref": "#/components/schemas/Question"}


# What any route may answer, whatever it does: a request that cannot be read at all, a host name the service does
# not answer, a method the route does not take (the Allow header names those it does), one client holding too many
# connections, every connection taken.
_ANY_ROUTE = (400, 403, 405, 429, 503)


def _errors(*statuses: int) -> dict:
    said = {400: "the request or its body cannot be read, or lacks what it must hold (the code says which)",
            401: "no API key, or a wrong one (only when the service has one; the approval routes want the operator's "
                 "key when it has one)",
            403: "a host name the service does not answer, a request from another site's page, (with no API key) "
                 "a program of another account of this machine, or (approvals) a caller who is not the operator",
            404: "no such session, turn, approval request or stream, or (the chat route) another model than "
                 "tinyagent-shop",
            405: "a method this path does not take: the Allow header names those it does",
            408: "the body did not arrive in time",
            409: "the request was decided already the other way (an approval), or cannot be done by this service "
                 "(an edit of a team's run)",
            413: "the body is larger than the limit", 415: "the body is not sent as application/json",
            429: "this client holds too many connections already (--max-connections-per-client)",
            503: "the session store is unreachable, the service is stopping, or every connection it may hold is "
                 "taken (--max-connections)",
            504: "the run took longer than its time limit"}
    return {str(status): {"description": said[status], "content": {"application/json": {"schema": _ERROR}}}
            for status in sorted({*statuses, *_ANY_ROUTE})}


def _version() -> str:
    try:
        return metadata.version("tinyagent-course")
    except metadata.PackageNotFoundError:  # run from a source folder that was never installed
        return "0"


def openapi_document() -> dict:
    """The OpenAPI 3.1 description of every route of app.py."""
    answer = {
        "type": "object",
        "required": ["answer", "reason", "ok", "session_id", "turn", "rounds"],
        "properties": {
            "answer": {"type": "string", "description": "what the customer is told"},
            "reason": {"type": "string", "description": "why the run ended: final_answer, fallback, max_steps, timeout, ..."},
            "ok": {"type": "boolean",
                   "description": "true when the run ended with the model's answer (a final answer, or the fallback)"},
            "session_id": {"type": "string", "description": "send it back to continue the conversation"},
            "turn": {"type": ["integer", "null"], "description": "the turn's number in the session (null: not stored)"},
            "rounds": {"type": "integer"},
            "warning": {"type": "string", "description": "why the answer was not stored, if it was not"},
            "trace": {"type": "object", "description": "the run's trace, as Trace.to_json() writes it"},
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "tinyagent: the shop agent as a service (lesson 19)", "version": _version(),
                 "description": "The Bit Mall customer-service agent behind HTTP. A run that would refund an order "
                                "waits for a person's yes: the operator's, on the approval routes (a client's key "
                                "cannot answer them). Without an API key only loopback host names, the --allowed-host "
                                "names and the address it listens on are answered, and of the programs of this "
                                "machine only those of the account that started the service (where the system says "
                                "whose a connection is: Linux); a "
                                "run is a POST with a JSON body and is refused from another site's page."},
        "paths": {
            "/agent/invoke": {"post": {
                "summary": "Run the agent on a question; answer when the run is over, with its whole trace",
                "requestBody": {"required": True, "content": {"application/json": {"schema": _QUESTION}}},
                "responses": {"200": {"description": "the run's answer and trace",
                                      "content": {"application/json": {"schema": answer}}},
                              **_errors(400, 401, 403, 404, 408, 413, 415, 503, 504)}}},
            "/agent/stream": {"post": {
                "summary": "Run the agent on a question; its events as Server-Sent Events while it runs",
                "description": "Blocks of `id:`, `event:` and `data:` (JSON): `start`, one per event of the loop "
                               "(`reply_delta` while the model types, `approval_requested` with its `approval_id`), "
                               "then `end` or `error`. Send the header Last-Event-ID to resume a dropped stream: "
                               "the events after that one come, and the body is not read then.",
                "parameters": [{"name": "Last-Event-ID", "in": "header", "required": False,
                                "schema": {"type": "string"}, "description": "the id of the last event read"}],
                "requestBody": {"required": True, "content": {"application/json": {"schema": _QUESTION}}},
                "responses": {"200": {"description": "the events", "content": {"text/event-stream": {
                    "schema": {"type": "string"}}}}, **_errors(400, 401, 403, 404, 408, 413, 415, 503)}}},
            "/agent/sessions/{session_id}": {"get": {
                "summary": "The turns of a session so far",
                "parameters": [{"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "the session's turns, oldest first", "content": {
                    "application/json": {"schema": {"type": "object"}}}}, **_errors(400, 401, 403, 404, 503)}}},
            "/agent/sessions/{session_id}/turns/{turn}/continue": {"post": {
                "summary": "Continue a turn's run from a person's edit of one round: its Thought, or its tool again",
                "description": "Round `step` of the turn's trace gets the person's `reply` (Thought, Action, Action "
                               "Input) in place of the model's, or (`retry`) runs its tool again, with `input` if "
                               "given; the model carries on from there. The events come as on /agent/stream, from "
                               "that round on, after `start` a `person_edit` event; the run is a new turn of the "
                               "session, and a refund waits for a yes again. Only the last turns this process "
                               "ran are kept for it.",
                "parameters": [{"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}},
                               {"name": "turn", "in": "path", "required": True, "schema": {"type": "integer"}}],
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["step"], "additionalProperties": False, "properties": {
                        "step": {"type": "integer", "minimum": 1, "description": "the round to edit"},
                        "reply": {"type": "string", "description": "the round's reply as the person wants it"},
                        "retry": {"type": "boolean", "description": "true: run the round's tool again"},
                        "input": {"type": "string", "description": "with retry: the Action Input to run it with"}}}}}},
                "responses": {"200": {"description": "the events", "content": {"text/event-stream": {
                    "schema": {"type": "string"}}}}, **_errors(400, 401, 403, 404, 408, 409, 413, 415, 503)}}},
            "/agent/approvals": {"get": {
                "summary": "The refunds waiting for a person's yes (the operator only)",
                "description": "Only the operator may call it: Authorization: Bearer <operator key> (--operator-key), "
                               "or, on a service with no key at all, a request from this machine by the account running "
                               "the service (Linux). A client's key "
                               "gets a 403. Each entry: approval_id, question, tool, input, summary, seconds_left, "
                               "sources (where the refund's order id was read, lesson 25) "
                               "(no session id: that stays with the client that started the session).",
                "responses": {"200": {"description": "every request waiting now", "content": {
                    "application/json": {"schema": {"type": "object", "properties": {
                        "pending": {"type": "array", "items": {"type": "object"}}}}}}},
                    **_errors(401, 403)}}},
            "/agent/approvals/{approval_id}": {"post": {
                "summary": "Answer a refund's approval request: approve it, or decline it (the operator only)",
                "parameters": [{"name": "approval_id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["approve"], "additionalProperties": False,
                    "properties": {"approve": {"type": "boolean"}}}}}},
                "responses": {"200": {"description": "the decision", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"approval_id": {"type": "string"},
                                                     "outcome": {"type": "string"}, "by": {"type": "string"}}}}}},
                              **_errors(400, 401, 403, 404, 408, 409, 413, 415)}}},
            "/v1/chat/completions": {"post": {
                "summary": "The shop agent as an OpenAI-compatible chat model (model tinyagent-shop)",
                "description": "OpenAI's Chat Completions request: the last user message is the question, earlier "
                               "user and assistant messages its history (system messages are not passed on). The "
                               "answer is the assistant's message; the extra field tinyagent holds the reason, "
                               "the rounds and the trace. stream: true sends chat.completion.chunk events and "
                               "data: [DONE]. Stateless: nothing is stored. A refund waits for a yes as on "
                               "every route.",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["model", "messages"], "additionalProperties": False,
                    "description": "Any other field of OpenAI's request is refused (400 unknown_field); of these, "
                                   "the ones not described tune a sampler or a bill and are taken and not used, "
                                   "and tools, tool_choice, response_format, logit_bias, logprobs, modalities "
                                   "and n are refused but for values that ask for nothing more; top_logprobs is "
                                   "refused at any value, as OpenAI takes it only beside logprobs: true.",
                    "properties": {
                        "model": {"type": "string", "const": "tinyagent-shop",
                                  "description": "another model is a 404 model_not_found, as OpenAI answers"},
                        "messages": {"type": "array", "minItems": 1, "items": {"type": "object"}},
                        "stream": {"type": "boolean"},
                        "stream_options": {"type": "object", "description": "include_usage: a usage chunk last"},
                        "max_tokens": {"type": "integer", "description": "the answer is cut to this many tokens "
                                                                         "(finish_reason length)"},
                        "max_completion_tokens": {"type": "integer", "description": "as max_tokens"},
                        **{name: {} for name in openai_chat.ACCEPTED if name not in (
                            "model", "messages", "stream", "stream_options", "max_tokens",
                            "max_completion_tokens")}}}}}},
                "responses": {"200": {"description": "a chat.completion, or its chunks as Server-Sent Events",
                                      "content": {"application/json": {"schema": {"type": "object"}},
                                                  "text/event-stream": {"schema": {"type": "string"}}}},
                              **_errors(400, 401, 403, 404, 408, 413, 415, 503, 504)}}},
            "/v1/models": {"get": {
                "summary": "The one model /v1/chat/completions serves, as OpenAI's model list",
                "responses": {"200": {"description": "the list", "content": {"application/json": {
                    "schema": {"type": "object"}}}}, **_errors(401, 403)}}},
            "/health": {"get": {"summary": "The runs under way and done in this process", "responses": {
                "200": {"description": "the counts", "content": {"application/json": {"schema": {"type": "object"}}}},
                **_errors(403)}}},
            "/": {"get": {"summary": "The live trace page", "responses": {
                "200": {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}},
                **_errors()}}},
            "/docs": {"get": {"summary": "This description, as a page", "responses": {
                "200": {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}},
                **_errors()}}},
            "/openapi.json": {"get": {"summary": "This description, as OpenAPI 3.1", "responses": {
                "200": {"description": "JSON", "content": {"application/json": {"schema": {"type": "object"}}}},
                **_errors()}}},
        },
        "components": {
            "schemas": {
                "Question": {"type": "object", "required": ["query"], "additionalProperties": False, "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 4000,
                              "description": "the customer's question, e.g. 帮我看看订单 88231 的快递到哪了。"},
                    "session_id": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,128}$",
                                   "description": "an id an earlier answer returned, to continue that conversation"}}},
                "Error": {"type": "object", "required": ["error"], "properties": {"error": {
                    "type": "object", "required": ["code", "message"], "properties": {
                        "code": {"type": "string", "description": "for programs: e.g. malformed_json, unknown_session"},
                        "message": {"type": "string", "description": "for people: what is wrong and what to do"}}}}},
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "the client's key when the service was started with "
                                                          "--api-key (every route but /health, /, /docs and "
                                                          "/openapi.json); on the approval routes the operator's, "
                                                          "when it was started with --operator-key"}},
        },
        "security": [{}, {"bearer": []}],
    }


def docs_page(document: dict) -> str:
    """The document as one HTML page: every route, what it takes and what it answers."""
    e = html.escape
    rows = []
    for path, methods in document["paths"].items():
        for method, route in methods.items():
            parts = [(f'<section class="route"><h2><span class="method">{e(method.upper())}</span> '
                      f'<code>{e(path)}</code></h2><p>{e(route["summary"])}</p>')]
            if "description" in route:
                parts.append(f"<p>{e(route['description'])}</p>")
            body = route.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body:
                schema = document["components"]["schemas"]["Question"] if body == _QUESTION else body
                fields = ", ".join(f"<code>{e(name)}</code>" + ("" if name in schema.get("required", ()) else "?")
                                   for name in schema.get("properties", {}))
                parts.append(f"<p>Body (JSON): {fields}</p>")
            answers = "".join(f"<li><b>{e(status)}</b> {e(reply['description'])}</li>"
                              for status, reply in route["responses"].items())
            parts.append(f"<ul>{answers}</ul></section>")
            rows.append("".join(parts))
    info = document["info"]
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{e(info["title"])}</title>'
            '<link rel="icon" href="data:,"><style>body{font:15px/1.5 system-ui,sans-serif;max-width:900px;'
            'margin:0 auto;padding:16px 20px;color:#1f2328}code{font-family:ui-monospace,monospace}'
            '.route{border:1px solid #d0d7de;border-radius:8px;padding:4px 14px;margin:12px 0}'
            '.route h2{font-size:16px}.method{color:#8250df}</style></head><body>'
            f'<h1>{e(info["title"])}</h1><p>{e(info["description"])}</p>'
            '<p>The same as JSON, for programs and code generators: <a href="openapi.json">openapi.json</a>.</p>'
            + "".join(rows) + "</body></html>")
