"""pytest start-up for the whole project (unit tests and notebooks under nbval alike).

Tests and notebook checks always use the offline classroom model: a learner's .env or exported key
never changes a test. Kernels that nbval starts inherit this environment.
"""

import os

os.environ["TINYAGENT_OFFLINE"] = "1"
# The real local model's cells (lessons 08, 18, 23, A1) on one llama.cpp thread: the run's other worker keeps a
# core busy, and two threads wait for each other at every token (lesson 18's real-model cell: 12.3 s on two
# threads beside one busy process, 7.7 s on one; 4.9 and 5.1 s on a quiet machine).
os.environ.setdefault("TINYAGENT_LOCAL_MODEL_THREADS", "1")
