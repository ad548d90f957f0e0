"""The calculate tool: correct values for every operator and function, and quick, specific
refusals for everything outside the language (resource bombs, escapes from the sandbox)."""

from __future__ import annotations

import contextlib
import math
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docsym.tools.calculator import (
    FUNCTIONS,
    FUNCTIONS_HELP,
    CalculationResult,
    CalculatorError,
    calculate,
)
from docsym.tools.errors import ToolError


def value_of(expr: str) -> object:
    return calculate(expr).value


# A refusal comes before any costly work: this thread's CPU time (which neither other processes
# nor a loaded machine add to) stays far under what computing the refused expressions would
# take (minutes, or all memory). Calculations take about a millisecond.
CPU_SECONDS = 0.5


def refusal(expr: str) -> str:
    """The refusal message, asserting it came quickly and as a CalculatorError."""
    started = time.thread_time()
    with pytest.raises(CalculatorError) as caught:
        calculate(expr)
    assert time.thread_time() - started < CPU_SECONDS
    return str(caught.value)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("1 + 2", 3),
        ("7 - 10", -3),
        ("6 * 7", 42),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("-7 // 2", -4),
        ("7 % 3", 1),
        ("2 ** 10", 1024),
        ("2 ** -2", 0.25),
        ("-3", -3),
        ("+3", 3),
        ("-(2 + 3) * 4", -20),
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("2 ** 3 ** 2", 512),
        ("1_000 + 0.5", 1000.5),
        ("1e3", 1000.0),
        ("10 ** 100", 10**100),
    ],
)
def test_arithmetic(expr: str, expected: float) -> None:
    result = value_of(expr)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("1 < 2", True),
        ("2 <= 2", True),
        ("3 == 3.0", True),
        ("3 != 3", False),
        ("3 > 4", False),
        ("4 >= 5", False),
        ("1 < 2 < 3", True),
        ("1 < 3 < 2", False),
        ("0 <= 0.5 <= 1 != 2", True),
        ("1 < 2 and 2 < 3", True),
        ("1 > 2 or 2 > 3", False),
        ("not 1 > 2", True),
        ("not 0", True),
        ("1 > 2 and 1 / 0 > 0", False),  # short-circuits like Python
        ("2 in [1, 2, 3]", True),
        ("5 not in [1, 2, 3]", True),
        ("[1, 2] == [1, 2]", True),
        ("True and 3", True),  # and/or answer true/false, not an operand
        ("0 or 0.0", False),
    ],
)
def test_comparisons_and_logic_give_booleans(expr: str, expected: bool) -> None:
    assert value_of(expr) is expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("round(3.14159, 2)", 3.14),
        ("round(2.6)", 3),
        ("round(12345, -2)", 12300),
        ("abs(-4.5)", 4.5),
        ("min(3, 1, 2)", 1),
        ("min([3, 1, 2])", 1),
        ("max(3, 1, 2)", 3),
        ("max([3, 1, 2])", 3),
        ("sum([1, 2, 3])", 6),
        ("sum(1, 2, 3)", 6),
        ("sum([0.5]) + sum([0.25, 0.25])", 1.0),
        ("len([4, 5, 6])", 3),
        ("mean([1, 2, 3, 4])", 2.5),
        ("avg(1, 2, 3)", 2.0),
        ("median([5, 1, 3])", 3),
        ("median(4, 1, 3, 2)", 2.5),
        ("sqrt(16)", 4.0),
        ("log(e)", 1.0),
        ("log(8, 2)", pytest.approx(3.0)),
        ("log10(1000)", pytest.approx(3.0)),
        ("log2(1024)", 10.0),
        ("exp(0)", 1.0),
        ("floor(-2.5)", -3),
        ("ceil(2.1)", 3),
        ("pow(2, 8)", 256),
        ("pi", math.pi),
        ("[10, 20, 30][1]", 20),
        ("[10, 20, 30][-1]", 30),
        ("pct_change(94.1, 91.2)", pytest.approx((91.2 - 94.1) / 94.1 * 100)),
        ("round(pct_change(94.1, 91.2), 2)", -3.08),
        ("pct_change(50, 75)", 50.0),
        ("percent(25, 200)", 12.5),
        ("cagr(100, 200, 5)", pytest.approx((2 ** (1 / 5) - 1) * 100)),
        ("cagr(100, 100, 3)", 0.0),
    ],
)
def test_functions(expr: str, expected: object) -> None:
    assert value_of(expr) == expected


def test_sum_of_floats_is_exact() -> None:
    assert value_of("sum([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])") == 1.0


