"""The customer's request apart from the instructions about the answer's format that a client appends.

A structured-output library adds its own sentences to the user's message ("Return the correct JSON response
within a ```json codeblock, not the JSON schema."). A model reads them as how to answer, not as what is asked;
read as the request, "return the" would sound like a refund. So the sentences that speak of the answer's format
(a format word and an instruction, or an instruction about the reply itself) are set apart before the request's
intent is read. A message that is nothing but such sentences is left whole: then they are the request.
"""

from __future__ import annotations

import re

# A sentence ends at . ! ? followed by white space or the line's end (so 19.99, v2.0 and example.com stay inside
# it), at 。！？, or at a line break: the shortest run of a line's characters up to the first of those.
_SENTENCE = re.compile(r"[^\n]*?(?:[.!?]+(?=\s|$)|[。！？]+|$)", re.MULTILINE)
_FORMAT = re.compile(r"\bjson\b|```|\bschema\b|\byaml\b|\bxml\b|\bmarkdown\b|\bcode ?block\b|\bformat(?:ted)?\b|"
                     r"格式|代码块", re.IGNORECASE)
_INSTRUCTION = re.compile(r"\b(?:return|respond|reply|answer|output|give|send|wrap|write|use|format|provide|"
                          r"put|make sure|must|should|only)\b|返回|输出|回答|请用|使用|必须|只", re.IGNORECASE)


def is_format_instruction(sentence: str) -> bool:
    """True for a sentence that tells the model how to write its answer ("Return it as JSON.")."""
    return bool(_FORMAT.search(sentence) and _INSTRUCTION.search(sentence))


def without_format_instructions(text: str) -> str:
    """`text` without its sentences about the answer's format (the rest exactly as written); `text` itself when
    it has none, or nothing else."""
    rest, end = [], 0
    for sentence in _SENTENCE.finditer(text):
        if is_format_instruction(sentence.group()):
            rest.append(text[end:sentence.start()])
            end = sentence.end()
    if end == 0:
        return text
    kept = ("".join(rest) + text[end:]).strip()
    return kept if kept else text
