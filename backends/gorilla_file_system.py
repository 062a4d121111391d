"""GorillaFileSystem: a toy in-memory file system with shell-like tools.

Behaviour (results, error texts, state and its rendering) follows the reference
``gorilla_file_system`` module of bfcl-eval. The reference has many quirks that
decide verdicts; they are kept on purpose and marked ``Quirk:`` below. The main
ones are about object identity: moving or copying a directory reuses (``mv``) or
shallow-copies (``cp``) its ``contents`` dict, and the children keep their old
``parent``; our tree keeps exactly the same sharing, so that later calls see the
same graph the reference would.

Tool arguments are untrusted and may have any type: the tools perform the same
Python operations in the same order as the reference, so that a wrong type fails
with the same exception text.

Hostile trees: the reference compares, prints and searches trees recursively; here
every walk (``==``, ``repr``, ``find``, ``du``, ``cp``'s size check, ``tree_as_plain``)
uses a work list, with the same results, so no depth reaches Python's recursion limit.
``cp`` of a directory into itself makes a tree that contains itself, as in the
reference: ``repr`` writes ``{...}`` where it meets itself, and ``find``/``du`` end in
the reference's RecursionError text. ``mkdir`` refuses a directory deeper than the
``tree_depth`` budget, and stored contents are charged (``backends/growth.py``).
"""

from __future__ import annotations

import copy
import re
from typing import Any, Dict, Iterator, List, Mapping, Optional, Union

import attrs

from bfcl_safe.backends import growth
from bfcl_safe.backends.base import Backend
from bfcl_safe.interp import limits
from bfcl_safe.interp.tools import tool

#: Characters a new file or directory name may not contain.
FORBIDDEN_NAME_CHARACTERS = '|/\\?%*:"><'
_FORBIDDEN_NAME = re.compile("[" + re.escape(FORBIDDEN_NAME_CHARACTERS) + "]")

#: Units for ``du -h``, in order; past the last one the size is shown in PB.
SIZE_UNITS = ("B", "KB", "MB", "GB", "TB")

#: ``wc`` modes: lines, words, characters. A list, as in the reference: membership
#: by ``==``, so an unhashable mode is reported as invalid rather than raising.
WC_MODES = ["l", "w", "c"]

#: Name of the directory the reference uses when a scenario has no ``root``.
DEFAULT_ROOT_NAME = "/"


class File:
    """A file: a name and its content (any value a tool was given, not only ``str``)."""

    __slots__ = ("name", "content")

    def __init__(self, name: Any, content: Any = "") -> None:
        self.name = name
        self.content = content

    def _read(self) -> Any:
        return self.content

    def __repr__(self) -> str:
        return f"<<File: {self.name}, Content: {self.content}>>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, File):
            return False
        return self.name == other.name and self.content == other.content

    __hash__ = None  # type: ignore[assignment]  # like the reference: defining __eq__ makes it unhashable


class Directory:
    """A directory: a name, its parent (``None`` for the root) and a name -> item dict."""

    __slots__ = ("name", "parent", "contents")

    def __init__(self, name: Any, parent: Optional["Directory"] = None) -> None:
        self.name = name
        self.parent = parent
        self.contents: Dict[Any, Union[File, Directory]] = {}

    def _get_item(self, item_name: Any) -> Union[File, "Directory", None]:
        """The named child, or None; ``"."`` is the directory itself.

        Quirk: ``"."`` wins over a child that is really named ``"."``.
        """
        if item_name == ".":
            return self
        return self.contents.get(item_name)

    def _add_file(self, file_name: Any, content: Any = "") -> None:
        if file_name in self.contents:
            raise ValueError(f"File '{file_name}' already exists in directory '{self.name}'.")
        self.contents[file_name] = File(file_name, content)

    def _add_directory(self, dir_name: Any) -> None:
        if dir_name in self.contents:
            raise ValueError(f"Directory '{dir_name}' already exists in directory '{self.name}'.")
        self.contents[dir_name] = Directory(dir_name, self)

    def __repr__(self) -> str:
        return _render(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Directory):
            return False
        return _same_tree(self, other)

    __hash__ = None  # type: ignore[assignment]  # like the reference: defining __eq__ makes it unhashable


