"""How the model is asked and how its replies are read: prompt variants (08), native function calling (09), streaming (14), constrained decoding (23)."""
