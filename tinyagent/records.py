"""`@record`: a dataclass that costs less to make, for the package's own value classes.

    @record                   # what @dataclass(frozen=True) gives
    class ChatResult: ...

    @record(frozen=False)     # what @dataclass gives
    class StepCap(StopRule): ...

    from .records import field, replace   # as dataclasses' field and replace, for records

A record is a real dataclass (`dataclasses.fields`, `replace`, `asdict`, `is_dataclass` all work, and so does a
`@dataclass(frozen=True)` subclass of it), with the same __init__, repr, ==, hash and immutability. Only how it
is made differs, because `python -m tinyagent ask` makes about 60 of these classes and what @dataclass does for
each was the largest single cost of a cold run (benchmarks/overhead.py):

- @dataclass writes the source of six small functions per class (__init__, __repr__, __eq__, __hash__,
  __setattr__, __delattr__) and compiles each, about 0.1 ms apiece. A record's repr, ==, hash and frozen
  setattr/delattr are the functions below, written once, which read the class's field names; its __init__ is
  written when first needed (the first instance, or a look at the class's signature), not when the class is
  made: a run creates about half of the records it imports, and never compiles the other half's.
- The `dataclasses` module itself, with the `inspect`, `ast` and `dis` modules it imports, is a tenth of a cold
  run. A record reads its fields from the class's annotations itself (dataclass's rules: ClassVar left out,
  defaults from the class, `field(...)` options, a base's fields first), and makes its dataclass view,
  `__dataclass_fields__` and `__dataclass_params__`, only when something asks for it (`dataclasses.fields`,
  `is_dataclass`, `asdict`, a dataclass subclass): then dataclass itself reads the class, so what it sees is
  what it would have made. A run that never asks never imports dataclasses.

Immutability is kept by `__setattr__`, which raises dataclasses' FrozenInstanceError with its message; the
__init__ sets the fields past it, with object.__setattr__, as a frozen dataclass's does, and so may a
`__post_init__`.

tests/test_records.py holds every record in the package against the dataclass it stands for.
"""

from __future__ import annotations

import re
import reprlib
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["field", "is_dataclass", "record", "replace"]

T = TypeVar("T", bound=type)

_FORWARDED = frozenset({"init", "match_args", "kw_only"})  # the dataclass options a record passes on as they are


class _MissingType:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _MissingType()  # "not given", as dataclasses.MISSING (which a record's dataclass view shows)


class Field:
    """A field's options, as `dataclasses.field` takes them. Only a record reads it: in a @dataclass class, use
    dataclasses.field."""

    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "given",
        "hash",
        "init",
        "kw_only",
        "metadata",
        "name",
        "repr",
        "type",
    )

    def __init__(self, default: Any, default_factory: Any, init: bool, repr: bool, hash: bool | None,
                 compare: bool, metadata: Any, kw_only: Any, given: Any = None):
        self.name, self.type = "", None
        self.default, self.default_factory, self.init, self.repr = default, default_factory, init, repr
        self.hash, self.compare, self.metadata, self.kw_only = hash, compare, metadata, kw_only
        self.given = given  # what the class body held: this Field, a dataclasses.Field, or None (a plain default)

    def __repr__(self) -> str:
        return f"records.Field(name={self.name!r}, default={self.default!r}, init={self.init})"


