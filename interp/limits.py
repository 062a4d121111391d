"""Every limit the interpreter enforces, in one place.

Exceeding one turns the offending call (or step) into an error result; it never
crashes, hangs or exhausts memory.
"""

#: Longest call text accepted by the text front-end, in characters.
MAX_SOURCE_LENGTH = 200_000
#: Longest text handed to libcst (texts outside the fast path's simple subset);
#: libcst needs seconds for texts far beyond this, which hostile input must not buy.
MAX_LIBCST_SOURCE_LENGTH = 50_000
#: Deepest nesting of calls, lists, dicts, tuples and sets inside one call.
MAX_NESTING_DEPTH = 100
#: Most calls executed in one step; the rest get an error result.
MAX_CALLS_PER_STEP = 10_000
#: Most elements (list items, dict entries, ...) in one call's literals, summed.
MAX_LITERAL_ELEMENTS = 20_000
#: Longest string literal, in characters.
MAX_STRING_LENGTH = 200_000
#: Most digits in an integer literal (CPython's own limit for str -> int).
MAX_INT_DIGITS = 4300
#: Largest integer a backend computes (digits); beyond it the reference would not finish.
MAX_COMPUTED_DIGITS = 100_000
#: Highest working precision (digits) a backend accepts for mpmath or decimal arithmetic.
MAX_PRECISION_DIGITS = 20_000
#: Most entries a simulated file tree may hold, counted with shared subtrees expanded
#: (``cp`` shares children, so repeated copies double the tree that is compared and
#: printed; the reference would take hours and gigabytes past this).
MAX_TREE_ENTRIES = 100_000

# --------------------------------------------------------------------------- budgets
#: Deterministic budgets per scored entry (both sides together) or per played episode,
#: counted by :class:`bfcl_safe.interp.budget.Budget`, never timed. Exceeding one fails
#: the entry with the non-official resource-limit error type (it is not a tool error).
#: Each sits far above anything real output needs; add a key here (with a comment and
#: a line in SECURITY.md) for every new kind of counted work.
ENTRY_BUDGETS: dict[str, int] = {}
