"""The servers the course runs (a server in a thread, its address, clean stops on signals) and each learner's copy of the lessons."""
