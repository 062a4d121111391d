"""Identifiers in every Unicode compatibility form, against the reference's decoders.

CPython's parser NFKC-normalises every identifier that is not pure ASCII, so for the
reference ``[ｌｓ(a=True)]`` is ``ls(a=True)``, ``cd(folder=ｗｏｒｋｓｐａｃｅ)`` names
``'workspace'`` and, in an ``eval``, ``Ｔｒｕｅ`` is ``True``. String literals keep their
text. Every decoder that parses Python text must do the same: compared here with the
reference handlers in a child process (``tests/decoders_reference_child.py``), on
identifiers drawn from every compatibility tag (``<wide>``, ``<font>``, ``<compat>``
ligatures, ``<super>``, ``<sub>``, ``<small>``, ``<narrow>``, ``<circle>``, ...), including
characters that are no identifier characters although their NFKC form is (``x²``).
"""

from __future__ import annotations

import builtins
import sys
import unicodedata
from collections import defaultdict

import pytest
from hypothesis import example, given, strategies as st

from bfcl_safe.checker.decoders import DECODERS
from bfcl_safe.checker.decoders.base import identifier
from tests.decoders_reference_child import ReferenceChild
from tests.test_decoders_eval import agree


def _compatibility_characters() -> dict[str, list[str]]:
    """Compatibility tag -> characters valid inside an identifier whose NFKC form differs."""
    tags: dict[str, list[str]] = defaultdict(list)
    for code in range(0x80, sys.maxunicode + 1):
        char = chr(code)
        if not ("a" + char).isidentifier() or unicodedata.normalize("NFKC", char) == char:
            continue
        decomposition = unicodedata.decomposition(char)
        tag = decomposition.split()[0] if decomposition.startswith("<") else "<canonical>"
        tags[tag].append(char)
    return dict(tags)


COMPATIBILITY = _compatibility_characters()
ALL_CHARS = sorted({char for chars in COMPATIBILITY.values() for char in chars})
#: Characters that are no identifier characters although their NFKC form is (``²``,
#: ``①``, ``™``): CPython's tokenizer refuses them before normalising (SyntaxError).
ODD = [chr(code) for code in range(0x80, sys.maxunicode + 1)
       if not ("a" + chr(code)).isidentifier() and unicodedata.normalize("NFKC", chr(code)) != chr(code)
       and unicodedata.normalize("NFKC", "a" + chr(code)).isidentifier()]
#: Every tag, with up to 12 of its characters spread over its range (ids stay readable).
SAMPLES = {tag: chars[:: max(1, len(chars) // 12)][:12]
           for tag, chars in sorted({**COMPATIBILITY, "<no identifier>": ODD}.items())}
#: Fullwidth/mathematical spellings of the ASCII letters, digits and underscore.
ASCII_FORMS: dict[str, list[str]] = defaultdict(list)
for _char in ALL_CHARS:
    _form = unicodedata.normalize("NFKC", _char)
    if len(_form) == 1 and (_form.isalnum() or _form == "_") and _form.isascii():
        ASCII_FORMS[_form].append(_char)


def spell(draw, word: str) -> str:
    """``word`` with some of its characters in a compatibility form."""
    out = []
    for char in word:
        forms = ASCII_FORMS.get(char)
        out.append(draw(st.sampled_from(forms)) if forms and draw(st.booleans()) else char)
    return "".join(out)


@st.composite
def identifiers(draw) -> str:
    """Identifiers mixing ASCII with characters of any compatibility form."""
    start = draw(st.sampled_from(["a", "ls", "cd", "_", "x"]))
    rest = draw(st.lists(st.sampled_from(ALL_CHARS) | st.sampled_from("abc_1"), max_size=3))
    if draw(st.integers(0, 9)) == 0:
        rest.append(draw(st.sampled_from(ODD)))  # a SyntaxError for both sides
    return spell(draw, start) + "".join(rest)


WORDS = ("ls", "cd", "folder", "workspace", "True", "False", "None", "if", "lambda", "mv_file", "a", "b")


@st.composite
def spelled(draw) -> str:
    return draw(identifiers()) if draw(st.booleans()) else spell(draw, draw(st.sampled_from(WORDS)))


@pytest.fixture(scope="module")
def child():
    process = ReferenceChild()
    yield process
    process.close()


def test_every_compatibility_tag_is_sampled():
    """The tables above are what they say: the tags Unicode has, and odd NFKC forms."""
    assert {"<wide>", "<font>", "<compat>", "<super>", "<sub>", "<narrow>", "<canonical>"} <= set(SAMPLES)
    assert len(ODD) > 100 and "\u00b2" in ODD and "\u2460" in ODD
    assert all(len(ASCII_FORMS[c]) >= 3 for c in "abcdefghijklmnopqrstuvwxyz0123456789")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("ｌｓ", "ls"), ("ﬁnd", "find"), ("𝐱", "x"), ("ls", "ls"), ("ℌ", "H"), ("x\u00b2", "x2"), ("é", "é")],
)
def test_identifier_is_nfkc_unless_ascii(text, expected):
    assert identifier(text) == expected


