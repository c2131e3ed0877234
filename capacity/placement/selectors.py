"""Device selectors: checking, matching, and the shorthand the CLI takes."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Final

from .errors import INVALID_INPUT, CapacityError
from .types import Atom, AttributeValue, Expression, NodeView, SelectorValue, attribute_value

OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Gte", "Lt", "Lte")
SET_OPERATORS: Final = frozenset({"In", "NotIn"})
NUMERIC_OPERATORS: Final = frozenset({"Gt", "Gte", "Lt", "Lte"})
PRESENCE_OPERATORS: Final = frozenset({"Exists", "DoesNotExist"})
MAX_EXPRESSIONS: Final = 32
MAX_VALUES: Final = 64
MAX_KEY_LENGTH: Final = 253

KEY_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9._/-]*")
# Stricter than float(): float() also takes "inf", "nan" and "1_000", which are not numbers here.
NUMBER_RE: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
INTEGER_RE: Final = re.compile(r"[+-]?\d+")


def is_valid_key(key: object) -> bool:
    """Return whether key is a valid selector or label key."""
    return isinstance(key, str) and len(key) <= MAX_KEY_LENGTH and KEY_RE.fullmatch(key) is not None


def as_text(value: AttributeValue) -> str:
    """Return the string form In and NotIn compare: true/false for booleans, 80 for 80.0."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    try:
        return str(value)
    except ValueError:  # an int past Python's 4,300-digit limit: no selector value can equal it
        return ""


def as_number(value: object) -> float | None:
    """Return value as a finite number, or None when it is not one (booleans are not numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # past 1.8e308
            return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        if len(value) > 400:  # a number of more digits would not be finite
            return None
        text = value.strip()
        if NUMBER_RE.fullmatch(text) is None:
            return None
        number = float(text)
        return number if math.isfinite(number) else None
    return None


def _numeric_value(text: str) -> int | float | None:
    if INTEGER_RE.fullmatch(text):
        return int(text)
    if NUMBER_RE.fullmatch(text):
        number = float(text)
        return number if math.isfinite(number) else None
    return None


# ---- checking ---------------------------------------------------------------------------------------------


def _invalid(message: str) -> CapacityError:
    return CapacityError(INVALID_INPUT, message)


def check_expression(key: object, op: object, values: object, field: str) -> Expression:
    """Return a canonical Expression, or raise INVALID_INPUT naming field.

    Canonical means In/NotIn values are strings and comparison values are numbers, which is what
    makes format_selector and parse_selector round-trip.
    """
    if not is_valid_key(key):
        raise _invalid(
            f"{field}.key must start with a letter and contain only letters, digits, '.', '_', '/' and '-'"
            f" (at most {MAX_KEY_LENGTH} characters)"
        )
    assert isinstance(key, str)
    if not isinstance(op, str) or op not in OPERATORS:
        raise _invalid(f"{field}.op must be one of {', '.join(OPERATORS)}")
    if values is None:
        values = ()
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise _invalid(f"{field}.values must be a list")
    if len(values) > MAX_VALUES:
        raise _invalid(f"{field}.values: at most {MAX_VALUES} values per expression")
    if op in PRESENCE_OPERATORS:
        if values:
            raise _invalid(f"{field}.values must be empty for {op}")
        return Expression(key, op)
    if op in NUMERIC_OPERATORS:
        if len(values) != 1:
            raise _invalid(f"{field}.values must hold exactly one number for {op}")
        number = _canonical_number(values[0])
        if number is None:
            raise _invalid(f"{field}.values[0] must be a number for {op}")
        return Expression(key, op, (number,))
    if not values:
        raise _invalid(f"{field}.values must hold at least one value for {op}")
    texts: list[str] = []
    for i, value in enumerate(values):
        if isinstance(value, float) and not math.isfinite(value):
            raise _invalid(f"{field}.values[{i}] must be a string or a finite number")
        if not isinstance(value, str | int | float):
            raise _invalid(f"{field}.values[{i}] must be a string, a number or a boolean")
        texts.append(as_text(value))
    return Expression(key, op, tuple(texts))


def _canonical_number(value: object) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return _numeric_value(value.strip())
    return None


def check_selector(expressions: Iterable[Expression], field: str = "selector") -> tuple[Expression, ...]:
    """Return the expressions canonicalized, or raise INVALID_INPUT for any broken limit or syntax."""
    exprs = tuple(expressions)
    if len(exprs) > MAX_EXPRESSIONS:
        raise _invalid(f"{field}: at most {MAX_EXPRESSIONS} expressions per selector")
    return tuple(check_expression(e.key, e.op, e.values, f"{field}[{i}]") for i, e in enumerate(exprs))


# ---- matching ---------------------------------------------------------------------------------------------


def _lookup(key: str, atom: Atom, node: NodeView) -> AttributeValue | None:
    # Whatever is stored (an object, a list, null) that is no scalar reads as absent.
    value = attribute_value(atom.attributes.get(key))
    if value is not None:
        return value
    return node.labels.get(key)


def matches(expr: Expression, atom: Atom, node: NodeView) -> bool:
    """Return whether expr holds for atom, reading its attribute first, else the node's label."""
    value = _lookup(expr.key, atom, node)
    op = expr.op
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op == "In":
        return value is not None and as_text(value) in {as_text(v) for v in expr.values}
    if op == "NotIn":
        return value is None or as_text(value) not in {as_text(v) for v in expr.values}
    if op in NUMERIC_OPERATORS:
        if value is None or len(expr.values) != 1:
            return False
        have = as_number(value)
        want = as_number(expr.values[0])
        if have is None or want is None:
            return False
        if op == "Gt":
            return have > want
        if op == "Gte":
            return have >= want
        if op == "Lt":
            return have < want
        return have <= want
    raise _invalid(f'unknown selector operator "{op}"')


