"""The executor skips working out the reference's denylist head when no denylisted word
appears before the first "(": it must never skip a text whose head is denylisted."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bfcl_safe.interp.execute import DENYLIST, _denylist_head
from bfcl_safe.interp.table import MethodTable
from bfcl_safe.interp.tools import tool


class Tools:
    """Never called: only the table's names (and so the name rewrite) matter here."""

    @tool
    def ls(self):
        return None

    @tool
    def run(self):
        return None

_fragments = st.sampled_from(
    [*sorted(DENYLIST), "ls", "run", "x", ".", " ", "(", ")", "'", "_", "a.b", "Tools_instance", "r", "un", "kil", "l"]
)


@settings(max_examples=2000)
@given(st.lists(_fragments, max_size=8), st.sampled_from([None, ["m_eval_multi_turn_base_1_Tools_instance"]]))
def test_shortcut_never_hides_a_denylisted_head(parts, names):
    table = MethodTable([Tools()], names)
    text = "".join(parts)
    full = table.denylist_head(text)
    if full in DENYLIST:
        assert _denylist_head(text, table) == full
    else:
        assert _denylist_head(text, table) not in DENYLIST
