"""Safe call engine: parse calls (libcst text or FC JSON) and run them on a whitelisted method table.

Knows nothing about BFCL's backends; nothing here evaluates text.
"""

from interp.callspec import CallSpec, Container, Failure, NameRef, SourceString
from interp.errors import RejectedInput
from interp.execute import DENYLIST, run_call, run_step
from interp.fc import fc_call, reference_text
from interp.results import ERROR_PREFIX, format_error, format_result
from interp.table import MethodTable
from interp.text import parse_call
from interp.tools import tool, tool_names

__all__ = [
    "CallSpec", "Container", "DENYLIST", "ERROR_PREFIX", "Failure", "MethodTable", "NameRef",
    "RejectedInput", "SourceString", "fc_call", "format_error", "format_result", "parse_call",
    "reference_text", "run_call", "run_step", "tool", "tool_names",
]
