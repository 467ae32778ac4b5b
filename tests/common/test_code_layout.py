"""The layout the code base holds to (issue 43), read from the source with `ast`: a file name says one thing (no two
modules share one), the package's modules import each other without a cycle (imports inside functions count), and no
function runs over 60 lines but the numerical kernels named below.

The package's modules are those of pyproject.toml's packages (its `package-dir` maps each to its folder); the
benchmarks are scripts, not modules of the package, and hold to the names and the function length too.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
MAX_FUNCTION_LINES = 60
# Functions allowed over MAX_FUNCTION_LINES, by file and qualified name, and why.
LONG_FUNCTIONS = {
    ("modeling_elmo/lstm_elmo.py", "run_wavefront"): (
        "the numerical kernel of the wavefront schedule (every layer of every direction advancing together): its "
        "chunk loop carries the state, the masks and the layers' outputs from one iteration to the next; cut into "
        "functions, they would pass a dozen tensors back and forth on the hot path"
    ),
}
# Folders whose files are not the code base's own: the environment, build outputs, the tests.
NOT_SOURCE = {"tests", "build", "dist", "__pycache__"}
# Launchers: training/X.py starts training/pretraining/X.py or training/finetuning/X.py and shares its name.
LAUNCHED_FOLDERS = ("training/pretraining", "training/finetuning")


def source_files() -> list[Path]:
    """Every Python file of the repository outside tests/ and hidden or build folders, as a path from its root."""
    files = []
    for path in sorted(REPOSITORY.rglob("*.py")):
        relative = path.relative_to(REPOSITORY)
        folders = relative.parts[:-1]
        if any(part in NOT_SOURCE or part.startswith(".") or part.endswith(".egg-info") for part in folders):
            continue
        files.append(relative)
    return files


def package_modules() -> dict[str, Path]:
    """The package's modules by their import name (``elmo_transformers.conversion.allennlp``), each with its file:
    the files directly in each folder of pyproject.toml's packages (a package's ``__init__.py`` under the package's
    own name). Links (the default model's copies of modeling_elmo's files) are not modules of their own."""
    setuptools = tomllib.loads((REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    package_dir = setuptools.get("package-dir", {})
    modules = {}
    for package in setuptools["packages"]:
        folder = _package_folder(package, package_dir)
        for path in sorted((REPOSITORY / folder).glob("*.py")):
            if path.is_symlink():
                continue
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            modules[name] = path.relative_to(REPOSITORY)
    return modules


def _package_folder(package: str, package_dir: dict[str, str]) -> Path:
    """The folder of `package` as setuptools finds it: the longest prefix that `package-dir` maps, then the rest of
    the dotted name as folders."""
    parts = package.split(".")
    for length in range(len(parts), 0, -1):
        prefix = ".".join(parts[:length])
        if prefix in package_dir:
            return Path(package_dir[prefix], *parts[length:])
    return Path(*parts)


# ---------------------------------------------------------------------------------------------------- (a) names


def test_no_two_modules_share_a_file_name() -> None:
    by_name: dict[str, list[Path]] = {}
    for path in source_files():
        if path.name != "__init__.py" and not (REPOSITORY / path).is_symlink():
            by_name.setdefault(path.name, []).append(path)
    shared = {}
    for name, paths in by_name.items():
        launched = {Path(folder, name) for folder in LAUNCHED_FOLDERS} & set(paths)
        others = [path for path in paths if not (launched and path == Path("training", name))]
        if len(others) > 1:
            shared[name] = others
    assert not shared, "file names used by more than one module (rename each by what it holds):\n" + "\n".join(
        f"  {name}: {', '.join(map(str, paths))}" for name, paths in sorted(shared.items())
    )


# ---------------------------------------------------------------------------------------------------- (b) cycles


@dataclass(frozen=True)
class Import:
    """One import statement of `source` that loads the module `target`."""

    source: str
    target: str
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.source} imports {self.target} ({self.path}:{self.line})"


def imports_of(name: str, path: Path, source: str, modules: dict[str, Path] | set[str]) -> Iterator[Import]:
    """Every import of the module `name` (its file `path`, holding `source`) that loads another of `modules`,
    wherever it stands (a function's imports too): relative imports resolved, and `from package import name`
    counted as importing the module package.name where there is one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, package)
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in dict.fromkeys(targets):
            if target in modules and target != name:
                yield Import(name, target, path, node.lineno)


