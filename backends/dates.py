"""``datetime.strptime`` for the backends, with the ISO forms they parse read directly.

The first ``strptime`` call of a process imports ``_strptime`` (with ``calendar`` and
``locale``) and builds its locale tables and the format's regex (about 2 ms), and each
call then costs a few microseconds of Python. The dataset's dates and timestamps are
``YYYY-MM-DD`` and ``YYYY-MM-DD HH:MM:SS``: a text of exactly that shape, in ASCII
digits, whose fields make a valid datetime, is that datetime (what ``strptime`` returns
for it). Anything else — another shape, other digits, an invalid field, another format,
a value that is not text — goes to ``datetime.strptime`` itself, so every result and
every error is ``strptime``'s.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

DATE_FORMAT = "%Y-%m-%d"
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"

_SHAPES = {
    DATE_FORMAT: re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})"),
    TIMESTAMP_FORMAT: re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})"),
}


def strptime(text: Any, fmt: str) -> datetime:
    """``datetime.strptime(text, fmt)``: the same value, or the same exception."""
    shape = _SHAPES.get(fmt)
    if shape is not None and type(text) is str:
        found = shape.fullmatch(text)
        if found is not None:
            try:
                year, month, day, hour, minute, second = (*map(int, found.groups()), 0, 0, 0)[:6]
                return datetime(year, month, day, hour, minute, second)
            except ValueError:  # (e.g. a 30th of February: strptime words the error)
                pass
    return datetime.strptime(text, fmt)
