"""``bfcl-safe generate``: BFCL's multi-turn inference phase without executing model text.

- :mod:`.inference`: one entry played as BFCL's OpenAI-compatible handler plays it
  (FC or prompting), the calls run by bfcl-safe's interpreter on the entry's backends;
- :mod:`.client`: the ``openai`` SDK client with BFCL's retries;
- :mod:`.prompting`: BFCL's system prompt (read from the dataset's wheel) and its
  decoding-error texts;
- :mod:`.results`: result files in BFCL's layout, written entry by entry, resumable;
- :mod:`.run`: a run's plan (model, mode, entries) and N entries at a time;
- :mod:`.cli`: the ``bfcl-safe generate`` command.
"""