def _valid_name(name: Any) -> bool:
    """False if ``name`` contains a forbidden character (``in`` on ``name``: any type may fail)."""
    if type(name) is str:  # (the usual case: one pass in C)
        return _FORBIDDEN_NAME.search(name) is None
    return not any(c in name for c in FORBIDDEN_NAME_CHARACTERS)


def _no_such_path(path: Any) -> dict:
    return {"error": f"cd: '{path}': No such file or directory"}


# -- walks over trees -------------------------------------------------------------
# Every walk is iterative: a tree may be deep (mkdir/cd chains) or contain itself
# (``cp`` of a directory into itself shares the new copy with its own contents, as in
# the reference), and nothing here may hit Python's recursion limit.


def _render(root: Directory) -> str:
    """``repr`` of a directory, exactly as the reference's recursive ``__repr__`` writes it:
    ``<Directory: NAME, Parent: PARENT-NAME, Contents: {...}>``, files as
    ``<<File: NAME, Content: CONTENT>>``; a contents dict met again inside itself is
    written ``{...}``, as ``dict.__repr__`` does."""
    out: list[str] = []
    open_dicts: set[int] = set()
    # Work items, last first: a str is written as it is; ("dir", d) opens a directory;
    # ("close", key) ends a contents dict; ("item", key, value, first) writes one entry.
    work: list[Any] = [("dir", root)]
    while work:
        task = work.pop()
        if type(task) is str:
            out.append(task)
            continue
        if task[0] == "close":
            open_dicts.discard(task[1])
            out.append("}")
            continue
        if task[0] == "item":
            _, key, value, first = task
            out.append(("" if first else ", ") + repr(key) + ": ")
            if isinstance(value, Directory):
                work.append(("dir", value))
            else:
                out.append(repr(value))
            continue
        node = task[1]
        # A Directory is always truthy, so the reference's ``parent.name if parent``
        # is "the parent's name, or None for the root".
        parent_name = node.parent.name if node.parent is not None else None
        out.append(f"<Directory: {node.name}, Parent: {parent_name}, Contents: ")
        contents = node.contents
        key = id(contents)
        if key in open_dicts:
            out.append("{...}>")
            continue
        work.append(">")
        if not contents:
            out.append("{}")
            continue
        open_dicts.add(key)
        out.append("{")
        work.append(("close", key))
        entries = list(contents.items())
        for index in range(len(entries) - 1, -1, -1):
            work.append(("item", entries[index][0], entries[index][1], index == 0))
    return "".join(out)


def tree_as_plain(root: Directory, leaf: Any) -> dict:
    """A directory as nested plain data, built with a work list (no recursion, whatever
    the depth): ``{"name": leaf(name), "contents": {key: ...}}``, files as ``{"name":
    leaf(name), "content": leaf(content)}``, keys that are not strings as their ``str()``.
    A contents dict met again inside itself (a directory copied into itself) is written
    ``"{...}"``, as ``repr`` writes it. ``leaf`` converts names and file contents (e.g.
    ``checker.episode.plain``)."""
    top: dict = {}
    open_dicts: set[int] = set()
    work: list[tuple[Any, Any, Any]] = [("enter", root, top)]
    while work:
        step, node, target = work.pop()
        if step == "leave":
            open_dicts.discard(node)
            continue
        target["name"] = leaf(node.name)
        if id(node.contents) in open_dicts:
            target["contents"] = "{...}"
            continue
        open_dicts.add(id(node.contents))
        contents: dict = {}
        target["contents"] = contents
        work.append(("leave", id(node.contents), None))
        children = []
        for key, child in node.contents.items():
            name = key if type(key) is str else str(key)
            if isinstance(child, Directory):
                contents[name] = {}
                children.append(("enter", child, contents[name]))
            else:
                contents[name] = {"name": leaf(child.name), "content": leaf(child.content)}
        work.extend(reversed(children))
    return top