#: The examples of the issue, and the shapes around them.
CASES = [
    "[ｌｓ(a=True)]",
    "[cd(folder=ｗｏｒｋｓｐａｃｅ)]",
    "[cd(folder='ｗｏｒｋｓｐａｃｅ')]",
    "[ls(a=Ｔｒｕｅ)]",
    "[ls(ｉｆ=1)]",
    "[ls(a=ｌａｍｂｄａ)]",
    "[ﬁnd(ﬁ=ﬁ)]",
    "[a.ｂ.ｃ(d=1)]",
    "[ls(a=[ｘ, {ｙ: ｚ}])]",
    "[ls(a=ｆ(ｂ=ｃ))]",
    "[ls(a=ｆ(ｂ))]",
    "[ls(a=ｘ[ｙ])]",
    "[ls(a=Ｔｒｕｅ + 1)]",
    "[ls(a=ｌｅｎ('ab') + 1)]",
    "[ls(a=ℌ)]",
    "[ls(a=\u2118)]",
    "[ls(a=x\u00b2)]",
    "[ls(\uff3f=1)]",
    "[True(ls=True, b=True + 1)]",  # found by the fuzz run: a keyword constant called
    "[Ｔｒｕｅ(ls=1)]",
    "[True.x(a=1)]",
]


@pytest.mark.parametrize("decoder", ["prompting", "gemini_tool_code", "phi", "minicpm"])
@pytest.mark.parametrize("step", CASES, ids=range(len(CASES)))
def test_cases(child, decoder, step):
    if decoder == "minicpm":
        step = "<|tool_call_start|>\n" + step[1:-1] + "\n<|tool_call_end|>"
    agree(child, decoder, step)


@pytest.mark.parametrize("tag", sorted(SAMPLES))
def test_every_tag_in_call_keyword_and_value(child, tag):
    for char in SAMPLES[tag]:
        name = "a" + char
        agree(child, "prompting", f"[{name}({name}={name}, b='{char}')]")
        agree(child, "llama_python_tag", f'{{"name": "{char}", "parameters": {{"a": {name}}}}}')


@given(spelled(), spelled(), spelled(), st.sampled_from(["prompting", "minicpm", "nemotron"]))
@example("ｌｓ", "ａ", "Ｔｒｕｅ", "prompting")
def test_calls_agree(child, name, keyword, value, decoder):
    step = f"[{name}({keyword}={value}, b={value} + 1)]"
    if decoder == "minicpm":
        step = "<|tool_call_start|>\n" + step[1:-1] + "\n<|tool_call_end|>"
    elif decoder == "nemotron":
        step = "<TOOLCALL>" + step + "</TOOLCALL>"
    agree(child, decoder, step)


#: Names the Llama handler's eval resolves to something other than a NameError (builtins,
#: the handler module's globals): those would be values of model code, left out.
_RESOLVED = frozenset(dir(builtins)) | {"json"}


@given(spelled())
@example("Ｎｏｎｅ")
@example("＿＿debug＿＿")
def test_llama_names_agree(child, name):
    if identifier(name) in _RESOLVED - {"True", "False", "None", "__debug__"}:
        return
    agree(child, "llama_python_tag", f'{{"name": "ls", "parameters": {{"a": {name}, "b": "{name}"}}}}')


def test_decoders_named_here_exist():
    assert {"prompting", "gemini_tool_code", "phi", "minicpm", "nemotron", "llama_python_tag"} <= set(DECODERS)
