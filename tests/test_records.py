"""`@record` (records.py) must behave as the dataclass it stands for: the same class written twice, once with
@dataclass and once with @record, gives the same repr, ==, hash, immutability, replace/asdict/pickle/copy
results and __init__ signature; and every record in the package is made the way its declaration says."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
import pkgutil
import sys
import textwrap
import types
from dataclasses import field

import pytest

import tinyagent
from tinyagent import records
from tinyagent.records import record

# Class bodies written once and decorated twice. Each uses something a dataclass treats specially.
BODIES = {
    "plain": """
        class Point:
            x: int
            y: int = 0
    """,
    "defaults and factories": """
        class Basket:
            owner: str
            items: list = field(default_factory=list)
            note: str | None = None
    """,
    "fields kept out": """
        class Secret:
            name: str
            key: str = field(default="", repr=False)
            seconds: float = field(default=0.0, compare=False)
            tag: str = field(default="", hash=False)
    """,
    "class variables and kw_only": """
        class Kind:
            kind: ClassVar[str] = "kind"
            step: int
            agent: str = field(default="", kw_only=True)
    """,
    "init=False and __post_init__": """
        class Normalized:
            text: str
            length: int = field(init=False, default=0)

            def __post_init__(self):
                object.__setattr__(self, "text", self.text.strip())
                object.__setattr__(self, "length", len(self.text))
    """,
    "init=False with a factory, and a field named self": """
        class Odd:
            self: int
            seen: list = field(init=False, default_factory=list)
            tags: dict = field(default_factory=dict, kw_only=True)
    """,
    "own __eq__ and __hash__": """
        class ById:
            id: str
            label: str = ""

            def __eq__(self, other):
                return isinstance(other, ById) and other.id == self.id

            def __hash__(self):
                return hash(self.id)
    """,
    "own __eq__ only": """
        class Loose:
            id: str

            def __eq__(self, other):
                return getattr(other, "id", None) == self.id
    """,
}

OPTIONS = [
    ({"frozen": True}, {}),
    ({}, {"frozen": False}),
    ({"frozen": True, "repr": False}, {"repr": False}),
    ({"frozen": True, "eq": False}, {"eq": False}),
    ({"eq": False}, {"frozen": False, "eq": False}),
]


def _make(body: str, decorator, field_function=dataclasses.field) -> type:
    # A module of its own, as the package's classes have: with the test's `from __future__ import annotations`
    # inherited, annotations are strings, which dataclass reads against the class's module (ClassVar, ...).
    module = types.ModuleType(f"twins_{decorator.__name__}_{len(sys.modules)}")
    module.field, module.ClassVar = field_function, __import__("typing").ClassVar
    sys.modules[module.__name__] = module  # pickle finds a class by its module and name
    source = textwrap.dedent(body)
    exec(compile(source, "<twin>", "exec"), vars(module))  # noqa: S102 - the class bodies above, nothing else
    name = next(line.split()[1].split(":")[0].split("(")[0] for line in source.splitlines() if line.startswith("class "))
    made = decorator(getattr(module, name))
    setattr(module, name, made)
    return made


def _twins(body: str, dataclass_options: dict, record_options: dict,
           record_field=dataclasses.field) -> tuple[type, type]:
    """The body as a dataclass (with dataclasses.field) and as a record (with `record_field`: the package's
    records use records.field, a body written for both uses dataclasses.field)."""
    def as_dataclass(cls):
        return dataclasses.dataclass(**dataclass_options)(cls)

    def as_record(cls):
        return record(**record_options)(cls)

    return _make(body, as_dataclass), _make(body, as_record, record_field)


def _instances(cls: type) -> list:
    name = cls.__name__
    if name == "Point":
        return [cls(1, 2), cls(1), cls(x=3, y=-1)]
    if name == "Basket":
        return [cls("ann"), cls("ann", ["a"]), cls("bo", note="gift")]
    if name == "Secret":
        return [cls("a", "k1", 1.0, "t"), cls("a", "k1", 9.0, "t"), cls("a", "k2", 2.0, "u"), cls("b")]  # 9.0: seconds are not compared
    if name == "Kind":
        return [cls(1), cls(1, agent="refunds"), cls(step=2)]
    if name == "Odd":
        return [cls(1), cls(1, tags={"a": 1}), cls(self=2)]
    if name == "Normalized":
        return [cls("  hi "), cls("hi"), cls("long text")]
    return [cls("a"), cls("a"), cls("b")] if name != "ById" else [cls("a", "x"), cls("a", "y"), cls("b")]


def _outcome(action, *args):
    """("ok", the result) of action(*args), or the name and message of the error it raised."""
    try:
        return ("ok", action(*args))
    except Exception as error:  # noqa: BLE001 - the kind and message of the error are what is compared
        return (type(error).__name__, str(error))


FIELD_FUNCTIONS = {"records.field": records.field, "dataclasses.field": dataclasses.field}


@pytest.mark.parametrize("field_function", FIELD_FUNCTIONS.values(), ids=list(FIELD_FUNCTIONS))
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: str(o[1] or "frozen"))
@pytest.mark.parametrize("body", BODIES.values(), ids=list(BODIES))
def test_a_record_behaves_as_the_dataclass_it_stands_for(body, options, field_function):
    made_by_dataclass, made_by_record = _twins(body, *options, field_function)
    theirs_signature, ours_signature = inspect.signature(made_by_dataclass), inspect.signature(made_by_record)
    assert str(ours_signature) == str(theirs_signature)  # names, kinds, annotations, defaults ("<factory>") as shown
    assert [(p.name, p.kind) for p in ours_signature.parameters.values()] == [
        (p.name, p.kind) for p in theirs_signature.parameters.values()]
    assert [(f.name, f.default, f.repr, f.compare, f.hash, f.init, f.kw_only)
            for f in dataclasses.fields(made_by_record)] == [
        (f.name, f.default, f.repr, f.compare, f.hash, f.init, f.kw_only) for f in dataclasses.fields(made_by_dataclass)]
    assert made_by_record.__match_args__ == made_by_dataclass.__match_args__
    assert made_by_record.__dataclass_params__.frozen == made_by_dataclass.__dataclass_params__.frozen
    assert (made_by_record.__hash__ is None) == (made_by_dataclass.__hash__ is None)
    theirs, ours = _instances(made_by_dataclass), _instances(made_by_record)
    for a, b in zip(theirs, ours):
        shown = repr(a).replace(made_by_dataclass.__qualname__, "X"), repr(b).replace(made_by_record.__qualname__, "X")
        assert shown[1] == shown[0] or not options[1].get("repr", True)
        assert dataclasses.asdict(b) == dataclasses.asdict(a)
        assert dataclasses.astuple(b) == dataclasses.astuple(a)
        for name in [f.name for f in dataclasses.fields(a)] + ["not_a_field"]:
            for change, *value in ((setattr, 5), (delattr,)):
                mine, theirs_copy = copy.copy(b), copy.copy(a)
                assert _outcome(change, mine, name, *value) == _outcome(change, theirs_copy, name, *value), name
                assert vars(mine) == vars(theirs_copy), name  # the same field changed, or none
    for i, (a1, b1) in enumerate(zip(theirs, ours)):
        for a2, b2 in zip(theirs[i:], ours[i:]):
            assert (b1 == b2) == (a1 == a2) and (b1 != b2) == (a1 != a2)
            if made_by_dataclass.__hash__ is not None and (a1 == a2):
                assert _outcome(hash, b1) == _outcome(hash, b2) or _outcome(hash, a1)[0] != "ok"
                assert _outcome(hash, b1)[0] == _outcome(hash, a1)[0]
        assert (b1 == "something else") == (a1 == "something else")
        if made_by_dataclass.__hash__ is not None:
            assert _outcome(hash, b1)[0] == _outcome(hash, a1)[0]
            by_fields = _outcome(hash, a1) == _outcome(hash, copy.copy(a1))  # else by identity (eq=False)
            assert (_outcome(hash, b1) == _outcome(hash, copy.copy(b1))) == by_fields
            if by_fields:  # the same tuple of the same fields hashed
                assert _outcome(hash, b1) == _outcome(hash, a1)
        else:
            with pytest.raises(TypeError):
                hash(b1)


@pytest.mark.parametrize("field_function", FIELD_FUNCTIONS.values(), ids=list(FIELD_FUNCTIONS))
@pytest.mark.parametrize("body", BODIES.values(), ids=list(BODIES))
def test_a_frozen_record_copies_pickles_and_replaces_as_a_frozen_dataclass(body, field_function):
    made_by_dataclass, made_by_record = _twins(body, {"frozen": True}, {}, field_function)
    for a, b in zip(_instances(made_by_dataclass), _instances(made_by_record)):
        first = dataclasses.fields(b)[0].name
        for moved in (copy.copy(b), copy.deepcopy(b), pickle.loads(pickle.dumps(b))):
            assert dataclasses.astuple(moved) == dataclasses.astuple(b)
            assert _outcome(setattr, moved, first, 9) == ("FrozenInstanceError", f"cannot assign to field {first!r}")
        if dataclasses.fields(b)[0].init:
            new = getattr(a, first)
            assert dataclasses.astuple(dataclasses.replace(b, **{first: new})) == dataclasses.astuple(
                dataclasses.replace(a, **{first: new}))


def test_a_record_writes_its_init_when_first_needed_and_once():
    @record
    class Late:
        """Documented: a class without a docstring gets dataclass's, written from its signature at once."""

        step: int
        notes: list = field(default_factory=list)

        def __post_init__(self):
            object.__setattr__(self, "notes", [*self.notes, "checked"])

    assert type(vars(Late)["__init__"]).__name__ == "_InitOnFirstUse"  # nothing compiled yet
    first = Late(1)
    init = vars(Late)["__init__"]
    assert inspect.isfunction(init) and init.__qualname__.endswith("Late.__init__")
    assert Late(2, ["a"]).notes == ["a", "checked"] and first.notes == ["checked"]
    assert vars(Late)["__init__"] is init  # written once

    @record
    class Shown:
        step: int

    assert str(inspect.signature(Shown)) == "(step: 'int') -> None"  # asking for the signature writes it too
    assert inspect.isfunction(vars(Shown)["__init__"])

    @record
    class Base:
        step: int

    class Plain(Base):  # not a record: a subclass with an __init__ of its own that calls the record's
        def __init__(self, step):
            super().__init__(step * 10)

    assert Plain(2).step == 20 and Base(3).step == 3
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'step'"):
        Base()


