"""Architectures around the loop: plans, reflection and skills (lesson 17), several agents (21), a tree of thoughts (22)."""
