"""The package as users get it: the wheel, installed into a fresh virtual environment, run from elsewhere.

To stay fast and work offline, the fresh venv has no pip and no dependencies of its own: a .pth file makes
this checkout's venv's site-packages visible after the venv's own (so the wheel's `bridge` wins, and the
editable install's import hook, a .pth of that directory, is never run), and this venv's pip installs the
wheel into it with `--python`.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest
from mcp import Client
from support import running_bridge

import bridge

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60
# Modules of optional extras that the package imports lazily, inside the function that needs them, and so
# need not be dependencies: {"module": "why"}. None at present.
OPTIONAL_IMPORTS: dict[str, str] = {"redis": "redis"}  # module -> the extra that declares it (imported lazily)


@dataclass
class Installed:
    wheel: Path
    venv: Path
    site_packages: Path
    workdir: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def command(self) -> Path:
        return self.venv / "bin" / "agui-mcp-bridge"


def clean_env() -> dict[str, str]:
    """The environment of a user's shell: nothing pointing Python at this checkout or its venv."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("AGUI_BRIDGE_")}


def check(*command: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=clean_env(), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    tmp = tmp_path_factory.mktemp("packaging")
    # Build from a copy, so the build's own build/ and *.egg-info never touch the working tree.
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "node_modules", "__pycache__", ".*_cache", "test-artifacts"))
    check(sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
          "-w", tmp / "dist", source, cwd=tmp)
    (wheel,) = (tmp / "dist").glob("*.whl")

    venv = tmp / "venv"
    check(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp)
    site_packages = Path(check(venv / "bin" / "python", "-c",
                               "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp).strip())
    # Lines of a .pth file are appended to sys.path after the directory holding it.
    (site_packages / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    check(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--no-deps",
          "--disable-pip-version-check", "-q", wheel, cwd=tmp)
    workdir = tmp / "elsewhere"
    workdir.mkdir()
    return Installed(wheel, venv, site_packages, workdir)


def test_the_wheel_is_imported_from_the_venv(installed):
    probe = ("import json, importlib.metadata, bridge, bridge.app; print(json.dumps({'file': bridge.__file__, "
             "'web_client': str(bridge.app.WEB_CLIENT), 'version': bridge.__version__, "
             "'dist': importlib.metadata.version('agui-mcp-bridge')}))")
    found = json.loads(check(installed.python, "-c", probe, cwd=installed.workdir))
    package = installed.site_packages / "bridge"
    assert Path(found["file"]) == package / "__init__.py"
    # The browser client ships inside the package and is served from there, not from a checkout.
    assert Path(found["web_client"]) == package / "web_client"
    for name in ("agui-bridge.js", "agui-bridge.d.ts", "demo.html", "dashboard.html", "pages.css"):
        assert (package / "web_client" / name).is_file(), name
    assert found["version"] == found["dist"] == bridge.__version__
    assert installed.wheel.name.startswith(f"agui_mcp_bridge-{bridge.__version__}-")
    # The console script runs the venv's interpreter.
    assert installed.command.read_text().splitlines()[0] == f"#!{installed.python}"


def test_installed_command_prints_the_version(installed):
    version = check(installed.python, "-c", "import bridge; print(bridge.__version__)", cwd=installed.workdir)
    assert check(installed.command, "--version", cwd=installed.workdir) == f"agui-mcp-bridge {version}"


async def test_mcp_server_info_reports_the_package_version():
    async with running_bridge() as b, Client(b.mcp_url(), mode="legacy") as client:
        assert client.server_info.name == "agui-mcp-bridge"
        assert client.server_info.version == bridge.__version__


def test_the_wheel_carries_the_chinese_folding_tables(installed):
    # Tool search folds Traditional Chinese characters to Simplified ones, and gives Taiwan's words
    # the mainland's too, with two tables the package ships.
    probe = ("import json; from bridge.search.tokenizer import split_words, terms; "
             "print(json.dumps([terms('天氣預報'), terms('天气预报'), split_words('列印檔案')], ensure_ascii=False))")
    traditional, simplified, taiwan = json.loads(check(installed.python, "-c", probe, cwd=installed.workdir))
    assert traditional == simplified == ["天气", "气预", "预报", "天", "气", "预", "报"]
    assert taiwan == ["列印档案", "打印", "文件"]


JAVASCRIPT = {"text/javascript", "application/javascript"}


async def test_installed_command_serves_pages_and_the_client(installed):
    process = await asyncio.create_subprocess_exec(installed.command, "serve", "--port", "0", cwd=installed.workdir,
                                                   env=clean_env(), stdin=asyncio.subprocess.DEVNULL,
                                                   stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    said: list[str] = []
    try:
        while not (match := re.search(r"demo (http://127\.0\.0\.1:\d+)/", said[-1] if said else "")):
            line = (await asyncio.wait_for(process.stderr.readline(), 20)).decode()
            assert line, "the installed bridge exited before listening:\n" + "".join(said)
            said.append(line)
        url = match.group(1)
        async with httpx.AsyncClient(timeout=10) as http:
            responses = {path: await http.get(url + path)
                         for path in ("/", "/dashboard", "/client/agui-bridge.js", "/client/agui-bridge.d.ts")}
            fetched = await crawl(http, responses)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()

    def media_type(path: str) -> str:
        return responses[path].headers["content-type"].split(";")[0].strip()

    assert {path: r.status_code for path, r in responses.items()} == dict.fromkeys(responses, 200)
    web_client = installed.site_packages / "bridge" / "web_client"
    assert media_type("/") == media_type("/dashboard") == "text/html"
    assert responses["/"].content == (web_client / "demo.html").read_bytes()
    assert responses["/dashboard"].content == (web_client / "dashboard.html").read_bytes()
    assert media_type("/client/agui-bridge.js") in JAVASCRIPT
    assert responses["/client/agui-bridge.js"].content == (web_client / "agui-bridge.js").read_bytes()
    # Python's mimetypes knows no .d.ts; a text type (or TypeScript's own) is what a developer can read.
    declarations = media_type("/client/agui-bridge.d.ts")
    assert declarations.startswith("text/") or declarations in {"application/typescript", "application/x-typescript"}
    assert responses["/client/agui-bridge.d.ts"].content == (web_client / "agui-bridge.d.ts").read_bytes()
    # Everything those pages and modules load (stylesheets, the client's own modules, their declarations)
    # ships in the wheel.
    assert {u: status for u, status in fetched.items() if status != 200} == {}, fetched
    assert any(u.endswith("/client/pages.css") for u in fetched), fetched


REFERENCE = re.compile(r"""(?:\bfrom\s+|\bimport\s*\(?\s*|<script[^>]*\bsrc=|<link[^>]*\bhref=)["']([^"'\s]+)["']""")


async def crawl(http: httpx.AsyncClient, pages: dict[str, httpx.Response]) -> dict[str, int]:
    """Follow what the pages and modules reference on the same server: {url: status}. In a .d.ts,
    `./x.js` means the declarations `./x.d.ts`, as TypeScript resolves them."""
    todo = [(str(r.url), r.text) for r in pages.values()]
    seen: dict[str, int] = {}
    while todo:
        base, text = todo.pop()
        for ref in REFERENCE.findall(text):
            if ref.startswith(("data:", "http:", "https:", "//")):
                continue
            if base.endswith(".d.ts") and ref.endswith(".js"):
                ref = ref.removesuffix(".js") + ".d.ts"
            target = urljoin(base, ref)
            if target not in seen:
                response = await http.get(target)
                seen[target] = response.status_code
                if response.status_code == 200 and target.endswith((".js", ".d.ts")):
                    todo.append((target, response.text))
    return seen


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level_imports(path: Path) -> set[str]:
    """Every absolute import of a module, at any depth (lazy imports inside functions included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_every_imported_module_is_a_declared_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_canonical(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r).group()) for r in project["dependencies"]}
    imported: dict[str, set[str]] = {}
    for path in sorted((ROOT / "bridge").rglob("*.py")):
        for name in _top_level_imports(path):
            imported.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    third_party = {name: files for name, files in imported.items()
                   if name not in sys.stdlib_module_names and name != "bridge" and name not in OPTIONAL_IMPORTS}
    assert {"starlette", "uvicorn", "mcp"} <= third_party.keys()  # the scan sees the package's imports

    # Module names map to distributions through what is installed (yaml -> PyYAML, mcp_types -> mcp-types).
    distributions = importlib.metadata.packages_distributions()
    undeclared = {}
    for name, files in sorted(third_party.items()):
        providers = distributions.get(name, [name])
        if not any(_canonical(d) in declared for d in providers):
            undeclared[name] = f"distribution {' or '.join(providers)}, imported by {', '.join(sorted(files))}"
    assert not undeclared, f"imported but not in [project] dependencies: {undeclared}"
    extras = project["optional-dependencies"]
    for module, extra in OPTIONAL_IMPORTS.items():
        assert any(_canonical(r).startswith(_canonical(module)) for r in extras[extra]), (module, extra)