def test_records_inherit_from_records_and_a_frozen_dataclass_may_subclass_a_record():
    @record
    class Base:
        step: int

    @record
    class Child(Base):
        name: str = ""

    child = Child(1, "a")
    assert repr(child) == "test_records_inherit_from_records_and_a_frozen_dataclass_may_subclass_a_record." \
        "<locals>.Child(step=1, name='a')"
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.step = 2
    assert Base.__dataclass_params__.frozen and Child.__dataclass_params__.frozen

    @dataclasses.dataclass(frozen=True)
    class Learners(Child):  # a learner's own frozen dataclass on top of a package record
        extra: int = 0

    mine = Learners(1, "a", 3)
    assert (mine.step, mine.name, mine.extra) == (1, "a", 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mine.extra = 4
    with pytest.raises(TypeError, match="non-frozen dataclass from a frozen one"):
        dataclasses.dataclass(type("Mutable", (Child,), {"__annotations__": {"more": "int"}, "more": 0}))


def test_a_record_refuses_what_it_cannot_stand_for():
    with pytest.raises(TypeError, match="order"):
        record(order=True)
    with pytest.raises(TypeError, match="non-frozen record"):
        @record
        class Frozen:
            x: int

        @record(frozen=False)
        class Thawed(Frozen):
            y: int = 0
    with pytest.raises(TypeError, match="make Plain a record too"):
        @dataclasses.dataclass(frozen=True)
        class Plain:
            x: int

        @record
        class OnPlain(Plain):
            y: int = 0
    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        @record
        class OwnSetattr:
            x: int

            def __setattr__(self, name, value):
                pass


def _package_dataclasses() -> list[type]:
    """Every dataclass the package defines (importing each of its modules)."""
    found = []
    for info in pkgutil.walk_packages(tinyagent.__path__, "tinyagent."):
        module = importlib.import_module(info.name)
        found += [value for value in vars(module).values() if isinstance(value, type)
                  and value.__module__ == info.name and "__dataclass_fields__" in value.__dict__]
    return found


def test_every_record_in_the_package_is_made_as_declared():
    dataclasses_made = _package_dataclasses()
    made = [cls for cls in dataclasses_made if "_record_fields" in cls.__dict__]
    assert len(made) >= 90, len(made)  # the package's dataclasses are records (events, results, settings, ...)
    for cls in made:
        params = cls.__dataclass_params__
        assert dataclasses.is_dataclass(cls)
        assert cls._record_fields == {f.name for f in dataclasses.fields(cls)}, cls
        if params.frozen:
            assert cls.__setattr__ is records._frozen_setattr and cls.__delattr__ is records._no_delete, cls
        if params.eq and "__eq__" not in cls.__dict__ and "__eq__" not in vars(cls.__mro__[1]):
            assert cls.__eq__ is records._eq, cls
            assert cls.__hash__ is (records._hash if params.frozen else None), cls
    # no plain @dataclass is left in the package: a new one would cost every cold start its six methods again
    plain = [cls for cls in dataclasses_made if "_record_fields" not in cls.__dict__]
    assert not plain, plain


def test_a_packaged_record_in_use_is_frozen_equal_and_hashed_by_its_fields():
    from tinyagent.chat_reply import ChatResult
    from tinyagent.events import ToolCall
    from tinyagent.tools import Action

    action = Action("queryOrder", "88231")
    assert action == Action("queryOrder", "88231") != Action("queryOrder", "88232")
    assert hash(action) == hash(("queryOrder", "88231")) and repr(action) == (
        "Action(tool_name='queryOrder', tool_input='88231')")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'tool_name'"):
        action.tool_name = "applyRefund"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del action.tool_input
    call = ToolCall(step=1, name="queryOrder", input="88231")
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.step = 2
    assert dataclasses.fields(ChatResult)[0].name == "text"


def _view_is_made(cls: type) -> bool:
    return type(vars(cls)["__dataclass_fields__"]).__name__ != "_DataclassView"


@pytest.mark.parametrize("field_function", FIELD_FUNCTIONS.values(), ids=list(FIELD_FUNCTIONS))
@pytest.mark.parametrize("body", BODIES.values(), ids=list(BODIES))
def test_a_record_in_use_needs_no_dataclass_view_and_its_replace_is_dataclass_replace(body, field_function):
    """What a run does with records (make them, show, compare, hash, freeze, replace, pickle) leaves their
    dataclass view unmade, and gives what the dataclass gives."""
    made_by_dataclass, made_by_record = _twins(body, {"frozen": True}, {}, field_function)
    theirs, ours = _instances(made_by_dataclass), _instances(made_by_record)
    names = list(made_by_record._record_names)
    for a, b in zip(theirs, ours):
        assert repr(b).replace(made_by_record.__qualname__, "X") == repr(a).replace(made_by_dataclass.__qualname__, "X")
        assert _outcome(hash, b)[0] == _outcome(hash, a)[0]
        assert [getattr(b, n) for n in names] == [getattr(a, n) for n in names]
        assert _outcome(setattr, b, names[0], 1) == _outcome(setattr, a, names[0], 1)
        assert [getattr(pickle.loads(pickle.dumps(b)), n) for n in names] == [getattr(b, n) for n in names]
        assert records.is_dataclass(b) and records.is_dataclass(made_by_record)
        for change in ({}, {names[0]: getattr(a, names[0])}, {names[-1]: getattr(a, names[-1])}, {"not_a_field": 1}):
            mine = _outcome(lambda obj, change: records.replace(obj, **change), b, change)
            expected = _outcome(lambda obj, change: dataclasses.replace(obj, **change), a, change)
            if expected[0] == "ok":
                assert mine[0] == "ok" and [getattr(mine[1], n) for n in names] == [
                    getattr(expected[1], n) for n in names], change
            else:
                assert mine == (expected[0], expected[1].replace(made_by_dataclass.__qualname__,
                                                                  made_by_record.__qualname__)), change
    assert not _view_is_made(made_by_record)
    assert [f.name for f in dataclasses.fields(made_by_record)] == [f.name for f in dataclasses.fields(made_by_dataclass)]
    assert _view_is_made(made_by_record)


def test_records_replace_and_is_dataclass_hand_other_objects_to_dataclasses():
    @dataclasses.dataclass
    class Plain:
        x: int = 0

    assert records.replace(Plain(1), x=2) == Plain(2)
    assert records.is_dataclass(Plain) and records.is_dataclass(Plain())
    assert not records.is_dataclass(object()) and not records.is_dataclass(int)
    with pytest.raises(TypeError, match="replace\\(\\) should be called on dataclass instances"):
        records.replace(object())


# Declarations dataclass refuses, or reads specially: each given to both, with the same outcome.
DECLARATIONS = {
    "a mutable default": "class A:\n    items: list = []\n",
    "a non-default field after a default one": "class A:\n    x: int = 0\n    y: int\n",
    "a field() without an annotation": "class A:\n    x: int = 0\n    y = field(default=1)\n",
    "both default and default_factory": "class A:\n    x: list = field(default=1, default_factory=list)\n",
    "ClassVar through its module": "import typing\nclass A:\n    x: int\n    kind: typing.ClassVar[str] = 'k'\n",
    "ClassVar under another name": "from typing import ClassVar as CV\nCV2 = CV\nclass A:\n    x: int\n    kind: CV2 = 'k'\n",
    "a name that only starts like ClassVar": "ClassVarLike = int\nclass A:\n    x: ClassVarLike = 1\n",
    "a field's default inherited from a class attribute": "class Base:\n    x = 5\nclass A(Base):\n    x: int\n",
}


def _declared(source: str, decorator, field_function) -> object:
    module = types.ModuleType(f"declared_{len(sys.modules)}")
    module.field = field_function
    sys.modules[module.__name__] = module
    try:
        exec(compile("from __future__ import annotations\n" + source, "<declared>", "exec"), vars(module))  # noqa: S102
    except Exception as error:  # noqa: BLE001 - field() itself refuses
        return ("in the class body", type(error).__name__, str(error))
    try:
        made = decorator(module.A)
    except Exception as error:  # noqa: BLE001 - the kind and message of the error are what is compared
        return (type(error).__name__, str(error))  # refused when the class is made, as dataclass refuses it
    return ("ok", [(f.name, f.default) for f in dataclasses.fields(made)], made.__match_args__, str(inspect.signature(made)))


@pytest.mark.parametrize("field_function", FIELD_FUNCTIONS.values(), ids=list(FIELD_FUNCTIONS))
@pytest.mark.parametrize("source", DECLARATIONS.values(), ids=list(DECLARATIONS))
def test_a_record_refuses_and_reads_declarations_as_dataclass_does(source, field_function):
    theirs = _declared(source, dataclasses.dataclass(frozen=True), dataclasses.field)
    ours = _declared(source, record, field_function)
    assert ours == theirs


def test_a_record_refuses_initvar_and_kw_only_markers_it_does_not_stand_for():
    for source in ("from dataclasses import InitVar\nclass A:\n    x: InitVar[int]\n",
                   "from dataclasses import KW_ONLY\nclass A:\n    x: int\n    _: KW_ONLY\n    y: int = 0\n"):
        assert _declared(source, record, records.field)[1].startswith("record() does not take")


def test_a_cold_run_imports_neither_dataclasses_nor_what_it_pulls_in():
    """`python -m tinyagent ask` makes its records and runs without ever loading dataclasses (or inspect, ast
    and dis, which it imports): together a tenth of a cold start (benchmarks/overhead.py)."""
    import subprocess

    script = (
        "import runpy, sys\n"
        "sys.argv = ['tinyagent', 'ask', '我上周买的扫地机不回充了，修不好我想退。订单号 88231。', '--now', '2026-06-30T19:05:23']\n"
        "try:\n    runpy.run_module('tinyagent', run_name='__main__')\nexcept SystemExit as end:\n    assert not end.code\n"
        "print(sorted(m for m in ('dataclasses', 'inspect', 'ast', 'dis') if m in sys.modules), file=sys.stderr)\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("TINYAGENT_")}
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=300,
                          env={**env, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert "RF202606300001" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]"
