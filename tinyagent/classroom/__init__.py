"""The classroom model: a deterministic, offline, OpenAI-compatible model for lessons and tests.

It is a teaching instrument, not a language model: a scripted shop assistant behind a real HTTP
endpoint, so every lesson runs the same code path a real provider would, with the same output.
"""