def field(*, default: Any = MISSING, default_factory: Any = MISSING, init: bool = True, repr: bool = True,
          hash: bool | None = None, compare: bool = True, metadata: Any = None, kw_only: Any = MISSING) -> Any:
    """`dataclasses.field` for a record."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    made = Field(default, default_factory, init, repr, hash, compare, metadata, kw_only)
    made.given = made
    return made


def record(cls: T | None = None, /, *, frozen: bool = True, eq: bool = True, repr: bool = True,
           **options: Any) -> T | Callable[[T], T]:
    """`@record` is `@dataclass(frozen=True)`, `@record(frozen=False)` is `@dataclass`; also eq=, repr=,
    init=, kw_only= and match_args= as dataclass takes them (order, slots and unsafe_hash are not offered)."""
    unknown = set(options) - _FORWARDED
    if unknown:
        raise TypeError(f"record() does not take {', '.join(sorted(unknown))}: use @dataclass for that class")
    init = options.get("init", True)
    kw_only = options.get("kw_only", False)
    match_args = options.get("match_args", True)

    def make(cls: T) -> T:
        own = cls.__dict__
        class_hash = own.get("__hash__", _ABSENT)
        explicit_hash = not (class_hash is _ABSENT or (class_hash is None and "__eq__" in own))
        fields: dict[str, Field] = {}
        for base in cls.__mro__[-1:0:-1]:  # dataclass's order: the farthest base's fields first
            base_fields = base.__dict__.get("_record_specs")
            if base_fields is None:
                if "__dataclass_fields__" in base.__dict__:
                    raise TypeError(f"record {cls.__name__} cannot inherit from the dataclass {base.__name__}: "
                                    f"make {base.__name__} a record too")
                continue
            if base._record_options["frozen"] != frozen:
                raise TypeError(f"cannot inherit {'frozen' if frozen else 'non-frozen'} record "
                                f"{cls.__name__} from {'non-frozen' if frozen else 'frozen'} {base.__name__}")
            fields.update((f.name, f) for f in base_fields)
        if frozen and ("__setattr__" in own or "__delattr__" in own):
            name = "__setattr__" if "__setattr__" in own else "__delattr__"
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")

        annotations = own.get("__annotations__", {})
        module = sys.modules.get(cls.__module__)
        namespace = module.__dict__ if module is not None else {}
        for name, annotation in annotations.items():
            special = _special_annotation(annotation, namespace)
            if special == "ClassVar":
                continue  # not a field: its value stays a class attribute
            if special is not None:
                raise TypeError(f"record() does not take {special} annotations ({cls.__name__}.{name}): "
                                "use @dataclass for that class")
            made = _field_of(cls, name, annotation, kw_only)
            fields[name] = made
            if made.given is not None:  # the class keeps the default itself, as dataclass leaves it
                if made.default is MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, made.default)
        for name, value in own.items():
            if _is_field(value) and name not in annotations:
                raise TypeError(f"{name!r} is a field but has no type annotation")
        all_fields = tuple(fields.values())
        positional = [f for f in all_fields if f.init and not f.kw_only]
        if init:  # dataclass's __init__ rule, checked now as dataclass checks it when it writes the __init__
            default_seen = False
            for f in positional:
                if f.default is not MISSING or f.default_factory is not MISSING:
                    default_seen = True
                elif default_seen:
                    raise TypeError(f"non-default argument {f.name!r} follows default argument")

        cls._record_specs = all_fields
        cls._record_options = {"init": init, "repr": repr, "eq": eq, "frozen": frozen, "kw_only": kw_only,
                               "match_args": match_args}
        cls._record_shown = tuple(f.name for f in all_fields if f.repr)
        cls._record_compared = tuple(f.name for f in all_fields if f.compare)
        cls._record_hashed = tuple(f.name for f in all_fields if (f.compare if f.hash is None else f.hash))
        cls._record_names = tuple(f.name for f in all_fields)  # every field, in order (events' to_dict reads it)
        cls._record_fields = frozenset(cls._record_names)
        cls.__dataclass_fields__ = _DataclassView(cls, "__dataclass_fields__")
        cls.__dataclass_params__ = _DataclassView(cls, "__dataclass_params__")
        if match_args and "__match_args__" not in own:
            cls.__match_args__ = tuple(f.name for f in positional)
        if init:
            cls.__init__ = _InitOnFirstUse(cls)
            if not own.get("__doc__"):  # dataclass's doc for a class without one, "Name(field: type, ...)"
                cls.__doc__ = _DocOnFirstUse(cls)
        if repr and "__repr__" not in own:
            cls.__repr__ = _repr
        if eq and "__eq__" not in own:
            cls.__eq__ = _eq
        if eq and not explicit_hash:  # dataclass's rule: frozen and eq hash by the fields, eq alone is unhashable
            cls.__hash__ = _hash if frozen else None
        if frozen:
            cls.__setattr__ = _frozen_setattr
            cls.__delattr__ = _no_delete
        if getattr(cls, "__abstractmethods__", None):  # as dataclass does: a method written here may implement one
            import abc

            abc.update_abstractmethods(cls)
        return cls

    return make if cls is None else make(cls)


_ABSENT = object()


def _is_field(value: object) -> bool:
    """A records Field, or a dataclasses.Field (a class body written for both, as tests/test_records.py's)."""
    if type(value) is Field:
        return True
    dataclasses = sys.modules.get("dataclasses")  # not loaded: no dataclasses.Field can exist
    return dataclasses is not None and isinstance(value, dataclasses.Field)


def _field_of(cls: type, name: str, annotation: Any, kw_only: bool) -> Field:
    """The field `name` as dataclass reads it: its default from the class (a field(...) there gives options)."""
    default = getattr(cls, name, MISSING)
    if type(default) is Field:
        made = Field(default.default, default.default_factory, default.init, default.repr, default.hash,
                     default.compare, default.metadata, default.kw_only, default)
    elif _is_field(default):  # a dataclasses.Field: its MISSING is dataclasses' own
        missing = sys.modules["dataclasses"].MISSING

        def given(value: Any) -> Any:
            return MISSING if value is missing else value

        made = Field(given(default.default), given(default.default_factory), default.init, default.repr,
                     default.hash, default.compare, default.metadata, given(default.kw_only), default)
    else:
        if type(default).__name__ == "member_descriptor":  # a __slots__ entry: no default
            default = MISSING
        made = Field(default, MISSING, True, True, None, True, None, MISSING)
    made.name, made.type = name, annotation
    if made.kw_only is MISSING:
        made.kw_only = kw_only
    if made.default.__class__.__hash__ is None:  # dataclass's rule: an unhashable default is a shared mutable one
        raise ValueError(f"mutable default {type(made.default)} for field {name} is not allowed: use default_factory")
    return made


# dataclass's reading of a string annotation: a name at its start, maybe after a module's name and a dot
# ("ClassVar[int]", "typing.ClassVar[int]"), looked up in the class's module.
_ANNOTATION_NAME = re.compile(r"^(?:\s*(\w+)\s*\.)?\s*(\w+)")


def _special_annotation(annotation: Any, namespace: dict) -> str | None:
    """"ClassVar", "InitVar" or "KW_ONLY" when the annotation names one (as a string, dataclass looks the name
    up in the class's module, alone or after a module name), else None."""
    typing = sys.modules["typing"]
    dataclasses = sys.modules.get("dataclasses")
    if not isinstance(annotation, str):
        if annotation is typing.ClassVar or getattr(annotation, "__origin__", None) is typing.ClassVar:
            return "ClassVar"
        if dataclasses is not None and (annotation is dataclasses.KW_ONLY or annotation is dataclasses.InitVar
                                        or type(annotation) is dataclasses.InitVar):
            return "KW_ONLY" if annotation is dataclasses.KW_ONLY else "InitVar"
        return None
    match = _ANNOTATION_NAME.match(annotation)
    if match is None:
        return None
    module_name, name = match.groups()
    if module_name:
        module = namespace.get(module_name)
        named = getattr(module, name, None) if module is not None and module in (typing, dataclasses) else None
    else:
        named = namespace.get(name)
    if named is typing.ClassVar:
        return "ClassVar"
    if dataclasses is not None and named is dataclasses.InitVar:
        return "InitVar"
    if dataclasses is not None and named is dataclasses.KW_ONLY:
        return "KW_ONLY"
    return None


_VIEW_LOCK = threading.RLock()


class _DataclassView:
    """A record's `__dataclass_fields__` or `__dataclass_params__` until something asks for either: then
    `dataclass` reads the class (fields() restored to the class body for the moment it takes) and writes the
    real two in place of these stand-ins."""

    __slots__ = ("name", "owner")

    def __init__(self, owner: type, name: str):
        self.owner, self.name = owner, name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        _make_dataclass_view(self.owner)
        return self.owner.__dict__[self.name]


def _make_dataclass_view(cls: type) -> None:
    with _VIEW_LOCK:  # (re-entered for the bases; two threads asking at once make it once)
        if type(cls.__dict__.get("__dataclass_fields__")) is not _DataclassView:
            return
        import dataclasses

        bases = [base for base in cls.__mro__[1:] if "_record_specs" in base.__dict__]
        for base in bases:
            _make_dataclass_view(base)
        del cls.__dataclass_fields__, cls.__dataclass_params__
        own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 - its own, as dataclass reads them (no inspect)
        for f in cls._record_specs:
            if f.name in own and f.given is not None and cls.__dict__.get(f.name, _ABSENT) is not f.given:
                setattr(cls, f.name, f.given if type(f.given) is not Field else _as_dataclass_field(f, dataclasses))
        # dataclass refuses a non-frozen class on a frozen base, so a frozen record's bases say what dataclass
        # made of them (not frozen) for the moment it takes.
        options = cls._record_options
        base_params = [base.__dict__["__dataclass_params__"] for base in bases]
        for params in base_params:
            params.frozen = False
        try:
            dataclasses.dataclass(cls, init=False, eq=False, repr=False, frozen=False,
                                  match_args=options["match_args"], kw_only=options["kw_only"])
        finally:
            for params in base_params:
                params.frozen = options["frozen"]
        params = cls.__dict__["__dataclass_params__"]
        params.init, params.frozen, params.eq, params.repr = (
            options["init"], options["frozen"], options["eq"], options["repr"])


def _as_dataclass_field(f: Field, dataclasses: Any) -> Any:
    def given(value: Any) -> Any:
        return dataclasses.MISSING if value is MISSING else value

    return dataclasses.field(default=given(f.default), default_factory=given(f.default_factory), init=f.init,
                             repr=f.repr, hash=f.hash, compare=f.compare, metadata=f.metadata,
                             kw_only=given(f.given.kw_only))


def is_dataclass(obj: object) -> bool:
    """`dataclasses.is_dataclass`, without making a record's dataclass view: for a class or an instance."""
    cls = obj if isinstance(obj, type) else type(obj)
    if hasattr(cls, "_record_specs"):
        return True
    dataclasses = sys.modules.get("dataclasses")  # not loaded: nothing but a record can be a dataclass
    return dataclasses is not None and dataclasses.is_dataclass(obj)


def replace(obj: Any, /, **changes: Any) -> Any:
    """`dataclasses.replace`: a new instance, with the fields in `changes` replaced; for a record without its
    dataclass view (any other dataclass goes to dataclasses.replace)."""
    specs = type(obj).__dict__.get("_record_specs")
    if specs is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)
    for f in specs:
        if not f.init:
            if f.name in changes:
                raise ValueError(f"field {f.name} is declared with init=False, it cannot be specified with replace()")
        elif f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