def _resolve(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module an ``from ... import`` names (``from ..common import x`` in a.b.c: a.common)."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph() -> dict[str, dict[str, Import]]:
    """For each module of the package, the modules it imports, each with its first import statement."""
    modules = package_modules()
    graph: dict[str, dict[str, Import]] = {name: {} for name in modules}
    for name, path in modules.items():
        statements = imports_of(name, path, (REPOSITORY / path).read_text(encoding="utf-8"), modules)
        for statement in sorted(statements, key=lambda statement: statement.line):
            graph[name].setdefault(statement.target, statement)
    return graph


def strongly_connected(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while not group or group[-1] != node:
                        group.append(stack.pop())
                        on_stack.discard(group[-1])
                    if len(group) > 1:
                        groups.append(sorted(group))
            elif target not in index:
                index[target] = low[target] = len(index)
                stack.append(target)
                on_stack.add(target)
                work.append((target, iter(graph[target])))
            elif target in on_stack:
                low[node] = min(low[node], index[target])
    return groups


def a_cycle(group: list[str], graph: dict[str, dict[str, Import]]) -> list[Import]:
    """A shortest round of imports from the group's first module back to it, within the group."""
    start = group[0]
    paths = {start: []}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target, statement in graph[node].items():
                if target == start:
                    return [*paths[node], statement]
                if target in group and target not in paths:
                    paths[target] = [*paths[node], statement]
                    following.append(target)
        frontier = following
    raise AssertionError(f"{group} is not a cycle")


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    cycles = [a_cycle(group, graph) for group in strongly_connected(graph)]
    assert not cycles, "modules that import each other (imports inside functions count):\n" + "\n".join(
        "  " + "\n    then ".join(map(str, cycle)) for cycle in cycles
    )


def test_the_import_graph_sees_relative_and_function_level_imports() -> None:
    """What the cycle test counts as an import, on a made-up module: relative imports resolved, `from package import
    module`, and the imports inside a function."""
    source = "from . import b\nfrom .c import value\nimport os\n\n\ndef f():\n    from pkg import d\n    import pkg.e\n"
    modules = {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.unused"}
    found = {(statement.target, statement.line) for statement in imports_of("pkg.a", Path("pkg/a.py"), source, modules)}
    assert found == {("pkg", 1), ("pkg.b", 1), ("pkg.c", 2), ("pkg", 7), ("pkg.d", 7), ("pkg.e", 8)}


def test_a_cycle_is_found_and_named_by_its_imports() -> None:
    def edge(source: str, target: str) -> Import:
        return Import(source, target, Path(f"{source}.py"), 1)

    graph = {"a": {"b": edge("a", "b")}, "b": {"c": edge("b", "c")}, "c": {"a": edge("c", "a")}, "d": {}}
    graph["d"]["a"] = edge("d", "a")
    [group] = strongly_connected(graph)
    assert group == ["a", "b", "c"]
    assert [statement.target for statement in a_cycle(group, graph)] == ["b", "c", "a"]


# ---------------------------------------------------------------------------------------------------- (c) length


def functions(path: Path) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method of the file, nested ones too, with its qualified name (``Class.method``)."""

    def visit(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield prefix + child.name, child
                yield from visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.")
            else:
                yield from visit(child, prefix)

    yield from visit(ast.parse((REPOSITORY / path).read_text(encoding="utf-8"), str(path)), "")


def long_functions() -> dict[tuple[str, str], tuple[int, int]]:
    """Each function over MAX_FUNCTION_LINES (its `def` line to its last), by file and qualified name: its first
    line and its length."""
    found = {}
    for path in source_files():
        if (REPOSITORY / path).is_symlink():
            continue
        for name, function in functions(path):
            lines = function.end_lineno - function.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found[(path.as_posix(), name)] = (function.lineno, lines)
    return found


def test_no_function_is_over_60_lines_but_the_numerical_kernels() -> None:
    over = {key: value for key, value in long_functions().items() if key not in LONG_FUNCTIONS}
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines (cut each into functions of one job):\n" + "\n".join(
        f"  {path}:{line} {name}: {lines} lines" for (path, name), (line, lines) in sorted(over.items())
    )


def test_each_exempt_function_is_still_long() -> None:
    """An exemption whose function was cut down or renamed goes (it would let a new long function of that name in)."""
    found = long_functions()
    stale = [f"{path} {name}" for path, name in LONG_FUNCTIONS if (path, name) not in found]
    assert not stale, "exempt functions no longer over the limit (remove them from LONG_FUNCTIONS): " + ", ".join(stale)