def test_result_model_and_rendering() -> None:
    result = calculate("0.1 + 0.2")
    assert isinstance(result, CalculationResult)
    assert result.expression == "0.1 + 0.2"
    assert result.text == "0.3"
    assert calculate("2 > 1").text == "true"
    assert calculate("[1, 2.5, 1/3]").text == "[1, 2.5, 0.333333333333]"
    assert calculate("10 ** 20").text == "100000000000000000000"
    assert calculate("-0.0").text == "0"
    dumped = calculate("[1, 2]").model_dump()
    assert dumped == {"expression": "[1, 2]", "value": [1, 2], "text": "[1, 2]"}


def test_whitespace_and_newlines_inside_parentheses() -> None:
    assert value_of("  (1 +\n 2)  ") == 3


def test_help_names_every_function() -> None:
    for name in FUNCTIONS:
        assert f"{name}(" in FUNCTIONS_HELP
    assert "pct_change(old, new)" in FUNCTIONS_HELP


def test_calculator_error_is_a_tool_error() -> None:
    assert issubclass(CalculatorError, ToolError)


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("9**9**9", "number too large (limit 1e100)"),
        ("10**10**10", "number too large (limit 1e100)"),
        ("2**100000", "number too large (limit 1e100)"),
        ("0.5 ** -1000", "number too large (limit 1e100)"),
        ("(1e308)*10", "number too large (limit 1e100)"),
        ("1e101", "number too large (limit 1e100)"),
        ("10**99 * 10**99", "number too large (limit 1e100)"),
        ("10**100 + 10**100", "number too large (limit 1e100)"),
        ("1e-100 ** -2", "number too large (limit 1e100)"),
        ("exp(1000)", "number too large (limit 1e100)"),
        ("pow(10, 101)", "number too large (limit 1e100)"),
        ("cagr(1, 10, 1e-9)", "number too large (limit 1e100)"),
        ("(" * 1000 + "1" + ")" * 1000, "expression too long (2001 characters; limit 2000)"),
        ("(" * 300 + "1" + ")" * 300, "too many nested parentheses"),
        ("-(" * 60 + "1" + ")" * 60, "nested too deeply"),
        ("2**" * 600 + "2", "nested too deeply"),
        ("[" * 60 + "]" * 60, "nested too deeply"),
        ("-" * 1999 + "1", "nested too deeply"),
        ("+".join(["1"] * 300), "nested too deeply"),
        ("sum([" + ", ".join(["1"] * 600) + "])", "too complex (more than 500 parts)"),
        ("[" + ",".join(["1"] * 10_000) + "]", "expression too long"),
        ("[1]*10**9", "'*' needs a number, got a list"),
        ("[1] + [2]", "'+' needs a number, got a list"),
        ('"a"*10**9', "text ('a') is not allowed"),
        ("__import__('os')", "'__import__' is not allowed: only numbers"),
        ("().__class__", "attribute access ('.__class__') is not allowed"),
        ("(1).__class__.__bases__", "attribute access ('.__bases__') is not allowed"),
        ("math.sqrt(2)", "attribute access ('.sqrt') is not allowed"),
        ("open('/etc/passwd')", "'open' is not allowed: only numbers"),
        ("eval('1')", "'eval' is not allowed"),
        ("(1)(2)", "calling '1' is not allowed"),
        ("__builtins__", "'__builtins__' is not allowed"),
        ("lambda: 1", "lambda is not allowed"),
        ("(lambda x: x)(1)", "lambda is not allowed"),
        ("[x for x in [1, 2]]", "a comprehension is not allowed"),
        ("sum(x for x in [1, 2])", "a comprehension is not allowed"),
        ("f'{1}'", "an f-string is not allowed"),
        ("(y := 2)", "assignment (':=') is not allowed"),
        ("1 if 2 else 3", "'x if condition else y' is not allowed"),
        ("{1: 2}", "a dict is not allowed"),
        ("{1, 2}", "a set is not allowed"),
        ("1,234.5", "a tuple (use [...] for lists; write numbers without thousands separators)"),
        ("[1, 2, 3][0:2]", "slicing is not allowed"),
        ("[*[1, 2]]", "'*' unpacking is not allowed"),
        ("1 << 1000000", "the operator '<<' is not allowed"),
        ("~1", "the operator '~' is not allowed"),
        ("1 is 1", "'is' (use == and !=) is not allowed"),
        ("None", "the literal None is not allowed"),
        ("1j", "the literal 1j is not allowed"),
        ("1 / 0", "division by zero"),
        ("5 // 0.0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("foo(1)", "unknown function 'foo'; available: abs, avg,"),
        ("x + 1", "unknown name 'x'"),
        ("sqrt", "'sqrt' is a function: call it, e.g. sqrt(x)"),
        ("round(1.5, ndigits=1)", "keyword arguments are not supported"),
        ("round(1, 2, 3)", "round takes 1 to 2 argument(s), got 3"),
        ("pct_change(1)", "pct_change takes 2 argument(s), got 1"),
        ("max()", "max takes at least 1 argument(s), got 0"),
        ("1 +", "syntax error at column"),
        ("1 + * 2", "syntax error at column 5"),
        ("", "empty expression"),
        ("sqrt(-4)", "sqrt needs a number >= 0"),
        ("log(0)", "log needs a number > 0"),
        ("log(8, 1)", "log's base must be > 0 and not 1"),
        ("(-8) ** (1/3)", "negative number raised to a fractional power"),
        ("pct_change(0, 5)", "non-zero old value"),
        ("percent(1, 0)", "non-zero whole"),
        ("cagr(0, 5, 2)", "cagr(start, end, years) needs start > 0"),
        ("round(1.23, 0.5)", "round's digits must be a whole number"),
        ("mean([])", "mean needs at least one number"),
        ("len(3)", "len needs a list"),
        ("[1, 2][2]", "index 2 out of range for a list of 2 items"),
        ("[1, 2][0.5]", "a list index must be a whole number"),
        ("5[0]", "only lists can be indexed"),
        ("[[1], [2]]", "lists may hold only numbers"),
        ("[1, 2] < 3", "a comparison needs a number, got a list"),
        ("2 in 3", "'in' needs a list on its right"),
        ("sqrt([4])", "sqrt needs a number, got a list"),
    ],
)
def test_refusals_are_quick_and_specific(expr: str, fragment: str) -> None:
    assert fragment in refusal(expr)


