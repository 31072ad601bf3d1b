"""deploy/jupyterhub/learner_server.py: JupyterHub's single-user server without the hub's database code.

Each case imports it in a fresh Python (a module once imported stays imported), the course's own .venv,
which has the same JupyterHub as the learners' runtime. That the server still signs learners in through
the hub, runs their kernels and keeps SQLAlchemy out of their processes is tests/test_jupyterhub.py's part.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from tests.hub_server import ROOT

pytest.importorskip("jupyterhub")

DEPLOY = ROOT / "deploy" / "jupyterhub"


def run(code: str) -> subprocess.CompletedProcess:
    prologue = f"import sys\nsys.path.insert(0, {str(DEPLOY)!r})\nimport learner_server\n"
    return subprocess.run([sys.executable, "-c", prologue + textwrap.dedent(code)],
                          check=False, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_single_user_server_imports_without_sqlalchemy_or_the_hubs_tables():
    done = run("""
        singleuser = learner_server.import_singleuser()
        import jupyterhub.singleuser.extension, jupyterhub.services.auth
        print(callable(singleuser.main), hasattr(jupyterhub.services.auth, "HubOAuth"))
        print(sorted(n for n in sys.modules if n.split(".")[0] == "sqlalchemy" or n in learner_server.HUB_ONLY))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["True True", "[]"]
    assert done.stderr == ""


def test_a_stand_in_used_for_anything_else_says_what_it_is():
    done = run("""
        learner_server.import_singleuser()
        import jupyterhub.scopes
        try:
            jupyterhub.scopes.orm.User
        except AttributeError as exc:
            print(exc)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("jupyterhub.orm.User: this learner's server was imported without the hub's "
                                  "database code (deploy/jupyterhub/learner_server.py)")


def test_sqlalchemy_imported_afterwards_is_the_real_library():
    done = run("""
        learner_server.import_singleuser()
        import sqlalchemy.orm, jupyterhub.orm
        print(sqlalchemy.orm.Session.__module__, jupyterhub.orm.User.__tablename__)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["sqlalchemy.orm.session", "users"]


def test_a_jupyterhub_that_takes_other_names_starts_the_ordinary_way_with_one_line():
    # As a JupyterHub release that imports a name the stand-ins do not hold would: here, none do.
    done = run("""
        learner_server.NAMES_AT_IMPORT = {}
        singleuser = learner_server.import_singleuser()
        import jupyterhub.utils
        print(callable(singleuser.main), jupyterhub.utils.SQLAlchemyError.__module__)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "sqlalchemy.exc"]
    assert re.match(r"learner_server: starting with the hub's database code after all \((ModuleNotFound|Import)Error: ",
                    done.stderr), done.stderr
    assert len(done.stderr.splitlines()) == 1
