"""A learner's JupyterLab server, as `python -m jupyterhub.singleuser` starts it, less the hub's database code.

    RUNTIME/bin/python deploy/jupyterhub/learner_server.py [jupyterhub-singleuser's options]

jupyterhub_config.py starts every learner's server this way. JupyterHub's single-user code runs unchanged:
it signs the learner in through the hub (OAuth, the server's token, activity reports). Importing it also
imports, for a few names it never uses in a learner's server, the hub's own database code: SQLAlchemy and
the hub's tables, roles, page handlers and metrics, about 35 MiB in every learner's server (more than a
sixth of a learner's memory in a room; benchmarks/jupyterhub_room.py measures it).

So, while `jupyterhub.singleuser` is imported, those modules (HUB_ONLY) are stand-ins. Each holds only the
names the import itself takes from it (NAMES_AT_IMPORT), harmless where they are used; any other name says
what happened instead of acting. Once the import is done the stand-ins leave `sys.modules`, so anything
that imports SQLAlchemy later gets the real library. If the import fails with the stand-ins (another
JupyterHub version may take other names), the server starts the ordinary way, with one line on stderr.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

# The hub's database code, which a learner's server never runs.
HUB_ONLY = ("sqlalchemy", "jupyterhub.orm", "jupyterhub.roles", "jupyterhub.handlers", "jupyterhub.metrics")


class _NeverRaised(Exception):
    """Stands for SQLAlchemyError: no SQLAlchemy runs here, so nothing raises it."""


class _NoSuchHandler:
    """Stands for the hub's HealthCheckHandler: a learner's server has none, so no handler is one."""


def _record_nothing(handler) -> None:
    """Stands for the hub's per-request metrics, which belong to the hub's own /metrics page."""


# What importing jupyterhub.singleuser (JupyterHub 5 and 6) takes from HUB_ONLY, and where:
NAMES_AT_IMPORT = {
    "sqlalchemy.exc": {"SQLAlchemyError": _NeverRaised},  # utils.py: caught in a hub-side helper
    "jupyterhub.handlers.pages": {"HealthCheckHandler": _NoSuchHandler},  # log.py: quieter health checks
    "jupyterhub.metrics": {"prometheus_log_method": _record_nothing},  # log.py: after logging each request
}


class HubOnlyModule(types.ModuleType):
    """A stand-in for one of HUB_ONLY's modules: any name but NAMES_AT_IMPORT's is an error that says why."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"{self.__name__}.{name}: this learner's server was imported without the hub's database code "
            "(deploy/jupyterhub/learner_server.py); start it with `python -m jupyterhub.singleuser` instead"
        )


def _is_hub_only(name: str) -> bool:
    return any(name == top or name.startswith(top + ".") for top in HUB_ONLY)


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a stand-in for HUB_ONLY's modules and NAMES_AT_IMPORT's, and for nothing else: any other
    submodule of theirs is not found (so `from sqlalchemy.exc import Other` fails, as it should)."""

    def find_spec(self, name, path=None, target=None):
        if name in HUB_ONLY or name in NAMES_AT_IMPORT:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = HubOnlyModule(spec.name)
        module.__dict__.update(NAMES_AT_IMPORT.get(spec.name, {}))
        return module

    def exec_module(self, module) -> None:
        module.__path__ = []  # a package, so that `import sqlalchemy.exc` finds its stand-in too


def _forget_hub_only() -> None:
    """Take the stand-ins out of sys.modules and off their parent packages: a later import gets the real one."""
    for name in [n for n in sys.modules if _is_hub_only(n)]:
        module = sys.modules.pop(name)
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and getattr(sys.modules[parent], child, None) is module:
            delattr(sys.modules[parent], child)


def import_singleuser() -> types.ModuleType:
    """`jupyterhub.singleuser`, imported with HUB_ONLY's modules stood in for (see the module's docstring)."""
    stand_ins = _StandIns()
    sys.meta_path.insert(0, stand_ins)
    try:
        from jupyterhub import singleuser
    except Exception as exc:  # noqa: BLE001 - whatever broke, the ordinary import still works
        for name in [n for n in sys.modules if n == "jupyterhub" or n.startswith("jupyterhub.")]:
            del sys.modules[name]
        sys.meta_path.remove(stand_ins)
        _forget_hub_only()
        print(f"learner_server: starting with the hub's database code after all ({type(exc).__name__}: {exc})",
              file=sys.stderr, flush=True)
        from jupyterhub import singleuser
    else:
        sys.meta_path.remove(stand_ins)
        _forget_hub_only()
    return singleuser


if __name__ == "__main__":
    sys.exit(import_singleuser().main())
