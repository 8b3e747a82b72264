"""A config field's metadata and the reading of values: ``setting(default, help=..., choices=...,
bounds=..., alias=..., flag=...)`` declares a field once (``schema``), ``Bounds`` words and
checks its interval, ``coerce`` reads a value from JSON or a command-line string as the field's
declared type. Nothing here knows the fields themselves."""

from __future__ import annotations

import json
import math
from dataclasses import Field, dataclass, field, fields
from typing import Any


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the value and the reason."""


# --- a field's metadata -------------------------------------------------------------


@dataclass(frozen=True)
class Bounds:
    """The interval a number must lie in: ``ge``/``gt`` its lower end (inclusive/strict), ``le``/``lt``
    its upper one; ``text`` words the rule where the interval reads poorly."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    text: str = ""

    def holds(self, v: float) -> bool:
        return (
            (self.ge is None or v >= self.ge)
            and (self.gt is None or v > self.gt)
            and (self.le is None or v <= self.le)
            and (self.lt is None or v < self.lt)
        )

    def words(self, integer: bool) -> str:
        """The rule as an error message states it: "must be in [0, 1)", "must be in 2..36", "must be >= 0"."""
        if self.text:
            return self.text
        lo = self.ge if self.gt is None else self.gt
        hi = self.le if self.lt is None else self.lt
        if lo is not None and hi is not None:
            if integer and self.gt is None and self.lt is None:
                return f"must be in {lo}..{hi}"
            left, right = "[" if self.gt is None else "(", "]" if self.lt is None else ")"
            return f"must be in {left}{_num(lo)}, {_num(hi)}{right}"
        if lo is not None:
            if integer and self.ge == 1:
                return "must be a positive integer"
            return f"must be {'>=' if self.gt is None else '>'} {_num(lo)}"
        return f"at most {_num(hi)}" if self.lt is None else f"must be < {_num(hi)}"


POSITIVE = Bounds(ge=1)  # a count
NON_NEGATIVE = Bounds(ge=0)
SEED = Bounds(ge=0, lt=2**63, text="seeds must be in [0, 2^63)")
FRACTION = Bounds(gt=0, lt=1)


@dataclass(frozen=True)
class Setting:
    """What a config field says about itself (the metadata ``setting`` attaches to it)."""

    help: str  # what it sets, in the words of ``mi-plateau train --help``
    choices: tuple[str, ...] = ()  # the values allowed (a string field)
    bounds: Bounds | None = None  # the interval allowed (a number field)
    note: str = ""  # why the rule holds: appended to its error message in parentheses
    alias: str = ""  # a short override key ("lr" for train.lr), accepted everywhere (presets.ALIASES)
    flag: str = ""  # the flag of ``mi-plateau train`` that sets it ("--lr"; cli.TRAIN_FLAGS)

    def check(self, key: str, value: Any, integer: bool) -> None:
        """Raise ConfigError, one line naming ``key`` and the values allowed, if ``value`` breaks the rule."""
        if self.choices and value not in self.choices:
            rule = (
                f"only {self.choices[0]!r} is supported"
                if len(self.choices) == 1
                else f"must be one of {', '.join(self.choices)}"
            )
        elif self.bounds is not None and not self.bounds.holds(value):
            rule = self.bounds.words(integer)
        else:
            return
        raise ConfigError(f"{key}={show_value(value)}: {rule}" + (f" ({self.note})" if self.note else ""))


SETTING = "setting"  # the key of a field's Setting in its metadata


def setting(
    default: Any,
    *,
    help: str,
    choices: tuple[str, ...] = (),
    bounds: Bounds | None = None,
    note: str = "",
    alias: str = "",
    flag: str = "",
) -> Any:
    """A config field: ``dataclasses.field(default=default)`` carrying its ``Setting`` as metadata."""
    return field(default=default, metadata={SETTING: Setting(help, tuple(choices), bounds, note, alias, flag)})


def check_fields(obj, section: str) -> None:
    """ConfigError, one line naming ``section.field``, where a value of the dataclass ``obj`` (each
    value of a tuple; None passes) breaks its field's ``Setting``: a section that checks itself on
    construction (``analysis``, ``estimators``), where the run's sections are checked by ``validate``."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        for v in value if isinstance(value, tuple) else (value,):
            if v is not None:
                f.metadata[SETTING].check(f"{section}.{f.name}", v, integer=kind(f).startswith(("int", "tuple[int")))


def _num(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def show_value(v: Any) -> str:
    """A value for an error message, with an integer of many digits shortened (1e308 read as an int)."""
    if isinstance(v, int) and not isinstance(v, bool) and len(str(abs(v))) > 15:
        digits = str(abs(v))
        return f"{'-' if v < 0 else ''}{digits[0]}.{digits[1:3]}e{len(digits) - 1}"
    return repr(v)


def kind(f: Field) -> str:
    """A field's declared type as a word (int, float, str, bool), whether or not its module
    postpones annotations."""
    return f.type if isinstance(f.type, str) else f.type.__name__


# --- reading values (config.json, CLI strings) -------------------------------------


def _field_type(kls, key):
    return {f.name: kind(f) for f in fields(kls)}[key]


_BOOL_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


MAX_DEPTH = 64  # nesting a config, a sweep file or a list of runs may have (they need 3 or 4)


def parse_json(text: str, where: str) -> Any:
    """JSON text as Python values, or one ``ConfigError`` line naming ``where``: invalid JSON, or
    nested deeper than ``MAX_DEPTH`` (checked by ``check_depth``; the parser itself would raise
    RecursionError far deeper)."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{where}: not valid JSON ({' '.join(str(e).split())})") from None
    except RecursionError:
        raise ConfigError(f"{where}: not valid JSON (nested too deeply)") from None
    check_depth(value, where)
    return value


def check_depth(value: Any, where: str, depth: int = 0) -> None:
    """A one-line ``ConfigError`` where ``value`` (parsed JSON or TOML) nests deeper than ``MAX_DEPTH``."""
    if depth > MAX_DEPTH:
        raise ConfigError(f"{where}: nested more than {MAX_DEPTH} levels deep")
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for v in items:
        check_depth(v, where, depth + 1)


def coerce(kls, key: str, value: Any, where: str, typed: bool = False) -> Any:
    """Convert value (possibly a CLI string) to the field's declared type, or fail clearly.
    ``typed``: the value comes from a file that has types (a sweep's TOML), where a string for a
    number or a flag is a mistake, not a command line's spelling."""
    typ = _field_type(kls, key)
    if typed and typ != "str" and isinstance(value, str):
        raise ConfigError(
            f"{where}={value!r}: expected {'true or false' if typ == 'bool' else 'a number'}, not a string"
        )
    try:
        if typ == "int":
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError
                return int(value)
            if isinstance(value, str):
                return int(float(value)) if "e" in value.lower() and float(value).is_integer() else int(value)
            return int(value)
        if typ == "float":
            if isinstance(value, bool):
                raise ValueError
            out = float(value)
            if not math.isfinite(out):
                raise ValueError
            return out
        if typ == "str":
            if not isinstance(value, str):
                raise ValueError
            return value
        if typ == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            if isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
                return _BOOL_WORDS[value.strip().lower()]
            raise ValueError
    except (TypeError, ValueError):
        kind = {
            "int": "an integer",
            "float": "a number",
            "str": "a string",
            "bool": "true or false (true/false, 1/0, yes/no)",
        }[typ]
        raise ConfigError(f"{where}={value!r}: expected {kind}") from None
    raise ConfigError(f"{where}: field type {typ!r} has no parser")
