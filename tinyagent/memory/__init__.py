"""What the agent remembers: sessions, their stores and long-term facts (lesson 12), and the context budget (lesson 13)."""
