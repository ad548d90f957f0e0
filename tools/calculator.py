"""The ``calculate`` tool: a small, bounded arithmetic language for the numbers an agent reads out
of documents (NeuSym-RAG's CalculateExpr).

Example: ``pct_change(94.1, 91.2)``, ``round(mean([3.2, 4.1, 5]) * 1.08, 2)``, ``2 ** 10 > 1000``.

Safety comes from the shape of the evaluator, not from sandboxing: the text is parsed with
``ast.parse`` and only whitelisted node types are ever evaluated, by our own walker; nothing is
passed to ``eval``/``exec``/``compile``. Every cost is bounded before it is paid: text length,
node count and nesting depth before evaluation, number magnitude after each step (and before a
power is computed), list length, and a wall-clock budget.
"""

from __future__ import annotations

import ast
import builtins
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from docsym.tools.errors import ToolError
from docsym.tools.results import ToolResult
from docsym.tools.spec import Arguments, ToolSpec

MAX_EXPRESSION_CHARS = 2_000
MAX_NODES = 500
MAX_DEPTH = 50
# A float limit compares exactly against ints too, and admits both 10**100 and int(1e100).
MAX_MAGNITUDE = 1e100
_TOO_LARGE = "number too large (limit 1e100)"
MAX_LIST_ITEMS = 10_000
TIME_BUDGET_SECONDS = 0.1
MAX_ROUND_DIGITS = 100

Number = int | float
Value = int | float | bool | list


class CalculatorError(ToolError):
    """An expression the calculator cannot or will not evaluate; the message says what to change."""


class CalculationResult(ToolResult):
    expression: str
    value: float | int | bool | list
    text: str

    def to_markdown(self) -> str:
        return f"{self.expression} = {self.text}"


@dataclass(frozen=True)
class _Function:
    usage: str
    min_args: int
    max_args: int | None  # None: any number of arguments
    call: Callable[[list[Value]], Value]


CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}

_BINARY_SYMBOLS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
}
_SUPPORTED_BINARY = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_SUPPORTED_COMPARE = (ast.Lt, ast.LtE, ast.Eq, ast.NotEq, ast.Gt, ast.GtE, ast.In, ast.NotIn)


# --- bounds -------------------------------------------------------------------------------------


def _checked(value: Number) -> Number:
    """Every intermediate number passes through here, so no step can feed a huge one onward."""
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError(f"{_TOO_LARGE} or not a number")
    if abs(value) > MAX_MAGNITUDE:
        raise CalculatorError(_TOO_LARGE)
    return value


def _number(value: Value, where: str) -> Number:
    if isinstance(value, list):
        raise CalculatorError(
            f"{where} needs a number, got a list; use sum, mean, min, max, median or len on lists"
        )
    return value


def _numbers(args: list[Value], name: str) -> list[Number]:
    """The numbers of ``f([1, 2, 3])`` or ``f(1, 2, 3)``: aggregate functions take either form."""
    if len(args) == 1 and isinstance(args[0], list):
        return list(args[0])
    return [_number(arg, name) for arg in args]


def _power(base: Value, exponent: Value) -> Number:
    base = _number(base, "'**'")
    exponent = _number(exponent, "'**'")
    if base < 0 and not float(exponent).is_integer():
        raise CalculatorError(
            "a negative number raised to a fractional power has no real value; "
            "use abs() on the base if you meant the magnitude"
        )
    if base == 0 and exponent < 0:
        raise CalculatorError("division by zero (0 raised to a negative power)")
    # Estimate the result's size from logarithms first: 9**9**9 must be refused, never computed.
    if base != 0 and exponent * math.log10(abs(base)) > math.log10(MAX_MAGNITUDE) + 1e-9:
        raise CalculatorError(f"{_TOO_LARGE}: {base} ** {exponent}")
    try:
        return _checked(base**exponent)
    except OverflowError:
        raise CalculatorError(_TOO_LARGE) from None


