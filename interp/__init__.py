"""Safe call engine: parse calls (libcst text or FC JSON) and run them on a whitelisted method table.

Knows nothing about BFCL's backends; nothing here evaluates text.
"""

if __name__ != "bfcl_safe.interp":  # a second copy, imported from the source tree by its folder name
    raise ImportError("import bfcl_safe.interp, not interp: the folder interp/ is installed as bfcl_safe.interp")

from bfcl_safe.interp.builtins import check_depth
from bfcl_safe.interp.callspec import CallSpec, Container, Failure, NameRef, SourceString
from bfcl_safe.interp.errors import RejectedInput
from bfcl_safe.interp.execute import DENYLIST, run_call, run_step
from bfcl_safe.interp.fc_front import fc_call, reference_text
from bfcl_safe.interp.result_text import ERROR_PREFIX, format_error, format_result
from bfcl_safe.interp.table import MethodTable
from bfcl_safe.interp.text import parse_call
from bfcl_safe.interp.tools import tool, tool_names

__all__ = [
    "CallSpec", "Container", "DENYLIST", "check_depth", "ERROR_PREFIX", "Failure", "MethodTable", "NameRef",
    "RejectedInput", "SourceString", "fc_call", "format_error", "format_result", "parse_call",
    "reference_text", "run_call", "run_step", "tool", "tool_names",
]
