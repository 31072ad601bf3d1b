"""pytest start-up for the whole project (unit tests and notebooks under nbval alike).

Tests and notebook checks always use the offline classroom model: a learner's .env or exported key
never changes a test. Kernels that nbval starts inherit this environment.
"""

import os

os.environ["TINYAGENT_OFFLINE"] = "1"