def selector_matches(selector: Iterable[Expression], atom: Atom, node: NodeView) -> bool:
    """Return whether every expression of selector holds for atom on node."""
    return all(matches(expr, atom, node) for expr in selector)


# ---- shorthand --------------------------------------------------------------------------------------------

_SYMBOL_OPS: Final = (("!=", "NotIn"), (">=", "Gte"), ("<=", "Lte"), ("=", "In"), (">", "Gt"), ("<", "Lt"))
_OP_SYMBOLS: Final = {"Gt": ">", "Gte": ">=", "Lt": "<", "Lte": "<="}
_SET_WORD_RE: Final = re.compile(r"(notin|in)(?=[\s(])", re.IGNORECASE)
_BARE_VALUE_RE: Final = re.compile(r"[^\s,()\"'=!<>\\]+")
_NUMBER_TOKEN_RE: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


class _Parser:
    def __init__(self, text: str, field: str) -> None:
        self.text = text
        self.pos = 0
        self.field = field
        self.bare = (-1, -1)  # where the last unquoted value starts and ends

    def error(self, message: str) -> CapacityError:
        return _invalid(f"{self.field}: {message} at position {self.pos + 1}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        self.skip_space()
        if self.peek() != char:
            raise self.error(f"expected '{char}'")
        self.pos += 1

    def key(self) -> str:
        self.skip_space()
        found = KEY_RE.match(self.text, self.pos)
        if found is None:
            raise self.error("expected a key")
        self.pos = found.end()
        return found.group()

    def value(self) -> str:
        self.skip_space()
        if self.peek() == '"':
            return self.quoted()
        found = _BARE_VALUE_RE.match(self.text, self.pos)
        if found is None:
            raise self.error("expected a value")
        self.bare = found.span()
        self.pos = found.end()
        return found.group()

    def after_value(self, expected: str) -> CapacityError:
        """Return the error for what follows a value; after an unquoted word, say to quote it."""
        error = self.error(expected)
        start, end = self.bare
        gap = self.text[end : self.pos]
        if start < 0 or not gap or not gap.isspace():
            return error
        stop = min((i for i in (self.text.find(c, self.pos) for c in ",)") if i >= 0), default=len(self.text))
        words = self.text[start:stop].strip()[:80]
        return _invalid(
            f"{error.message}; a value with spaces is written in double quotes: {_format_value(words)}"
        )

    def quoted(self) -> str:
        start = self.pos
        self.pos += 1
        out: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\" and self.pos + 1 < len(self.text):
                out.append(self.text[self.pos + 1])
                self.pos += 2
            elif char == '"':
                self.pos += 1
                return "".join(out)
            else:
                out.append(char)
                self.pos += 1
        self.pos = start
        raise self.error("unterminated quoted value")

    def number(self, symbol: str) -> int | float:
        self.skip_space()
        found = _NUMBER_TOKEN_RE.match(self.text, self.pos)
        number = _numeric_value(found.group()) if found else None
        if found is None or number is None:
            raise self.error(f"expected a number after '{symbol}'")
        self.pos = found.end()
        return number

    def value_set(self, word: str) -> tuple[str, ...]:
        self.expect("(")
        self.skip_space()
        if self.peek() == ")":
            raise self.error(f"'{word}' needs at least one value")
        values = [self.value()]
        while True:
            self.skip_space()
            if self.peek() == ",":
                self.pos += 1
                values.append(self.value())
            elif self.peek() == ")":
                self.pos += 1
                return tuple(values)
            else:
                raise self.after_value("expected ',' or ')'")

    def expression(self) -> Expression:
        self.skip_space()
        if self.peek() == "!" and not self.text.startswith("!=", self.pos):
            self.pos += 1
            return Expression(self.key(), "DoesNotExist")
        key = self.key()
        self.skip_space()
        if self.at_end() or self.peek() == ",":
            return Expression(key, "Exists")
        for symbol, op in _SYMBOL_OPS:
            if self.text.startswith(symbol, self.pos):
                self.pos += len(symbol)
                if op in NUMERIC_OPERATORS:
                    return Expression(key, op, (self.number(symbol),))
                return Expression(key, op, (self.value(),))
        word = _SET_WORD_RE.match(self.text, self.pos)
        if word is not None:
            self.pos = word.end()
            op = "NotIn" if word.group(1).lower() == "notin" else "In"
            return Expression(key, op, self.value_set(word.group(1)))
        raise self.error(f"unexpected {self.peek()!r} after key {key!r}")

    def selector(self) -> tuple[Expression, ...]:
        self.skip_space()
        if self.at_end():
            return ()
        exprs = [self.expression()]
        while True:
            self.skip_space()
            if self.at_end():
                return tuple(exprs)
            if self.peek() != ",":
                raise self.after_value(f"unexpected {self.peek()!r}, expected ','")
            self.pos += 1
            exprs.append(self.expression())


def parse_selector(text: str, field: str = "selector") -> tuple[Expression, ...]:
    """Parse the shorthand, e.g. "gpuProduct in (H100-SXM5-80GB), vramGiB >= 80, fabric.domain".

    `key in (a, b)` and `key notin (a, b)` are sets, `=` and `!=` are one-value In and NotIn,
    `>`, `>=`, `<`, `<=` compare numbers, a bare `key` is Exists and `!key` is DoesNotExist.
    Values that are not plain words are written in double quotes with backslash escapes.
    """
    if not isinstance(text, str):
        raise _invalid(f"{field} must be a string")
    return check_selector(_Parser(text, field).selector(), field)


def _format_value(value: SelectorValue) -> str:
    text = as_text(value)
    if _BARE_VALUE_RE.fullmatch(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _format_number(value: SelectorValue) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def format_expression(expr: Expression) -> str:
    """Return one expression in the shorthand."""
    op, key, values = expr.op, expr.key, expr.values
    if op == "Exists":
        return key
    if op == "DoesNotExist":
        return f"!{key}"
    if op in NUMERIC_OPERATORS:
        return f"{key} {_OP_SYMBOLS[op]} {', '.join(_format_number(v) for v in values)}"
    if len(values) == 1:
        return f"{key} {'=' if op == 'In' else '!='} {_format_value(values[0])}"
    word = "in" if op == "In" else "notin"
    return f"{key} {word} ({', '.join(_format_value(v) for v in values)})"


def format_selector(expressions: Iterable[Expression]) -> str:
    """Return a selector in the shorthand parse_selector reads back."""
    return ", ".join(format_expression(e) for e in expressions)
