"""The tools a model calls: typed tools and their JSON Schemas (lesson 07), and real tools with a person's yes before a side effect (lesson 15)."""