class _InitOnFirstUse:
    """A record's `__init__` until something asks for it: then the one @dataclass would have written is made,
    put in its place on the class, and handed on. Creating an instance, `inspect.signature`, `help()` and a
    subclass's `super().__init__` all ask through `__get__`, so none of them sees this stand-in."""

    __slots__ = ("owner",)

    def __init__(self, owner: type):
        self.owner = owner

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        init = self.owner.__dict__["__init__"]
        if init is self:  # (two threads may both get here: each makes the same function, and either one serves)
            init = _written_init(self.owner)
            self.owner.__init__ = init
        return init if instance is None else init.__get__(instance, owner)


class _DocOnFirstUse:
    """The doc dataclass gives a class without one, "Name(field: type, ...)", written when first read (it reads
    the signature, which writes the __init__). A class's `__doc__` is read through `__get__` too."""

    __slots__ = ("owner",)

    def __init__(self, owner: type):
        self.owner = owner

    def __get__(self, instance: object, owner: type | None = None) -> str:
        import inspect

        doc = self.owner.__name__ + str(inspect.signature(self.owner)).replace(" -> None", "")
        self.owner.__doc__ = doc
        return doc


class _Factory:
    """The default a parameter shows when its field has a default_factory, as dataclass shows it."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _written_init(cls: type) -> Callable[..., None]:
    """The __init__ @dataclass writes for `cls`'s fields: each field a parameter in order (keyword-only ones
    after `*`), its default or default_factory kept, an init=False field set from its default, then
    `__post_init__`. A frozen record's fields are set with object.__setattr__, past _frozen_setattr, as dataclass
    sets a frozen class's (a Python __setattr__ per field would make every event three times as dear)."""
    all_fields = cls._record_specs
    me = "__dataclass_self__" if "self" in cls._record_fields else "self"
    # names no field can clash with
    names: dict[str, Any] = {"__record_factory__": _FACTORY, "__record_set__": object.__setattr__}
    if cls._record_options["frozen"]:
        def assign(name: str, value: str) -> str:
            return f"__record_set__({me}, {name!r}, {value})"
    else:
        def assign(name: str, value: str) -> str:
            return f"{me}.{name} = {value}"
    positional, keyword, body = [], [], []
    for f in all_fields:
        default = f"__record_default_{f.name}__"
        if f.default is not MISSING:
            names[default] = f.default
        elif f.default_factory is not MISSING:
            names[default] = f.default_factory
        if not f.init:
            if f.default is not MISSING:
                body.append(assign(f.name, default))
            elif f.default_factory is not MISSING:
                body.append(assign(f.name, f"{default}()"))
            continue
        if f.default is not MISSING:
            parameter = f"{f.name}={default}"
            body.append(assign(f.name, f.name))
        elif f.default_factory is not MISSING:
            parameter = f"{f.name}=__record_factory__"
            body.append(assign(f.name, f"{default}() if {f.name} is __record_factory__ else {f.name}"))
        else:
            parameter = f.name
            body.append(assign(f.name, f.name))
        (keyword if f.kw_only else positional).append(parameter)
    if hasattr(cls, "__post_init__"):
        body.append(f"{me}.__post_init__()")
    parameters = ", ".join([me, *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({parameters}):\n" + "".join(f"    {line}\n" for line in body or ["pass"])
    exec(source, names)  # noqa: S102 - text made above from the class's own field names, as dataclass does
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {**{f.name: f.type for f in all_fields if f.init}, "return": None}
    return init


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._record_shown)
    return f"{self.__class__.__qualname__}({shown})"


def _eq(self: Any, other: object) -> bool:
    if other.__class__ is self.__class__:
        names = self._record_compared
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in self._record_hashed))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    # As a frozen dataclass's: nothing on the record itself; on a subclass that is not a record, its own names.
    if "_record_fields" in type(self).__dict__ or name in self._record_fields:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _no_delete(self: Any, name: str) -> None:
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot delete field {name!r}")