def test_refusal_lists_the_allowed_language() -> None:
    message = refusal("__import__('os').system('true')")
    assert "only numbers, arithmetic" in message
    assert "pct_change" in message
    assert "constants: pi, e" in message


def test_refused_branch_is_refused_even_when_short_circuited() -> None:
    assert "'open' is not allowed" in refusal("1 > 2 and open('x')")


def test_largest_allowed_numbers_still_work() -> None:
    assert value_of("10 ** 100") == 10**100
    assert value_of("-(10 ** 100)") == -(10**100)
    assert value_of("1e100 / 1e100") == 1.0
    assert value_of("floor(1e100)") == int(1e100)
    assert value_of("2 ** 332 > 0")


def test_not_a_string_is_refused() -> None:
    with pytest.raises(CalculatorError, match="must be text"):
        calculate(42)  # type: ignore[arg-type]


# --- property tests -----------------------------------------------------------------------------

_LANGUAGE_ALPHABET = "0123456789.+-*/%()[],<>=! eaxpinotrdsqlgmu_'\"\n*:"


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text_only_ever_raises_calculator_error(expr: str) -> None:
    with contextlib.suppress(CalculatorError):
        calculate(expr)


@settings(max_examples=800, deadline=None)
@given(st.text(alphabet=_LANGUAGE_ALPHABET, max_size=40))
def test_language_like_text_only_ever_raises_calculator_error(expr: str) -> None:
    started = time.thread_time()
    try:
        result = calculate(expr)
    except CalculatorError:
        pass
    else:
        assert isinstance(result.text, str) and result.text
    assert time.thread_time() - started < CPU_SECONDS


def _arithmetic() -> st.SearchStrategy[tuple[str, int]]:
    """Expressions paired with their value computed independently, as an oracle."""
    leaves = st.integers(min_value=0, max_value=10**6).map(lambda n: (str(n), n))

    def extend(children: st.SearchStrategy[tuple[str, int]]) -> st.SearchStrategy:
        def combine(left: tuple[str, int], op: str, right: tuple[str, int]) -> tuple[str, int]:
            value = {"+": left[1] + right[1], "-": left[1] - right[1], "*": left[1] * right[1]}
            return f"({left[0]} {op} {right[0]})", value[op]

        negate = children.map(lambda child: (f"-({child[0]})", -child[1]))
        return st.one_of(st.builds(combine, children, st.sampled_from("+-*"), children), negate)

    return st.recursive(leaves, extend, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_arithmetic())
def test_integer_arithmetic_matches_an_independent_oracle(case: tuple[str, int]) -> None:
    expr, expected = case
    assert value_of(expr) == expected
