"""BFCL's system prompt for prompting models: the one a prompting model gets at the start
of an entry in BFCL inference (``bfcl-safe generate``, the play API's text environments).

The system prompt's wording is BFCL's own data: it is read from the dataset's wheel
(``bfcl_eval/constants/default_prompts.py``), read by :mod:`bfcl_safe.interp.wheel_literals`
and only its literal assignments taken — nothing from the wheel is imported or executed — and assembled the
way BFCL assembles its default format (``ret_fmt=python&tool_call_tag=False&
func_doc_fmt=json&prompt_fmt=plaintext&style=classic``; the multi-turn categories use no
other). It sits in ``checker`` so that ``generate`` and the integrations, layers side by
side, both use it.
"""

from __future__ import annotations

import ast
import json
from typing import Any, Mapping, Sequence

from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.wheel_literals import LiteralError, LiteralReader

#: Where the prompt templates live inside the ``bfcl_eval`` package.
PROMPTS_PATH = "constants/default_prompts.py"

#: The one system-prompt format of the multi-turn categories (BFCL's
#: ``DEFAULT_SYSTEM_PROMPT_FORMAT``): Python call syntax, no tag, docs as JSON,
#: plain text, the classic wording.
RETURN_FORMAT = "python"
DOC_FORMAT = "json"
PROMPT_FORMAT = "plaintext"
PROMPT_STYLE = "classic"

#: The module-level names the prompt is assembled from.
_NEEDED = ("OUTPUT_FORMAT_MAPPING", "PARAM_TYPE_MAPPING", "PROMPT_STYLE_TEMPLATES", "PROMPT_TEMPLATE_MAPPING")


class PromptTemplateError(BfclSafeError, ValueError):
    """The wheel's prompt templates cannot be read; ``name`` is the missing or bad one."""

    def __init__(self, name: str, reason: str):
        self.name = name
        self.reason = reason
        super().__init__(f"{PROMPTS_PATH}: {name}: {reason}")

    def __reduce__(self):
        return (type(self), (self.name, self.reason))


def parse_prompt_templates(source: str) -> dict[str, Any]:
    """The literal module-level assignments of ``default_prompts.py``, by name (an
    assignment may use the names of earlier ones, and ``+`` of two strings)."""
    reader = LiteralReader(PROMPTS_PATH)
    try:
        module = reader.parse(source)
    except LiteralError as exc:
        raise PromptTemplateError("<module>", f"does not parse ({exc})") from None
    known: dict[str, Any] = {}
    for statement in module.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            name = statement.targets[0].id
            try:
                known[name] = reader.value(statement.value, name, known)
            except LiteralError as exc:
                if exc.bound:
                    raise PromptTemplateError(name, str(exc)) from None
                continue
    for name in _NEEDED:
        if name not in known:
            raise PromptTemplateError(name, "missing, or not a literal")
    return known


def load_prompt_templates(dataset: Any) -> dict[str, Any]:
    """The prompt templates of the dataset's wheel (a :class:`~bfcl_safe.checker.dataset.Dataset`)."""
    # The dataset's source reads members of the wheel or package folder it was opened from.
    raw = dataset._source.read(PROMPTS_PATH)
    try:
        return parse_prompt_templates(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PromptTemplateError("<module>", f"not UTF-8 ({exc.reason})") from None


def system_prompt(templates: Mapping[str, Any], docs: Sequence[Mapping[str, Any]]) -> str:
    """BFCL's default system prompt for a prompting model with the tool ``docs``
    (``formulate_system_prompt`` with the default format)."""
    try:
        style = templates["PROMPT_STYLE_TEMPLATES"][PROMPT_STYLE]
        tool_call_format = style["tool_call_no_tag"].format(
            output_format=templates["OUTPUT_FORMAT_MAPPING"][RETURN_FORMAT],
            param_types=templates["PARAM_TYPE_MAPPING"][RETURN_FORMAT],
        )
        available_tools = style["available_tools"].format(format=DOC_FORMAT, functions=json.dumps(list(docs), indent=4))
        return templates["PROMPT_TEMPLATE_MAPPING"][PROMPT_FORMAT].format(
            persona=style["persona"],
            task=style["task"],
            tool_call_format=tool_call_format,
            multiturn_behavior=style["multiturn_behavior"],
            available_tools=available_tools,
        )
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
        raise PromptTemplateError("PROMPT_STYLE_TEMPLATES",
                                  f"not the expected templates ({type(exc).__name__}: {exc})") from None


def with_system_prompt(messages: Sequence[Mapping[str, Any]], prompt: str) -> list[dict]:
    """The first turn's messages with the system prompt: put before the content of a
    system message that comes first, else inserted as a new first message (BFCL's
    ``system_prompt_pre_processing_chat_model``)."""
    out = [dict(message) for message in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = prompt + "\n\n" + out[0]["content"]
    else:
        out.insert(0, {"role": "system", "content": prompt})
    return out


__all__ = ["PROMPTS_PATH", "PromptTemplateError", "load_prompt_templates", "parse_prompt_templates",
           "system_prompt", "with_system_prompt"]