# --- functions ----------------------------------------------------------------------------------


def _round(args: list[Value]) -> Number:
    x = _number(args[0], "round")
    if len(args) == 1:
        return round(x)
    digits = _number(args[1], "round")
    if not isinstance(digits, int) or abs(digits) > MAX_ROUND_DIGITS:
        raise CalculatorError(
            f"round's digits must be a whole number between -{MAX_ROUND_DIGITS} and "
            f"{MAX_ROUND_DIGITS}, e.g. round(x, 2)"
        )
    return round(x, digits)


def _sum(args: list[Value]) -> Number:
    numbers = _numbers(args, "sum")
    if any(isinstance(n, float) for n in numbers):
        return math.fsum(numbers)  # exact summation: sum([0.1] * 10) is 1.0
    return sum(numbers)


def _nonempty(args: list[Value], name: str) -> list[Number]:
    numbers = _numbers(args, name)
    if not numbers:
        raise CalculatorError(f"{name} needs at least one number, got an empty list")
    return numbers


def _mean(args: list[Value], name: str) -> float:
    numbers = _nonempty(args, name)
    return _sum([numbers]) / len(numbers)


def _median(args: list[Value]) -> Number:
    numbers = sorted(_nonempty(args, "median"))
    middle = len(numbers) // 2
    if len(numbers) % 2:
        return numbers[middle]
    return (numbers[middle - 1] + numbers[middle]) / 2


def _len(args: list[Value]) -> int:
    if not isinstance(args[0], list):
        raise CalculatorError("len needs a list, e.g. len([1, 2, 3])")
    return len(args[0])


def _sqrt(args: list[Value]) -> float:
    x = _number(args[0], "sqrt")
    if x < 0:
        raise CalculatorError(f"sqrt needs a number >= 0, got {x}")
    return math.sqrt(x)


def _log(args: list[Value], name: str, base: float | None = None) -> float:
    x = _number(args[0], name)
    if x <= 0:
        raise CalculatorError(f"{name} needs a number > 0, got {x}")
    if len(args) == 2:
        base = _number(args[1], name)
        if base <= 0 or base == 1:
            raise CalculatorError(f"log's base must be > 0 and not 1, got {base}")
    return math.log(x) if base is None else math.log(x, base)


def _exp(args: list[Value]) -> float:
    try:
        return math.exp(_number(args[0], "exp"))
    except OverflowError:
        raise CalculatorError(_TOO_LARGE) from None


def _pct_change(args: list[Value]) -> float:
    old, new = (_number(arg, "pct_change") for arg in args)
    if old == 0:
        raise CalculatorError("pct_change needs a non-zero old value (the first argument)")
    return _checked((new - old) / old) * 100


def _percent(args: list[Value]) -> float:
    part, whole = (_number(arg, "percent") for arg in args)
    if whole == 0:
        raise CalculatorError("percent needs a non-zero whole (the second argument)")
    return _checked(part / whole) * 100


def _cagr(args: list[Value]) -> float:
    start, end, years = (_number(arg, "cagr") for arg in args)
    if start <= 0 or end < 0 or years <= 0:
        raise CalculatorError(
            "cagr(start, end, years) needs start > 0, end >= 0 and years > 0, "
            f"got cagr({start}, {end}, {years})"
        )
    growth = _power(_checked(end / start), _checked(1 / years))
    return (growth - 1) * 100


def _one_number(name: str, function: Callable[[Number], Number]) -> Callable[[list[Value]], Value]:
    return lambda args: function(_number(args[0], name))