def _same_tree(left: Directory, right: Directory) -> bool:
    """The reference's recursive ``==`` on directories (names equal, contents dicts equal:
    same keys, values ``is``-identical or equal), computed with a work list. A pair of
    directories met again while comparing is not compared again (the reference would
    recurse without end on two trees that both contain themselves)."""
    work = [(left, right)]
    seen: set[tuple[int, int]] = set()
    while work:
        a, b = work.pop()
        if not (a.name == b.name):
            return False
        mine, theirs = a.contents, b.contents
        if len(mine) != len(theirs):
            return False
        for key, value in mine.items():
            other = theirs.get(key, _MISSING)
            if other is _MISSING:
                return False
            if value is other:
                continue
            if type(value) is Directory and type(other) is Directory:
                pair = (id(value), id(other))
                if pair not in seen:
                    seen.add(pair)
                    work.append((value, other))
            elif not (value == other):
                return False
    return True


_MISSING = object()


class _Cycle(Exception):
    """A walk entered a directory it was already walking: the tree contains itself."""


# The reference's recursive ``find`` and ``du``, kept only for trees that contain
# themselves: there the reference recurses until Python's recursion limit, and the
# RecursionError's wording depends on the kind of call the limit is hit in (so on the
# shape of the code and on the depth of the stack). Once an iterative walk has found the
# cycle, these run from the same place the old recursive tools did and end in the same
# error, which becomes the tool's error result; they never run on a tree without a cycle.


def _find_recursive(directory: Directory) -> None:
    # The reference's recursion without its paths and matches: only its RecursionError is
    # kept, and it is raised by the calls alone (building a path or testing a name calls
    # nothing that counts depth; a name that is not text failed the iterative walk
    # first). The paths would be gigabytes: each level's are longer than the last, and
    # long-context directories hold dozens of files per level. Each level's items scanned
    # are charged to ``state_scan``.
    _scan(directory.contents)
    for item in directory.contents.values():
        if isinstance(item, Directory):
            _find_recursive(item)


def _disk_size_recursive(item: Any) -> int:
    if isinstance(item, File):
        return len(item._read().encode("utf-8"))
    if isinstance(item, Directory):
        return sum(_disk_size_recursive(child) for child in item.contents.values())
    return 0


def _as_recursion_error(recursive: Any, *args: Any) -> RecursionError:
    try:
        recursive(*args)
    except RecursionError as exc:
        return exc
    return RecursionError("maximum recursion depth exceeded")  # pragma: no cover - a cycle recurses


