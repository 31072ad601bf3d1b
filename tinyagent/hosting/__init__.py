"""The servers the course runs (a server in a thread, its address, the account a connection on this machine comes
from, clean stops on signals) and each learner's copy of the lessons."""
