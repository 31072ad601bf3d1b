"""`@record`: a dataclass that costs less to make, for the package's own value classes.

    @record                   # what @dataclass(frozen=True) gives
    class ChatResult: ...

    @record(frozen=False)     # what @dataclass gives
    class StepCap(StopRule): ...

A record is a real dataclass (`dataclasses.fields`, `replace`, `asdict`, `is_dataclass` all work, and so does a
`@dataclass(frozen=True)` subclass of it), with the same __init__, repr, ==, hash and immutability. Only how it
is made differs. For every class, @dataclass writes the source of six small functions (__init__, __repr__,
__eq__, __hash__, __setattr__, __delattr__) and compiles each: about 0.1 ms apiece, paid again by every new
process. `python -m tinyagent ask` makes about 60 of these classes, and compiling their methods was the largest
single cost of a cold run (benchmarks/overhead.py). A record has only its __init__ compiled, the one method
whose speed matters (a run makes thousands of events); the other five are the functions below, written once,
which read the class's field names instead of having them written in. And the __init__ is written when it is
first needed (the first instance, or a look at the class's signature), not when the class is made: a run
creates about half of the records it imports, and never compiles the other half's.

Immutability is kept by `__setattr__`, which raises FrozenInstanceError with dataclass's message; the __init__
sets the fields past it, with object.__setattr__, as a frozen dataclass's does, and so may a `__post_init__`.

tests/test_records.py holds every record in the package against the dataclass it stands for.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError, dataclass, fields
from typing import Any, TypeVar

__all__ = ["record"]

T = TypeVar("T", bound=type)

_FORWARDED = frozenset({"init", "match_args", "kw_only"})  # the dataclass options a record passes on as they are


def record(cls: T | None = None, /, *, frozen: bool = True, eq: bool = True, repr: bool = True,
           **options: Any) -> T | Callable[[T], T]:
    """`@record` is `@dataclass(frozen=True)`, `@record(frozen=False)` is `@dataclass`; also eq=, repr=,
    init=, kw_only= and match_args= as dataclass takes them (order, slots and unsafe_hash are not offered)."""
    unknown = set(options) - _FORWARDED
    if unknown:
        raise TypeError(f"record() does not take {', '.join(sorted(unknown))}: use @dataclass for that class")

    def make(cls: T) -> T:
        own = cls.__dict__
        documented = bool(own.get("__doc__"))  # (before dataclass writes its own)
        class_hash = own.get("__hash__", _MISSING)
        explicit_hash = not (class_hash is _MISSING or (class_hash is None and "__eq__" in own))
        record_bases = []  # the parameters of the records this one inherits from
        for base in cls.__mro__[1:]:
            params = base.__dict__.get("__dataclass_params__")
            if params is None:
                continue
            if "_record_fields" not in base.__dict__:
                raise TypeError(f"record {cls.__name__} cannot inherit from the dataclass {base.__name__}: "
                                f"make {base.__name__} a record too")
            if params.frozen != frozen:
                raise TypeError(f"cannot inherit {'frozen' if frozen else 'non-frozen'} record "
                                f"{cls.__name__} from {'non-frozen' if frozen else 'frozen'} {base.__name__}")
            record_bases.append(params)
        if frozen and ("__setattr__" in own or "__delattr__" in own):
            name = "__setattr__" if "__setattr__" in own else "__delattr__"
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
        # dataclass reads the fields and writes no method: the __init__ comes on first use (_InitOnFirstUse).
        # It refuses a non-frozen class on a frozen base, so a frozen record's bases say what dataclass made of
        # them (not frozen) for the moment it takes; a class is made once, at import.
        init = options.pop("init", True)
        for params in record_bases:
            params.frozen = False
        try:
            made = dataclass(cls, init=False, eq=False, repr=False, frozen=False, **options)
        finally:
            for params in record_bases:
                params.frozen = frozen
        # What the class's parameters are, as dataclasses and its subclasses read them (a `@dataclass(frozen=True)`
        # subclass checks that its bases are frozen), and as _written_init reads them.
        params = made.__dataclass_params__
        params.init, params.frozen, params.eq, params.repr = init, frozen, eq, repr
        if init:
            made.__init__ = _InitOnFirstUse(made)
            if not documented:  # dataclass's doc for a class without one, "Name(field: type, ...)", from the real one
                import inspect  # already loaded: dataclasses imports it

                made.__doc__ = made.__name__ + str(inspect.signature(made)).replace(" -> None", "")
        made_fields = fields(made)
        made._record_shown = tuple(f.name for f in made_fields if f.repr)
        made._record_compared = tuple(f.name for f in made_fields if f.compare)
        made._record_hashed = tuple(f.name for f in made_fields if (f.compare if f.hash is None else f.hash))
        made._record_names = tuple(f.name for f in made_fields)  # every field, in order (events' to_dict reads it)
        made._record_fields = frozenset(made._record_names)
        if repr and "__repr__" not in own:
            made.__repr__ = _repr
        if eq and "__eq__" not in own:
            made.__eq__ = _eq
        if eq and not explicit_hash:  # dataclass's rule: frozen and eq hash by the fields, eq alone is unhashable
            made.__hash__ = _hash if frozen else None
        if frozen:
            made.__setattr__ = _frozen_setattr
            made.__delattr__ = _no_delete
        return made

    return make if cls is None else make(cls)


_MISSING = object()


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
    all_fields = fields(cls)
    me = "__dataclass_self__" if "self" in {f.name for f in all_fields} else "self"
    # names no field can clash with
    names: dict[str, Any] = {"__record_factory__": _FACTORY, "__record_set__": object.__setattr__}
    if cls.__dataclass_params__.frozen:
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
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _no_delete(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")
