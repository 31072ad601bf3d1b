"""Lesson 03 (one raw HTTP call): an unknown model's error, and the system prompt's share."""

from __future__ import annotations

import decimal
import numbers
import re
import unicodedata
from typing import Any

from tinyagent.checks.generated import Spec
from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, _run, grades, said
from tinyagent.errors import AuthenticationError, BadRequestError, LlmError, NotFoundError


@grades("Exercise 1", spec=Spec(fixed=(
    "nothing to generate: the answer is what one request did (its status, the exception LlmClient raised) and "
    "where to look first; compared with the error's own status, which must be the unknown model's (404, a "
    "NotFoundError; not the key's 401), and the part named must be the body")))
def check_unknown_model(status: int | None, error: BaseException | None, check_first: str | None) -> None:
    """03, exercise 1: the status by hand, the error LlmClient raises, and which part of the request to check."""
    exercise = "Exercise 1"
    if status is None and error is None and check_first is None:
        return _not_attempted(exercise, "Set status, error (the exception you caught) and check_first.")
    if not isinstance(status, int) or not 400 <= status < 500:
        _fail(exercise, f"status={_brief(status, 40)}: the server refuses a request it cannot serve with a 4xx "
                        "status (an int, from response.status_code)")
    if not isinstance(error, LlmError):
        got = _brief(error, 80)
        if isinstance(error, str) or (isinstance(error, type) and issubclass(error, BaseException)):
            # its text, or its class, looks right at a glance: say which it is
            got += (f" (its {'text' if isinstance(error, str) else 'class'}: keep the exception itself, "
                    "except LlmError as exc: error = exc)")
        _fail(exercise, f"error should be the exception LlmClient raised (a tinyagent.LlmError), got {got}")
    if getattr(error, "status", None) != status:
        _fail(exercise, f"by hand you got {status}, but the error says {getattr(error, 'status', None)}: "
                        "they are answers to the same request")
    spec = ('the spec says: send the body with "model": "classroom-xl", then make the same mistake through '
            'LlmClient(settings.api_url, settings.api_key, "classroom-xl")')
    if isinstance(error, AuthenticationError):
        _fail(exercise, f"HTTP {status}, {type(error).__name__}: that is the key's error (a wrong or missing key), "
                        f"not the unknown model's (a 404); {spec}")
    if _path_not_found(error):
        _fail(exercise, f"HTTP {status}, {type(error).__name__}, but the server said {_brief(_server_said(error), 60)}: "
                        "that 404 is the URL's (a path it does not serve), not the unknown model's; send both "
                        "requests to the lesson's URL, only the model changed")
    if not _unknown_model(error):
        _fail(exercise, f"HTTP {status}, {type(error).__name__} ({_brief(said(error), 120)}): that is not the unknown "
                        f"model's error (the lesson's diagram: unknown model: 404, malformed body: 400); {spec}")
    if not isinstance(check_first, str):
        _fail(exercise, f"check_first={_brief(check_first, 40)}: name one part of the request in a string: the URL, "
                        "the headers or the body?")
    # "body", "the (request) body", or the body with its field named (body["model"], body.model, the body's "model"
    # field); one part, not two
    # ("the JSON body" too: the body is JSON)
    named_body = r"(the )?((request|json) ){0,2}body( ?\[ ?[\"']model[\"'] ?\]|\.model|'s [\"']?model[\"']? field)?"
    # written in quotes or backticks, or as a sentence with its full stop (. ! 。), it names the same part; full-width
    # letters (ｂｏｄｙ, typed with a Chinese input method on) read as the letters they are
    named = unicodedata.normalize("NFKC", check_first).strip().strip("\"'`.!。").strip().lower()
    if not re.fullmatch(named_body, named):
        if re.search(r"\bbody\b", named) and not re.search(r"url|header", named):
            _fail(exercise, f"check_first={_brief(check_first, 40)} names the body, the right part, in more words: "
                            "give the one word \"body\" (the spec's choices: \"url\", \"headers\" or \"body\").")
        _fail(exercise, f"check_first={_brief(check_first, 40)}: the error names the model, so the URL and the key "
                        "worked; which part of the request holds the \"model\" field? Give one of \"url\", "
                        "\"headers\" or \"body\".")
    return _passed(exercise, f"HTTP {status}, {type(error).__name__}: the URL and the key were right, "
                             "the body's \"model\" field was not.")


# Some providers answer an unknown model with a 400, in words like "Model Not Exist" or "模型不存在". A 400 about
# another mistake may name the model too ("Invalid type for 'model': expected a string."), so the words must say
# the model is unknown, not merely name it.
_NAMES_THE_MODEL = re.compile(r"model|模型", re.IGNORECASE)
_SAYS_UNKNOWN = re.compile(r"not exist|n't exist|not found|unknown|no such|not supported|unsupported|invalid model\b|"
                           r"not a valid model|不存在|未找到|不支持", re.IGNORECASE)


# "model" as a word of its own: a path a server lists in its 404 ("GET /v1/models") names no model.
_THE_WORD_MODEL = re.compile(r"\bmodel\b|模型", re.IGNORECASE)


def _server_said(error: LlmError) -> str:
    """The server's own words in an error LlmClient raised (after "Server said: "), or "" when it gave none."""
    return said(error).partition("Server said: ")[2].strip()


def _path_not_found(error: LlmError) -> bool:
    """Whether a 404 is the URL's, not the model's: a 404 answers an unknown path as well as an unknown model, and
    LlmClient's message names the model either way, so it is told by the server's words, which name no model
    ("Unknown path /v1/v2/chat/completions", "404 page not found", {"detail": "Not Found"})."""
    server = _server_said(error)
    return isinstance(error, NotFoundError) and bool(server) and not _THE_WORD_MODEL.search(server)


