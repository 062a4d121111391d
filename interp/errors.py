"""The one error root for input the interpreter refuses."""

from __future__ import annotations


class RejectedInput(ValueError):
    """Call text or an FC call that the interpreter will not run.

    ``reason`` says what was refused, ``source`` is the input, ``position`` is the
    0-based offset of the offending construct in ``source`` when known. The message
    is one line, with the position as ``line:column`` (1-based), like a compiler's.
    """

    def __init__(self, reason: str, source: str = "", position: int | None = None):
        self.reason = reason
        self.source = source
        self.position = position
        super().__init__(self._render())

    def _render(self) -> str:
        if self.position is None:
            return self.reason
        line = self.source.count("\n", 0, self.position) + 1
        column = self.position - (self.source.rfind("\n", 0, self.position) + 1) + 1
        return f"{self.reason} at {line}:{column}"

    def caret(self) -> str:
        """The offending source line with a caret under the construct (for terminals)."""
        if self.position is None:
            return str(self)
        start = self.source.rfind("\n", 0, self.position) + 1
        end = self.source.find("\n", self.position)
        end = len(self.source) if end == -1 else end
        line = self.source[start:end]
        if len(line) > 200:
            shift = max(0, self.position - start - 100)
            line, start = line[shift : shift + 200], start + shift
        return f"{self}\n{line}\n{' ' * (self.position - start)}^"

    def __reduce__(self):
        return (type(self), (self.reason, self.source, self.position))