FUNCTIONS: dict[str, _Function] = {
    "abs": _Function("abs(x)", 1, 1, _one_number("abs", abs)),
    "avg": _Function("avg(list) or avg(a, b, ...)", 1, None, lambda a: _mean(a, "avg")),
    "cagr": _Function("cagr(start, end, years) in percent", 3, 3, _cagr),
    "ceil": _Function("ceil(x)", 1, 1, _one_number("ceil", math.ceil)),
    "exp": _Function("exp(x)", 1, 1, _exp),
    "floor": _Function("floor(x)", 1, 1, _one_number("floor", math.floor)),
    "len": _Function("len(list)", 1, 1, _len),
    "log": _Function("log(x) natural, or log(x, base)", 1, 2, lambda a: _log(a, "log")),
    "log10": _Function("log10(x)", 1, 1, lambda a: _log(a, "log10", 10)),
    "log2": _Function("log2(x)", 1, 1, lambda a: _log(a, "log2", 2)),
    "max": _Function("max(list) or max(a, b, ...)", 1, None, lambda a: max(_nonempty(a, "max"))),
    "mean": _Function("mean(list) or mean(a, b, ...)", 1, None, lambda a: _mean(a, "mean")),
    "median": _Function("median(list) or median(a, b, ...)", 1, None, _median),
    "min": _Function("min(list) or min(a, b, ...)", 1, None, lambda a: min(_nonempty(a, "min"))),
    "pct_change": _Function("pct_change(old, new) = (new - old) / old * 100", 2, 2, _pct_change),
    "percent": _Function("percent(part, whole) = part / whole * 100", 2, 2, _percent),
    "pow": _Function("pow(x, y)", 2, 2, lambda a: _power(a[0], a[1])),
    "round": _Function("round(x, digits=0)", 1, 2, _round),
    "sqrt": _Function("sqrt(x)", 1, 1, _sqrt),
    "sum": _Function("sum(list) or sum(a, b, ...)", 1, None, _sum),
}

_FUNCTION_NAMES = ", ".join(FUNCTIONS)
_ALLOWED = (
    "only numbers, arithmetic (+ - * / // % **), comparisons, and/or/not, lists and these "
    f"functions: {_FUNCTION_NAMES}; constants: {', '.join(CONSTANTS)}"
)

FUNCTIONS_HELP = (
    "Evaluates one arithmetic expression in Python syntax and returns its value. Numbers are "
    "written plainly (1234.5, 1e6; no thousands separators, no % sign); operators are "
    "+ - * / // % (modulo) ** and unary -, comparisons < <= == != > >= (chains like "
    "0 < x <= 1 work) and in / not in give true/false, combined with and, or, not; parentheses "
    "group; [1, 2, 3] is a list and [1, 2, 3][0] indexes it. Constants: pi, e. Functions: "
    + "; ".join(spec.usage for spec in FUNCTIONS.values())
    + ". Limits: "
    f"{MAX_EXPRESSION_CHARS} characters, numbers up to 1e100 in magnitude, "
    f"{MAX_LIST_ITEMS} list items. Example: round(pct_change(94.1, 91.2), 2) gives -3.08."
)


# --- parsing and static checks ------------------------------------------------------------------


def _parse(expression: str) -> ast.Expression:
    stripped = expression.lstrip()
    indent = len(expression) - len(stripped)
    try:
        with warnings.catch_warnings():
            # Invalid escapes in text literals warn while parsing; such literals are refused anyway.
            warnings.simplefilter("ignore")
            return ast.parse(stripped.rstrip(), mode="eval")
    except SyntaxError as error:
        place = f"column {(error.offset or 1) + indent}"
        if error.lineno and error.lineno > 1:
            place = f"line {error.lineno}, column {error.offset or 1}"
        raise CalculatorError(f"syntax error at {place}: {error.msg}") from None
    except (ValueError, RecursionError, MemoryError) as error:
        raise CalculatorError(f"syntax error: {error}") from None