def _unknown_model(error: LlmError) -> bool:
    """Whether `error` is a server's answer to an unknown model: a 404 (NotFoundError), as the classroom and most
    providers send, or a 400 whose message says the model is unknown, as some providers send instead."""
    if isinstance(error, NotFoundError) and error.status == 404:
        return True
    if not (isinstance(error, BadRequestError) and error.status == 400):
        return False
    message = said(error)
    return bool(_NAMES_THE_MODEL.search(message) and _SAYS_UNKNOWN.search(message))


def _prompt_tokens(exercise: str, llm: Any, messages: list[dict]) -> int:
    """The prompt_tokens `llm` reports for `messages` (a one-token reply): what the share is measured with."""
    reply = _run(exercise, "llm.chat(messages)", llm.chat, messages, max_tokens=1)
    usage = getattr(reply, "usage", None)
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        _fail(exercise, f"llm.chat(messages) reported no prompt_tokens ({_brief(usage, 40)}): pass the lesson's llm")
    return tokens


def _outside_the_whole(share: float, with_prompt: int, without_prompt: int) -> str:
    """Why a share above 1 or below 0 is none: what it most likely is, from the two counts measured. The share is
    of the first round's whole input, so it lies between 0 and 1."""
    prompt = with_prompt - without_prompt
    whole = "the share is of the first round's whole input (the prompt_tokens with the system prompt)"
    if _near(share, 100 * prompt / with_prompt):
        return f"share={share:.4g} is a percentage: give a fraction between 0 and 1 (95% is 0.95)"
    if _near(share, prompt):
        return f"share={share:.4g} is the system prompt's count of tokens: {whole}, so divide by that"
    if _near(share, prompt / without_prompt):
        return f"share={share:.4g} is over the prompt_tokens without the system prompt: {whole}"
    if _near(share, -prompt / with_prompt):
        return (f"share={share:.4g} is negative: the system prompt's tokens are (with the prompt - without), not the "
                "other way round")
    return f"share={share:.4g} is not between 0 and 1: {whole}, and the system prompt is a part of it"


def _near(value: float, target: float) -> bool:
    """Within 1% of `target` (0.01 for a target below 1): a value rounded as a learner would still counts."""
    return abs(value - target) <= 0.01 * max(1.0, abs(target))


@grades("Exercise 2", spec=Spec(fixed=(
    "nothing to generate: the answer is one measured number; compared with the share the check measures on the "
    "learner's own model and messages (with and without the system prompt), within 0.01")))
def check_prompt_share(share: float | None, llm: Any, messages: list[dict]) -> None:
    """03, exercise 2: the system prompt's share of the first round's prompt tokens, measured on `llm`."""
    exercise = "Exercise 2"
    if share is None:
        return _not_attempted(exercise, "Set share to a number between 0 and 1.")
    # Any real number: 0.91, Fraction(305, 336), Decimal("0.91"); not True, not a string.
    if not isinstance(share, (numbers.Real, decimal.Decimal)) or isinstance(share, bool):
        _fail(exercise, f"share should be a number between 0 and 1, got {_brief(share, 60)}")
    try:
        share = float(share)
    except (ValueError, OverflowError):  # Decimal("sNaN"), a Fraction too large for a float
        _fail(exercise, f"share should be a number between 0 and 1, got {_brief(share, 60)}")
    # Measured here, on the same model, so the check holds whatever the prompt's length or the tokenizer.
    if not callable(getattr(llm, "chat", None)):
        _fail(exercise, f"pass the lesson's llm (an LlmClient) as the second argument, got {_brief(llm, 40)}")
    if (isinstance(messages, list) and messages and all(isinstance(m, dict) for m in messages)
            and messages[0].get("role") == "user" and not any(m.get("role") == "system" for m in messages)):
        # The check cell passes the lesson's own `messages`: without its system message, the list was changed in
        # place (pop, del, remove) to send it without the prompt.
        _fail(exercise, "pass the lesson's messages whole: they have lost their system message, so your code removed "
                        "it from the list itself (pop, del). Run the cell that builds messages again, and send "
                        "messages[1:] (a new list) for the count without the prompt.")
    if not (isinstance(messages, list) and len(messages) >= 2 and all(isinstance(m, dict) for m in messages)
            and messages[0].get("role") == "system"):
        _fail(exercise, "pass the lesson's messages as the third argument: the system prompt first, then the "
                        f"question; got {_brief(messages, 40)}")
    with_prompt, without_prompt = (_prompt_tokens(exercise, llm, sent) for sent in (messages, messages[1:]))
    truth = (with_prompt - without_prompt) / with_prompt
    if abs(share - truth) <= 0.01:
        return _passed(exercise, f"the system prompt is {truth:.0%} of the first round's input, "
                                 "and it is sent again every round.")
    if not 0 <= share <= 1:
        _fail(exercise, _outside_the_whole(share, with_prompt, without_prompt))
    if abs(share - (1 - truth)) <= 0.01 or abs(share - without_prompt / with_prompt) <= 0.01:
        _fail(exercise, f"share={share:.2f} is the part that is NOT the system prompt: the system prompt's "
                        "tokens are the difference between the two counts")
    if abs(share - truth) <= 0.05 and share == round(share, 1):
        _fail(exercise, f"share={share:g} is the share, {truth:.3f}, rounded too far: the check allows 0.01, so "
                        "give two decimals or more")
    # measured on another conversation (the English round), or counted another way (total_tokens, characters)
    _fail(exercise, f"share={share:.2f} is not what the two prompt_tokens counts of `messages` give (the refund round, "
                    "with and without its system message); share = (with the prompt - without) / with the prompt")
