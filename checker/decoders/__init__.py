"""Decoders: one model step as stored in a result file -> the calls to run.

Each decoder mirrors one reference decoding path exactly (the handler's
``decode_execute``), including which inputs decode to nothing and which fail (a failed
step is skipped by the scorer). None of them evaluates text. Identifiers in Python
text are NFKC-normalised where CPython's parser does it (:func:`.base.identifier`).
Every decoder is linear in its text: no backtracking regex (tags are cut with
:func:`.base.tag_blocks`), and libcst only behind :func:`.guard.check_libcst_input`.

Modules (imports go downwards only: ``registry`` -> families -> ``base``):

- :mod:`.base` — :class:`DecodeError`, the ``(decode, display)`` pair, the shared helpers;
- :mod:`.fc` — steps stored as data (``fc``, ``fc_list``, ``gemini_fc``, ``cohere``,
  ``mining``, ``undecodable``);
- :mod:`.json_text` — JSON calls in text (``json``, ``bitagent``, ``falcon``,
  ``qwen_tool_call``, ``hammer``, ``glm``, ``granite``, ``think_agent``);
- :mod:`.prompting` (+ its libcst half :mod:`.prompting_cst`) — Python call text
  (``prompting``, ``gemini_tool_code``, ``phi``, ``nemotron``);
- :mod:`.python_text` — handlers that ``eval``/``ast.parse`` model text
  (``llama_python_tag``, ``minicpm``);
- :mod:`.evaluate` — what the reference's ``eval`` of a piece of model text gives, on
  the pure subset (literals, displays, operators, pure builtins), never running it;
- :mod:`.functiongemma` — FunctionGemma's own notation;
- :mod:`.registry` — ``DECODERS`` (name -> pair), ``auto`` and :func:`decode_step`;
- :mod:`.models` — ``DECODER_OF_HANDLER``: which decoder a model's handler class needs.

To add a decoder: write its ``items`` function in the family module it belongs to (or a
new module with its own ``DECODERS``), add it to that module's ``DECODERS``, (a new
module: to ``registry.DECODERS``), and map the handler class in ``models``.
"""

from bfcl_safe.checker.decoders.base import DecodeError
from bfcl_safe.checker.decoders.registry import DECODERS, decode_step

__all__ = ["DECODERS", "DecodeError", "decode_step"]