def _check_size(tree: ast.Expression) -> None:
    """Counted without recursion, so a pathological tree cannot overflow the stack here."""
    nodes = 0
    stack: list[tuple[ast.AST, int]] = [(tree.body, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise CalculatorError(
                f"expression too complex (more than {MAX_NODES} parts); split it into several "
                "calculations"
            )
        if depth > MAX_DEPTH:
            raise CalculatorError(
                f"expression nested too deeply (more than {MAX_DEPTH} levels); split it into "
                "several calculations"
            )
        stack.extend((child, depth + 1) for child in _expression_children(node))


def _expression_children(node: ast.AST) -> list[ast.AST]:
    # Operators and load contexts are AST nodes too, but they are not parts an expression costs.
    return [
        child
        for child in ast.iter_child_nodes(node)
        if not isinstance(child, ast.expr_context | ast.operator | ast.cmpop | ast.boolop)
        and not isinstance(child, ast.unaryop)
    ]


def _refuse(what: str) -> CalculatorError:
    return CalculatorError(f"{what} is not allowed: {_ALLOWED}")


def _describe(node: ast.AST) -> str:
    """How to name a refused construct so the caller recognises it."""
    if isinstance(node, ast.Attribute):
        return f"attribute access ('.{node.attr}')"
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        return f"text ({ast.unparse(node)[:40]})"
    if isinstance(node, ast.Constant):
        return f"the literal {ast.unparse(node)[:40]}"
    if isinstance(node, ast.Tuple):
        return "a tuple (use [...] for lists; write numbers without thousands separators)"
    descriptions: dict[type[ast.AST], str] = {
        ast.Lambda: "lambda",
        ast.ListComp: "a comprehension",
        ast.SetComp: "a comprehension",
        ast.DictComp: "a comprehension",
        ast.GeneratorExp: "a comprehension",
        ast.JoinedStr: "an f-string",
        ast.FormattedValue: "an f-string",
        ast.NamedExpr: "assignment (':=')",
        ast.IfExp: "'x if condition else y'",
        ast.Dict: "a dict",
        ast.Set: "a set",
        ast.Starred: "'*' unpacking",
        ast.Slice: "slicing",
        ast.Await: "await",
        ast.Yield: "yield",
        ast.YieldFrom: "yield",
    }
    return descriptions.get(type(node), type(node).__name__)


def _validate(node: ast.AST) -> None:
    """Refuses anything outside the language before any of it runs, including the branches that
    and/or would short-circuit past."""
    if isinstance(node, ast.Constant):
        if type(node.value) not in (int, float, bool):
            raise _refuse(_describe(node))
        if not isinstance(node.value, bool):
            _checked(node.value)
    elif isinstance(node, ast.Name):
        _validate_name(node.id)
    elif isinstance(node, ast.BinOp):
        if not isinstance(node.op, _SUPPORTED_BINARY):
            symbol = _BINARY_SYMBOLS.get(type(node.op), type(node.op).__name__)
            raise _refuse(f"the operator '{symbol}'")
        _validate_all([node.left, node.right])
    elif isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Invert):
            raise _refuse("the operator '~'")
        _validate(node.operand)
    elif isinstance(node, ast.BoolOp):
        _validate_all(node.values)
    elif isinstance(node, ast.Compare):
        for op in node.ops:
            if not isinstance(op, _SUPPORTED_COMPARE):
                raise _refuse("'is' (use == and !=)")
        _validate_all([node.left, *node.comparators])
    elif isinstance(node, ast.List):
        _validate_all(node.elts)
    elif isinstance(node, ast.Subscript):
        _validate_subscript(node)
    elif isinstance(node, ast.Call):
        _validate_call(node)
    else:
        raise _refuse(_describe(node))


def _validate_all(nodes: Sequence[ast.AST]) -> None:
    for node in nodes:
        _validate(node)


def _validate_name(name: str) -> None:
    if name in CONSTANTS:
        return
    if name in FUNCTIONS:
        raise CalculatorError(f"'{name}' is a function: call it, e.g. {FUNCTIONS[name].usage}")
    if name.startswith("_") or hasattr(builtins, name):
        raise _refuse(f"'{name}'")
    raise CalculatorError(
        f"unknown name '{name}': only the constants {', '.join(CONSTANTS)} are defined; "
        "write the numbers themselves"
    )


def _validate_subscript(node: ast.Subscript) -> None:
    if isinstance(node.slice, ast.Slice):
        raise _refuse("slicing")
    _validate_all([node.value, node.slice])


def _validate_call(node: ast.Call) -> None:
    if not isinstance(node.func, ast.Name):
        _validate(node.func)  # names the construct being called (lambda, attribute...) if refused
        raise _refuse(f"calling '{ast.unparse(node.func)[:40]}'")
    name = node.func.id
    if name not in FUNCTIONS:
        if name.startswith("_") or hasattr(builtins, name):
            raise _refuse(f"'{name}'")
        raise CalculatorError(f"unknown function '{name}'; available: {_FUNCTION_NAMES}")
    spec = FUNCTIONS[name]
    if node.keywords:
        raise CalculatorError(
            f"keyword arguments are not supported; pass arguments by position: {spec.usage}"
        )
    if spec.max_args is None:
        arity_ok, expected = len(node.args) >= spec.min_args, f"at least {spec.min_args}"
    else:
        arity_ok = spec.min_args <= len(node.args) <= spec.max_args
        expected = (
            str(spec.min_args)
            if spec.min_args == spec.max_args
            else f"{spec.min_args} to {spec.max_args}"
        )
    if not arity_ok:
        raise CalculatorError(
            f"{name} takes {expected} argument(s), got {len(node.args)}: {spec.usage}"
        )
    _validate_all(node.args)


# --- evaluation ---------------------------------------------------------------------------------


class _Evaluator:
    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def evaluate(self, node: ast.AST) -> Value:
        if time.perf_counter() > self.deadline:
            raise CalculatorError(
                f"evaluation took too long (limit {TIME_BUDGET_SECONDS * 1000:.0f} ms); split "
                "the expression into several calculations"
            )
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return CONSTANTS[node.id]
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node)
        if isinstance(node, ast.BoolOp):
            return self._boolean(node)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.List):
            return self._list(node)
        if isinstance(node, ast.Subscript):
            return self._index(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _refuse(_describe(node))  # unreachable after _validate; kept as a second guard

    def _binary(self, node: ast.BinOp) -> Number:
        left, right = self.evaluate(node.left), self.evaluate(node.right)
        symbol = _BINARY_SYMBOLS[type(node.op)]
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        left, right = _number(left, f"'{symbol}'"), _number(right, f"'{symbol}'")
        # Operands are at most 1e100, so even a product costs nothing to compute before checking.
        operations: dict[str, Callable[[Number, Number], Number]] = {
            "+": lambda a, b: a + b,
            "-": lambda a, b: a - b,
            "*": lambda a, b: a * b,
            "/": lambda a, b: a / b,
            "//": lambda a, b: a // b,
            "%": lambda a, b: a % b,
        }
        if right == 0 and symbol in ("/", "//", "%"):
            raise CalculatorError(f"division by zero (right-hand side of '{symbol}' is 0)")
        return _checked(operations[symbol](left, right))

    def _unary(self, node: ast.UnaryOp) -> Value:
        operand = self.evaluate(node.operand)
        if isinstance(node.op, ast.Not):
            return not operand
        number = _number(operand, "unary minus/plus")
        return -number if isinstance(node.op, ast.USub) else +number

    def _boolean(self, node: ast.BoolOp) -> bool:
        # Short-circuits like Python, but always answers true/false rather than an operand.
        stop_at = not isinstance(node.op, ast.And)
        for value_node in node.values:
            if bool(self.evaluate(value_node)) == stop_at:
                return stop_at
        return not stop_at

    def _compare(self, node: ast.Compare) -> bool:
        left = self.evaluate(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.evaluate(comparator)
            if not _compare_pair(op, left, right):
                return False
            left = right
        return True

    def _list(self, node: ast.List) -> list[Value]:
        if len(node.elts) > MAX_LIST_ITEMS:
            raise CalculatorError(f"list too long (limit {MAX_LIST_ITEMS} items)")
        items = [self.evaluate(element) for element in node.elts]
        if any(isinstance(item, list) for item in items):
            raise CalculatorError("lists may hold only numbers, not other lists")
        return items

    def _index(self, node: ast.Subscript) -> Value:
        container, index = self.evaluate(node.value), self.evaluate(node.slice)
        if not isinstance(container, list):
            raise CalculatorError("only lists can be indexed, e.g. [1, 2, 3][0]")
        if not isinstance(index, int) or isinstance(index, bool):
            raise CalculatorError("a list index must be a whole number, e.g. [1, 2, 3][0]")
        if not -len(container) <= index < len(container):
            raise CalculatorError(
                f"index {index} out of range for a list of {len(container)} items "
                "(0 is the first, -1 the last)"
            )
        return container[index]

    def _call(self, node: ast.Call) -> Value:
        assert isinstance(node.func, ast.Name)  # guaranteed by _validate_call
        args = [self.evaluate(arg) for arg in node.args]
        result = FUNCTIONS[node.func.id].call(args)
        return result if isinstance(result, bool | list) else _checked(result)


def _compare_pair(op: ast.cmpop, left: Value, right: Value) -> bool:
    if isinstance(op, ast.Eq):
        return left == right
    if isinstance(op, ast.NotEq):
        return left != right
    if isinstance(op, ast.In | ast.NotIn):
        if not isinstance(right, list):
            raise CalculatorError("'in' needs a list on its right, e.g. 2 in [1, 2, 3]")
        return (left in right) == isinstance(op, ast.In)
    left, right = _number(left, "a comparison"), _number(right, "a comparison")
    if isinstance(op, ast.Lt):
        return left < right
    if isinstance(op, ast.LtE):
        return left <= right
    if isinstance(op, ast.Gt):
        return left > right
    return left >= right


# --- rendering and entry point ------------------------------------------------------------------


def render(value: Value) -> str:
    """Readable text of a result; 12 significant digits hide float noise (0.1 + 0.2 shows 0.3)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format(value + 0.0, ".12g")  # + 0.0 turns -0.0 into 0.0
    return "[" + ", ".join(render(item) for item in value) + "]"


def calculate(expr: str) -> CalculationResult:
    """Evaluates ``expr`` (see FUNCTIONS_HELP) or raises CalculatorError saying how to fix it."""
    if not isinstance(expr, str):
        raise CalculatorError("the expression must be text, e.g. '(91.2 - 94.1) / 94.1 * 100'")
    if len(expr) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(
            f"expression too long ({len(expr)} characters; limit {MAX_EXPRESSION_CHARS}); split "
            "it into several calculations"
        )
    if not expr.strip():
        raise CalculatorError("empty expression; write one such as '(91.2 - 94.1) / 94.1 * 100'")
    tree = _parse(expr)
    _check_size(tree)
    _validate(tree.body)
    evaluator = _Evaluator(time.perf_counter() + TIME_BUDGET_SECONDS)
    try:
        value = evaluator.evaluate(tree.body)
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except OverflowError:
        raise CalculatorError(_TOO_LARGE) from None
    except (ArithmeticError, ValueError, TypeError) as error:
        # A safety net: the explicit checks above should have said something more helpful.
        raise CalculatorError(f"cannot evaluate: {error}") from None
    return CalculationResult(expression=expr, value=value, text=render(value))


class CalculateArgs(Arguments):
    expr: Annotated[
        str, Field(description="e.g. pct_change(91.2, 94.1)", max_length=MAX_EXPRESSION_CHARS)
    ]


CALCULATE = ToolSpec(
    name="calculate",
    summary="exact arithmetic and percent change.",
    description=(
        "Evaluate arithmetic exactly instead of by hand: differences, ratios, percent change "
        "between table cells, sums over lists. " + FUNCTIONS_HELP
    ),
    arguments=CalculateArgs,
    function=calculate,
    needs_store=False,
)
