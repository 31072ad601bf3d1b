"""`StopCutter`: stop strings applied to text that arrives in pieces (lesson 14).

A streamed reply comes a few tokens at a time, and a stop string can be split across two pieces:
"...Action Input: 88231\nObserv" then "ation: {...". Looking for "Observation:" in each piece alone
misses it; cutting only at the end releases the invented Observation first. The cutter holds back
just the characters that could be the start of a stop string, until the next piece shows what they are.

Both sides of the API use it: the client (streaming.py) when a server ignores `stop`, and the
classroom server, which must apply `stop` to its own stream the way a real inference server does.
"""

from __future__ import annotations

from collections.abc import Iterable

from tinyagent.chat_result import stop_sequences


class StopCutter:
    """Stop strings applied to text that arrives in pieces, exactly as `cut_at_stop` cuts the whole text.

        cutter = StopCutter(["Observation:"])
        cutter.feed("Action Input: 88231\\nObserv")   # -> "Action Input: 88231\\n"  ("Observ" held back)
        cutter.feed("ation: {...}")                   # -> ""  and cutter.stopped is True

    A piece is released at once, except its end when that end could be the start of a stop string: those
    characters are held back until the next piece shows what they are. So "Observ" + "ation:" is caught,
    and nothing of a stop string ever reaches the reader. Joined, everything `feed` and `finish` return
    equals `cut_at_stop(whole_text, stop)[0]`, however the text was split.
    """

    def __init__(self, stop: Iterable[str] | str | None):
        self.stop = tuple(s for s in stop_sequences(stop) if s)  # an empty one would stop before the first character
        self._longest = max((len(s) for s in self.stop), default=0)
        self._firsts = frozenset(s[0] for s in self.stop)
        self.held = ""  # seen, not released yet: it may be the start of a stop string
        self.stopped = False

    def feed(self, piece: str) -> str:
        """Take the next piece; return the text that is now safe to release (maybe "")."""
        if self.stopped:
            return ""
        text = self.held + piece
        at = self._earliest_stop(text)
        maybe = self._earliest_possible_start(text)
        # A stop string is found; it is the cut unless a longer one may still be completing before it.
        if at is not None and (maybe is None or at <= maybe):
            self.stopped, self.held = True, ""
            return text[:at]
        keep = len(text) if maybe is None else maybe
        self.held = text[keep:]
        return text[:keep]

    def finish(self) -> str:
        """The text is over: what was held back is released, unless it holds a stop string."""
        text, self.held = self.held, ""
        if self.stopped:
            return ""
        at = self._earliest_stop(text)
        if at is not None:
            self.stopped = True
            return text[:at]
        return text

    def _earliest_stop(self, text: str) -> int | None:
        found = [at for at in (text.find(s) for s in self.stop) if at >= 0]
        return min(found) if found else None

    def _earliest_possible_start(self, text: str) -> int | None:
        """The first position from which the rest of `text` is the beginning of a stop string, not all of
        it: a stop string may be starting there, and the next piece will tell."""
        firsts = self._firsts
        for at in range(max(len(text) - self._longest + 1, 0), len(text)):
            if text[at] not in firsts:  # no stop string starts with this character: the common case
                continue
            rest = text[at:]
            if any(len(s) > len(rest) and s.startswith(rest) for s in self.stop):
                return at
        return None
