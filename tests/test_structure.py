"""The house's shape, as issue 11's "done means" states it, checked on every test run: small
files and functions in product code, the page script in small modules, dependencies one way
(import-linter's contracts in pyproject.toml), and no import of the project hidden inside a
function to dodge a cycle. Each message names the file (and function) and its size."""
import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

PRODUCT = ("designer", "modules", "training", "supervision", "sdk")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_JS_LINES = 300
# the torch side: a module imports it inside run() so that the web process never imports torch
DEFERRED_PROJECT_IMPORTS = ("training",)


def product_files() -> list[Path]:
    files = [f for top in PRODUCT for f in sorted((ROOT / top).rglob("*.py")) if "migrations" not in f.parts]
    assert len(files) > 20, f"product code not found under {ROOT}"  # a wrong root must not pass as "all small"
    return files


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function and method, nested ones too."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + child.name, child
            yield from functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from functions(child, f"{prefix}{child.name}.")
        else:
            yield from functions(child, prefix)


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_no_python_file_of_the_product_is_over_400_lines():
    too_long = [f"{rel(f)}: {n} lines" for f in product_files() if (n := lines(f)) > MAX_FILE_LINES]
    assert not too_long, f"files over {MAX_FILE_LINES} lines (split them by what each part owns):\n  " + "\n  ".join(too_long)


def test_no_function_of_the_product_is_over_60_lines():
    too_long = []
    for f in product_files():
        for name, fn in functions(parsed(f)):
            n = fn.end_lineno - fn.lineno + 1  # from `def` to its last line, docstring included
            if n > MAX_FUNCTION_LINES:
                too_long.append(f"{rel(f)}:{fn.lineno} {name}(): {n} lines")
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines:\n  " + "\n  ".join(too_long)


def test_the_page_script_is_in_modules_of_under_300_lines():
    scripts = sorted((ROOT / "static" / "js").rglob("*.js"))
    assert scripts, "no page script under static/js/"
    too_long = [f"{rel(f)}: {n} lines" for f in scripts if (n := lines(f)) >= MAX_JS_LINES]
    assert not too_long, f"page script files of {MAX_JS_LINES} lines or more (one module per concern):\n  " + "\n  ".join(too_long)


def test_no_import_of_the_project_is_hidden_inside_a_function():
    """An import inside a function is for deferring the torch side (training, torch, pandas...)
    so that the web process never loads it; one of the project placed there to get round an
    import cycle means a boundary is in the wrong place. Django's AppConfig.ready() is where
    an app imports what needs the app registry: allowed."""
    hidden = []
    for f in product_files():
        for name, fn in functions(parsed(f)):
            if name.endswith("Config.ready"):
                continue
            for node in ast.walk(fn):
                for module in imported_modules(node):
                    top = module.split(".")[0]  # "" for a relative import: of the project
                    if (top in PRODUCT or not top) and top not in DEFERRED_PROJECT_IMPORTS:
                        hidden.append(f"{rel(f)}:{node.lineno} {name}() imports {module}")
    assert not hidden, "imports of the project inside a function (move them to the top, or move what both need down a layer):\n  " + \
        "\n  ".join(sorted(set(hidden)))


def imported_modules(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return ["." * node.level + (node.module or "")]
    return []


def test_dependencies_run_one_way():
    """import-linter's contracts (pyproject.toml: the layers web app -> engine -> modules ->
    training -> SDK, the engine and the SDK free of Django and torch, no cycles)."""
    lint_imports = Path(sys.executable).with_name("lint-imports")  # import-linter's command, in this venv
    assert lint_imports.exists(), f"{lint_imports} is missing: install requirements.txt (import-linter)"
    out = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"lint-imports exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
