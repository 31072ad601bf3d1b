"""A model that misbehaves: stop rules (lesson 10) and tolerant reading (lesson 11)."""