def _walk(start: Directory) -> Iterator[tuple[int, Any, Any]]:
    """The reference's recursive pre-order walk, iteratively: yields ``(level, name,
    item)`` for every item under ``start``, children in order (``level`` 0 for the items
    of ``start`` itself). Entering a directory that is already being walked (the tree
    contains itself) raises _Cycle, after the items the reference had visited first."""
    on_path: set[int] = {id(start)}
    # Entries left in each directory being walked, innermost last, and those directories.
    stack: list[Iterator] = [iter(list(start.contents.items()))]
    walked: list[int] = [id(start)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            on_path.discard(walked.pop())
            continue
        item_name, item = entry
        yield len(stack) - 1, item_name, item
        if isinstance(item, Directory):
            if id(item) in on_path:
                raise _Cycle()
            growth.walk(1)
            on_path.add(id(item))
            walked.append(id(item))
            stack.append(iter(list(item.contents.items())))


def _disk_size(directory: Directory) -> int:
    """Bytes of UTF-8 content under ``directory``, as the reference's recursive ``du``
    sums them (a ``_read`` per file, children in order)."""
    total = 0
    try:
        for _, _, item in _walk(directory):
            if isinstance(item, File):
                total += len(item._read().encode("utf-8"))
    except _Cycle:
        raise _as_recursion_error(_disk_size_recursive, directory) from None
    return total


#: (bound once: the recursive find calls it at every level without a module lookup)
_scan = growth.scan


#: Characters of paths ``find`` may build before it charges them (charged in batches:
#: one charge per path would cost more than the walk).
_PATHS_BATCH = 1 << 16


def _find_under(directory: Directory, prefix: str, name: Any) -> list:
    """The paths under ``directory`` whose last part contains ``name``, pre-order, as the
    reference's recursive ``find`` lists them. Their characters are charged to
    ``result_chars`` before they are built (at most _PATHS_BATCH ahead of the charge)."""
    matches = []
    prefixes = [prefix]  # prefixes[level]: the path of the directory walked at that level
    pending = 0
    try:
        for level, item_name, item in _walk(directory):
            named = len(item_name) if type(item_name) is str else len(str(item_name))
            pending += len(prefixes[level]) + 1 + named
            if pending > _PATHS_BATCH:
                growth.result_text(pending)
                pending = 0
            item_path = f"{prefixes[level]}/{item_name}"
            if name is None or name in item_name:
                matches.append(item_path)
            if isinstance(item, Directory):
                del prefixes[level + 1:]
                prefixes.append(item_path)
    except _Cycle:
        raise _as_recursion_error(_find_recursive, directory) from None
    if pending:
        growth.result_text(pending)
    return matches


def _depth(directory: Directory) -> int:
    """Levels from the top of ``directory``'s parent chain (the root is level 0)."""
    depth = 0
    here = directory.parent
    while here is not None:
        depth += 1
        here = here.parent
    return depth


@attrs.define(eq=False)
class GorillaFileSystem(Backend):
    """State: ``long_context`` and the ``root`` tree (both compared), and the current directory."""

    long_context: bool
    root: Directory
    _current_dir: Directory

    @classmethod
    def from_scenario(cls, config: Mapping[str, Any], long_context_data: Mapping[str, Any] | None) -> GorillaFileSystem:
        """The file system of a scenario: ``config`` is
        ``{"root": {NAME: {"type": "directory", "contents": {...}}}}``; in long-context
        mode files are padded (longer files, many extra files)."""
        if "root" not in config:
            # Quirk: the default root is not padded even in long-context mode.
            root = Directory(DEFAULT_ROOT_NAME, None)
        else:
            top = config["root"]
            root_name = list(top.keys())[0]
            root = Directory(root_name, None)
            if long_context_data is not None:
                padding = _Padding(
                    tail_used=long_context_data["FILES_TAIL_USED"],
                    extension=long_context_data["FILE_CONTENT_EXTENSION"],
                    extra_files=long_context_data["POPULATE_FILE_EXTENSION"],
                )
            else:
                padding = None
            _load_into(root, top[root_name]["contents"], padding)
        return cls(long_context=long_context_data is not None, root=root, current_dir=root)

    def public_state(self) -> dict[str, Any]:
        """The attributes the reference compares, in its order."""
        return {"long_context": self.long_context, "root": self.root}

    # -- navigation ---------------------------------------------------------------

    def _navigate_to_directory(self, path: Any) -> Union[Directory, dict]:
        """The directory at ``path`` (None or "." is the current one), or an error dict."""
        if path is None or path == ".":
            return self._current_dir
        elif path == "/":
            return self.root
        names = path.strip("/").split("/")
        here = self.root if path.startswith("/") else self._current_dir
        for name in names:
            step = here._get_item(name)
            if not isinstance(step, Directory):
                return _no_such_path(path)
            here = step
        return here

    @tool
    def pwd(self):
        """Show the path of the current directory.

        Returns:
            current_working_directory (str): the path, from the root's own name down.
        """
        # Quirk: the reference stops at ``name != root`` (a str against a Directory,
        # always true), so it walks up to the top and includes the root's name:
        # "/" for the default root gives "//".
        names = []
        here = self._current_dir
        while here is not None:
            names.append(here.name)
            here = here.parent
        return {"current_working_directory": "/" + "/".join(reversed(names))}

    @tool
    def ls(self, a: bool = False) -> Dict[str, List[str]]:
        """List the current directory.

        Args:
            a (bool): [Optional] Include names starting with ".". Defaults to False.

        Returns:
            current_directory_content (List[str]): the names, in creation order.
        """
        growth.scan(self._current_dir.contents)
        names = list(self._current_dir.contents.keys())
        if not a:
            names = [name for name in names if not name.startswith(".")]
        return {"current_directory_content": names}

    @tool
    def cd(self, folder: str) -> Union[None, Dict[str, str]]:
        """Change the current directory by one level ("..", "/", "." or a child name).

        Args:
            folder (str): where to go; one level only.

        Returns:
            current_working_directory (str): the name (not path) of the new directory.
        """
        folder = folder.rstrip("/")
        if folder == "":
            folder = "/"
        if folder not in {".", "..", "/"} and "/" in folder:
            return {"error": f"cd: {folder}: Unsupported path. Only one folder level at a time is supported."}
        if folder == "..":
            if self._current_dir.parent is not None:
                # Quirk: children of a moved or copied directory still point at the
                # original parent object, so ".." may lead to a detached directory.
                self._current_dir = self._current_dir.parent
            elif self.root == self._current_dir:
                return {"error": "Current directory is already the root. Cannot go back."}
            else:
                return {"error": "cd: ..: No such directory"}
            return {}
        target = self._navigate_to_directory(folder)
        if isinstance(target, dict):
            return target
        self._current_dir = target
        return {"current_working_directory": target.name}

    # -- creating and writing -----------------------------------------------------

    @tool
    def mkdir(self, dir_name: str) -> Union[None, Dict[str, str]]:
        """Create a directory in the current directory.

        Args:
            dir_name (str): the new directory's name (no path).
        """
        if not _valid_name(dir_name):
            return {"error": f"mkdir: cannot create directory '{dir_name}': Invalid character"}
        if dir_name in self._current_dir.contents:
            return {"error": f"mkdir: cannot create directory '{dir_name}': File exists"}
        # Not in the reference: a chain of directories deeper than the tree_depth limit
        # is refused (the reference compares and prints trees recursively and fails a
        # few hundred levels down, so no official verdict depends on such a tree).
        growth.refuse_above(growth.TREE_DEPTH, _depth(self._current_dir) + 1)
        growth.store(dir_name)
        self._current_dir._add_directory(dir_name)
        return None

    @tool
    def touch(self, file_name: str) -> Union[None, Dict[str, str]]:
        """Create an empty file in the current directory.

        Args:
            file_name (str): the new file's name (no path).
        """
        if not _valid_name(file_name):
            return {"error": f"touch: cannot touch '{file_name}': Invalid character"}
        if file_name in self._current_dir.contents:
            return {"error": f"touch: cannot touch '{file_name}': File exists"}
        growth.store(file_name)
        self._current_dir._add_file(file_name)
        return None

    @tool
    def echo(self, content: str, file_name: Optional[str] = None) -> Union[Dict[str, str], None]:
        """Print ``content``, or overwrite an existing file of the current directory with it.

        Args:
            content (str): the text.
            file_name (str): [Optional] the file to write. Defaults to None (print).

        Returns:
            terminal_output (str): the content, when nothing was written.
        """
        if file_name is None:
            return {"terminal_output": content}
        if not _valid_name(file_name):
            return {"error": f"echo: cannot write to '{file_name}': Invalid character"}
        if not file_name:
            # Quirk: an empty (falsy) file name prints instead of writing.
            return {"terminal_output": content}
        if file_name not in self._current_dir.contents:
            return {"error": f"echo: cannot write to '{file_name}': No such file"}
        target = self._current_dir._get_item(file_name)
        if not isinstance(target, File):
            # Quirk: the reference calls File._write on whatever it found, so writing to
            # a directory (or to a file named ".", which resolves to the current
            # directory) fails with Python's AttributeError text.
            raise AttributeError(f"'{type(target).__name__}' object has no attribute '_write'")
        # ``content`` may be a live part of the state (``cat(...)``'s result dict, which
        # holds this file's content): the file then nests one level deeper per call.
        growth.store(content, records=0)
        target.content = content
        return None

    # -- reading ------------------------------------------------------------------

    @tool
    def cat(self, file_name: str) -> Dict[str, str]:
        """Show a file of the current directory.

        Args:
            file_name (str): the file's name (no path).

        Returns:
            file_content (str): its content.
        """
        if not _valid_name(file_name):
            return {"error": f"cat: '{file_name}': Invalid character"}
        if file_name not in self._current_dir.contents:
            return {"error": f"cat: '{file_name}': No such file or directory"}
        item = self._current_dir._get_item(file_name)
        if isinstance(item, File):
            return {"file_content": item.content}
        return {"error": f"cat: '{file_name}': Is a directory"}

    @tool
    def find(self, path: str = ".", name: Optional[str] = None) -> Dict[str, List[str]]:
        """Search recursively under ``path`` for items whose name contains ``name``.

        Args:
            path (str): where to start. Defaults to ".".
            name (str): [Optional] the substring to look for; None matches everything.

        Returns:
            matches (List[str]): matching paths, prefixed by ``path`` without trailing "/".
        """
        start = self._navigate_to_directory(path)
        if isinstance(start, dict):
            message = start.get("error", "")
            if message.startswith("cd:"):
                return {"error": message.replace("cd:", "find:", 1)}
            return start
        return {"matches": _find_under(start, path.rstrip("/"), name)}

    def _file_here(self, file_name: Any) -> Optional[File]:
        """The file ``file_name`` of the current directory, or None (missing or not a file)."""
        if file_name in self._current_dir.contents:
            item = self._current_dir._get_item(file_name)
            if isinstance(item, File):
                return item
        return None

    @tool
    def wc(self, file_name: str, mode: str = "l") -> Dict[str, Union[int, str]]:
        """Count the lines, words or characters of a file of the current directory.

        Args:
            file_name (str): the file's name.
            mode (str): "l" (lines), "w" (words) or "c" (characters). Defaults to "l".

        Returns:
            count (int): the count.
            type (str): "lines", "words" or "characters".
        """
        if mode not in WC_MODES:
            return {"error": f"wc: invalid mode '{mode}'"}
        file = self._file_here(file_name)
        if file is None:
            return {"error": f"wc: {file_name}: No such file or directory"}
        content = file.content
        if mode == "l":
            return {"count": len(content.splitlines()), "type": "lines"}
        if mode == "w":
            return {"count": len(content.split()), "type": "words"}
        return {"count": len(content), "type": "characters"}

    @tool
    def sort(self, file_name: str) -> Dict[str, str]:
        """Sort the lines of a file of the current directory (the file is unchanged).

        Args:
            file_name (str): the file's name.

        Returns:
            sorted_content (str): the sorted lines, joined by newlines.
        """
        file = self._file_here(file_name)
        if file is None:
            return {"error": f"sort: {file_name}: No such file or directory"}
        return {"sorted_content": "\n".join(sorted(file.content.splitlines()))}

    @tool
    def grep(self, file_name: str, pattern: str) -> Dict[str, Any]:
        """Lines of a file of the current directory that contain ``pattern``.

        Args:
            file_name (str): the file's name.
            pattern (str): the substring to look for.

        Returns:
            matching_lines (List[str]): the matching lines.
        """
        file = self._file_here(file_name)
        if file is None:
            return {"error": f"grep: {file_name}: No such file or directory"}
        return {"matching_lines": [line for line in file.content.splitlines() if pattern in line]}

    @tool
    def du(self, human_readable: bool = False) -> Dict[str, str]:
        """Size of the current directory: bytes of UTF-8 content, recursively.

        Args:
            human_readable (bool): show in B/KB/MB/... with two decimals. Defaults to False.

        Returns:
            disk_usage (str): the size.
        """
        size: float = _disk_size(self._current_dir)
        if not human_readable:
            return {"disk_usage": f"{size} bytes"}
        for unit in SIZE_UNITS:
            if size < 1024:
                return {"disk_usage": f"{size:.2f} {unit}"}
            size /= 1024
        return {"disk_usage": f"{size:.2f} PB"}

    @tool
    def tail(self, file_name: str, lines: int = 10) -> Dict[str, str]:
        """The last lines of a file of the current directory.

        Args:
            file_name (str): the file's name.
            lines (int): how many lines. Defaults to 10.

        Returns:
            last_lines (str): those lines, joined by newlines.
        """
        file = self._file_here(file_name)
        if file is None:
            return {"error": f"tail: {file_name}: No such file or directory"}
        content = file.content.splitlines()
        if lines > len(content):
            lines = len(content)
        # Quirk: a plain negative slice, so lines=0 gives the whole file and a
        # negative count drops lines from the start.
        return {"last_lines": "\n".join(content[-lines:])}

    @tool
    def diff(self, file_name1: str, file_name2: str) -> Dict[str, str]:
        """Compare two files of the current directory line by line.

        Args:
            file_name1 (str): the first file.
            file_name2 (str): the second file.

        Returns:
            diff_lines (str): "- old\\n+ new" for each differing pair of lines (extra lines
                of the longer file are ignored).
        """
        contents = self._current_dir.contents
        if file_name1 in contents and file_name2 in contents:
            first = self._current_dir._get_item(file_name1)
            second = self._current_dir._get_item(file_name2)
            if isinstance(first, File) and isinstance(second, File):
                pairs = zip(first.content.splitlines(), second.content.splitlines())
                changed = [f"- {old}\n+ {new}" for old, new in pairs if old != new]
                return {"diff_lines": "\n".join(changed)}
        return {"error": f"diff: {file_name1} or {file_name2}: No such file or directory"}

    # -- moving, copying, removing ------------------------------------------------

    @tool
    def mv(self, source: str, destination: str) -> Dict[str, str]:
        """Rename an item of the current directory, or move it into a sibling directory.

        Args:
            source (str): the item's name.
            destination (str): a new name, or the name of a directory to move into.

        Returns:
            result (str): what was done.
        """
        here = self._current_dir
        if source not in here.contents:
            return {"error": f"mv: cannot move '{source}': No such file or directory"}
        item = here._get_item(source)
        if not isinstance(item, (File, Directory)):
            return {"error": f"mv: cannot move '{source}': Not a file or directory"}
        if "/" in destination:
            return {"error": "mv: path not allowed in destination. Provide only a file or directory name."}
        if destination in here.contents:
            target = here._get_item(destination)
            if not isinstance(target, Directory):
                return {"error": f"mv: cannot move '{source}' to '{destination}': Not a directory"}
            if source in target.contents:
                return {"error": f"mv: cannot move '{source}' to '{destination}/{source}': File exists"}
            here.contents.pop(source)
            _place_copy(target, source, item, share=True)
            return {"result": f"'{source}' moved to '{destination}/{source}'"}
        here.contents.pop(source)
        _place_copy(here, destination, item, share=True)
        return {"result": f"'{source}' moved to '{destination}'"}

    @tool
    def rm(self, file_name: str) -> Dict[str, str]:
        """Remove a file or a directory (even non-empty) of the current directory.

        Args:
            file_name (str): the item's name.

        Returns:
            result (str): what was done.
        """
        here = self._current_dir
        if file_name not in here.contents:
            return {"error": f"rm: cannot remove '{file_name}': No such file or directory"}
        item = here._get_item(file_name)
        if not isinstance(item, (File, Directory)):
            return {"error": f"rm: cannot remove '{file_name}': Not a file or directory"}
        here.contents.pop(file_name)
        return {"result": f"'{file_name}' removed"}

    @tool
    def rmdir(self, dir_name: str) -> Dict[str, str]:
        """Remove an empty directory of the current directory.

        Args:
            dir_name (str): the directory's name.

        Returns:
            result (str): what was done.
        """
        here = self._current_dir
        if dir_name not in here.contents:
            return {"error": f"rmdir: cannot remove '{dir_name}': No such file or directory"}
        item = here._get_item(dir_name)
        if not isinstance(item, Directory):
            return {"error": f"rmdir: cannot remove '{dir_name}': Not a directory"}
        if item.contents:
            return {"error": f"rmdir: cannot remove '{dir_name}': Directory not empty"}
        here.contents.pop(dir_name)
        return {"result": f"'{dir_name}' removed"}

    @tool
    def cp(self, source: str, destination: str) -> Dict[str, str]:
        """Copy an item of the current directory to a new name, or into a sibling directory.

        Args:
            source (str): the item's name.
            destination (str): a new name, or the name of a directory to copy into.

        Returns:
            result (str): what was done.
        """
        here = self._current_dir
        if source not in here.contents:
            return {"error": f"cp: cannot copy '{source}': No such file or directory"}
        item = here._get_item(source)
        if not isinstance(item, (File, Directory)):
            return {"error": f"cp: cannot copy '{source}': Not a file or directory"}
        if "/" in destination:
            return {"error": "cp: path not allowed in destination. Provide only a file or directory name."}
        if destination in here.contents:
            target = here._get_item(destination)
            if not isinstance(target, Directory):
                return {"error": f"cp: cannot copy '{source}' to '{destination}': Not a directory"}
            # Quirk: the reference looks for "destination/source" among the target's
            # names (never there), so an existing name fails later in _add_file /
            # _add_directory with their ValueError.
            if f"{destination}/{source}" in target.contents:
                return {"error": f"cp: cannot copy '{source}' to '{destination}/{source}': File exists"}
            _check_tree_size(self.root, item)
            _place_copy(target, source, item, share=False)
            return {"result": f"'{source}' copied to '{destination}/{source}'"}
        _check_tree_size(self.root, item)
        _place_copy(here, destination, item, share=False)
        return {"result": f"'{source}' copied to '{destination}'"}


def _place_copy(target: Directory, name: Any, item: Union[File, Directory], share: bool) -> None:
    """Put a new item called ``name`` into ``target``, made from ``item``.

    A file gets ``item``'s content. A directory is a new ``Directory`` whose
    ``contents`` is ``item``'s own dict (``share``, for ``mv``) or a shallow copy of
    it (``cp``). Quirk: the children are shared, not copied, and keep ``item`` as
    their parent; and the copy is taken after the new directory was added, so
    copying a directory into itself copies the new directory too.
    """
    if isinstance(item, File):
        target._add_file(name, item.content)
    else:
        target._add_directory(name)
        target.contents[name].contents = item.contents if share else item.contents.copy()  # type: ignore[union-attr]


def _expanded_totals(node: Union[File, Directory], memo: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """``(entries, characters)`` under ``node`` (itself included) with shared subtrees
    counted each time they appear, as comparing and printing meet them; memoised, so
    linear in the distinct nodes, each charged to the ``tree_walk`` budget. A directory
    met again inside itself counts as one entry (the cycle is not followed)."""
    if not isinstance(node, Directory):
        return 1, _content_chars(node)
    active: set[int] = set()
    # Post-order with a work list: ("enter", d) then ("leave", d) after its children.
    work: list[tuple[str, Directory]] = [("enter", node)]
    while work:
        step, directory = work.pop()
        key = id(directory)
        if step == "leave":
            active.discard(key)
            entries, chars = 1, 0
            for child in directory.contents.values():
                if isinstance(child, Directory):
                    more = memo.get(id(child), (1, 0))  # absent: met inside itself
                else:
                    more = (1, _content_chars(child))
                entries, chars = entries + more[0], chars + more[1]
            memo[key] = (entries, chars)
            continue
        if key in memo or key in active:
            continue
        growth.walk(1)
        active.add(key)
        work.append(("leave", directory))
        children = [c for c in directory.contents.values() if isinstance(c, Directory)]
        work.extend(("enter", child) for child in reversed(children))
    return memo.get(id(node), (1, 0))


def _content_chars(item: Any) -> int:
    """Characters of a file's content (what printing the state writes for it)."""
    content = item.content if isinstance(item, File) else item
    if type(content) is str:
        return len(content)
    return growth.measure(content)[0]


def _check_tree_size(root: Directory, item: Union[File, Directory]) -> None:
    """Refuse a copy that would make the tree (as compared and printed) too large, and
    charge what it adds to the state budgets. Not in the reference, which would hang:
    no official verdict can depend on it."""
    if not isinstance(item, Directory):
        growth.store(item.content)
        return
    memo: dict[int, tuple[int, int]] = {}
    present = _expanded_totals(root, memo)[0]
    added, chars = _expanded_totals(item, memo)
    if present + added > limits.MAX_TREE_ENTRIES:
        raise MemoryError(f"cp: refused: the file system would hold more than {limits.MAX_TREE_ENTRIES} entries")
    growth.charge_state(chars, added)


@attrs.frozen
class _Padding:
    """Long-context additions: longer file contents and extra files in leaf directories."""

    tail_used: Any  # files whose content is left alone
    extension: Any  # appended to every other file's content
    extra_files: Any  # names of empty files added to each directory without subdirectories


def _load_into(directory: Directory, spec: Mapping[str, Any], padding: Optional[_Padding]) -> Directory:
    """Fill ``directory`` from a scenario's ``contents`` mapping."""
    leaf = True
    for name, entry in spec.items():
        kind = entry["type"]
        if kind == "directory":
            leaf = False
            child = Directory(name, directory)
            _load_into(child, entry["contents"], padding)
            directory.contents[name] = child
        elif kind == "file":
            content = entry["content"]
            if type(content) is not str:
                # Never share a mutable value with the caller's config (the reference
                # works on a deep copy; ``+=`` below would extend a list in place).
                content = copy.deepcopy(content)
            if padding is not None and name not in padding.tail_used:
                content += padding.extension
            directory.contents[name] = File(name, content)
        # Quirk: any other "type" is skipped silently.
    if leaf and padding is not None:
        for extra in padding.extra_files:
            directory._add_file(f"{extra}")
    return directory
