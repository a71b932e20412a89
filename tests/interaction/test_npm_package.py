"""The browser client as the npm package `agui-mcp-bridge` (web_client/package.json), used as front-end apps use it.

`npm pack` in web_client/ makes the tarball; it is installed (`npm install --no-save`, offline) into
tests/npm_app/, whose own dependencies (React, Vite, @vitejs/plugin-react, @ag-ui/client, React's types)
`scripts/setup --test` installs from its package-lock.json. Then:
- a Vite + React app (tests/npm_app/src) is built, served by `vite preview`, opened in Chromium and driven
  by the MCP SDK client through a real bridge: tools registered by hooks, state, unmounting;
- `tsc` checks a typed consumer and the package's hooks against their declarations;
- docs/agui.md's Node app runs as written, with the package's `agui-mcp-bridge/agui`;
- the package holds only files the bridge serves at /client/, byte for byte, and its version is the bridge's.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import re
import subprocess
import tarfile
import tomllib
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from browser_support import mcp_client, open_page, text_of, wait_for_tools
from support import TIMEOUT, free_port, running_bridge

import bridge

ROOT = Path(__file__).resolve().parents[2]
WEB_CLIENT = ROOT / "web_client"
APP = Path(__file__).resolve().parents[1] / "npm_app"
TSC = Path(__file__).resolve().parents[1] / "webmcp" / "node_modules" / ".bin" / "tsc"
NPM_TIMEOUT = 120


def run(*command: str | Path, cwd: Path, timeout: float = NPM_TIMEOUT, check: bool = True,
        ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "NO_UPDATE_NOTIFIER": "1", "npm_config_fund": "false",
                               "npm_config_audit": "false"})
    if check:
        assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    """`npm pack` of web_client/."""
    out = tmp_path_factory.mktemp("npm-pack")
    done = run("npm", "pack", "--json", "--pack-destination", out, cwd=WEB_CLIENT)
    (packed,) = json.loads(done.stdout)
    return out / packed["filename"]


@pytest.fixture(scope="module")
def app(tarball) -> Path:
    """tests/npm_app with the tarball installed, as `npm install agui-mcp-bridge` would."""
    assert (APP / "node_modules" / "vite").is_dir(), f"{APP}/node_modules is missing: run scripts/setup --test"
    run("npm", "install", "--no-save", "--offline", "--loglevel=error", tarball, cwd=APP)
    installed = json.loads((APP / "node_modules" / "agui-mcp-bridge" / "package.json").read_text())
    assert installed["version"] == bridge.__version__
    return APP


# --- the package itself ------------------------------------------------------------------------


def test_the_package_version_is_the_bridges():
    package = json.loads((WEB_CLIENT / "package.json").read_text(encoding="utf-8"))
    assert package["name"] == "agui-mcp-bridge"
    assert package["version"] == bridge.__version__, "web_client/package.json's version follows bridge.__version__"
    assert package["type"] == "module"
    assert set(package["exports"]) == {".", "./react", "./agui", "./package.json"}
    assert package["peerDependenciesMeta"]["react"]["optional"] is True
    assert "dependencies" not in package, "the client has no dependencies"


def package_files(tarball: Path) -> dict[str, bytes]:
    with tarfile.open(tarball) as packed:
        return {member.name.removeprefix("package/"): packed.extractfile(member).read()  # type: ignore[union-attr]
                for member in packed.getmembers() if member.isfile()}


async def test_the_package_holds_only_what_the_bridge_serves(tarball):
    files = package_files(tarball)
    package = json.loads(files["package.json"])
    for export in package["exports"].values():
        targets = [export] if isinstance(export, str) else list(export.values())
        for target in targets:
            assert target.removeprefix("./") in files, f"{target} is exported but not packed"
    assert {"agui-bridge.js", "react.js", "react.d.ts", "agui-app.js", "agui-app.d.ts"} <= set(files)
    assert not [name for name in files if "/" in name or name.endswith((".html", ".css"))], sorted(files)
    # The wheel ships web_client/ by these globs: what the package holds, an installed bridge serves.
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "bridge.web_client"]
    assert [name for name in files if not any(fnmatch.fnmatch(name, g) for g in globs)] == []
    async with running_bridge() as b, httpx.AsyncClient() as http:
        for name, content in files.items():
            assert content == (WEB_CLIENT / name).read_bytes(), name
            served = await http.get(f"{b.url}/client/{name}")
            assert served.status_code == 200 and served.content == content, name


# --- a Vite + React app ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(app, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("vite-build")
    done = run(app / "node_modules" / ".bin" / "vite", "build", "--outDir", out, "--emptyOutDir", cwd=app)
    # The client's modules bundle without a warning (e.g. no asset Vite cannot find).
    assert "warn" not in (done.stdout + done.stderr).lower(), done.stdout + done.stderr
    return out


@asynccontextmanager
async def vite_preview(app: Path, built: Path):
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        str(app / "node_modules" / ".bin" / "vite"), "preview", "--outDir", str(built), "--host", "127.0.0.1",
        "--port", str(port), "--strictPort", cwd=app, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(200):
                try:
                    if (await http.get(url + "/")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert process.returncode is None, "vite preview stopped"
                await asyncio.sleep(0.05)
        yield url
    finally:
        process.terminate()
        await process.wait()


async def text_content(page, selector: str) -> str:
    return (await page.text_content(selector)) or ""


async def test_react_hooks_serve_tools_to_an_agent(browser, app, built):
    async with running_bridge() as b, vite_preview(app, built) as site, \
            open_page(browser, f"{site}/?bridge={b.url}/", ready="document.querySelector('#status')") as page, \
            mcp_client(b) as agent:
        await page.wait_for_function("document.querySelector('#status').textContent === 'connected'")
        # Tools registered by hooks, and the built-in dialogs by useUserTools().
        await wait_for_tools(agent, "add_to_counter", "read_counter", "agui_user_confirm", "agui_user_prompt",
                             "agui_user_choose")
        listed = {t.name: t for t in (await agent.list_tools(cache_mode="bypass")).tools}
        assert listed["add_to_counter"].input_schema["required"] == ["by"]
        assert listed["read_counter"].description == "The counter's value, as the page shows it now."
        await page.wait_for_function("document.querySelector('#read-counter-name').textContent === 'read_counter'")
        registered = await text_content(page, "#registered")
        assert registered == "5", registered

        # A call changes React state, and the page shows it.
        result = await agent.call_tool("add_to_counter", {"by": 5})
        assert not result.is_error and text_of(result) == "added 5"
        await page.wait_for_function("document.querySelector('#count').textContent === '5'")

        # The handler sees the state of the latest render: changed by the agent, then by the user.
        assert json.loads(text_of(await agent.call_tool("read_counter", {}))) == {"count": 5}
        for _ in range(3):
            await page.click("#increment")
        await page.wait_for_function("document.querySelector('#count').textContent === '8'")
        result = await agent.call_tool("read_counter", {})
        assert result.structured_content == {"count": 8}
        # ...without the tools being registered again at each render.
        assert await text_content(page, "#registered") == "5"

        # Unmounting the component unregisters its tools; the others stay.
        await page.uncheck("#show-counter")
        await wait_for_tools(agent, "agui_user_confirm", absent=("add_to_counter", "read_counter"))
        # Mounted again: registered again, with fresh state.
        await page.check("#show-counter")
        await wait_for_tools(agent, "add_to_counter", "read_counter")
        assert json.loads(text_of(await agent.call_tool("read_counter", {}))) == {"count": 0}
        assert await text_content(page, "#status") == "connected"
        assert not [line for line in page.console if line.startswith(("error", "pageerror"))], page.console


async def test_react_provider_serves_the_pages_forms_unless_told_not_to(browser, app, built):
    # As connect() does: every <form toolname> of the page is a tool once the provider has connected.
    async with running_bridge() as b, vite_preview(app, built) as site, \
            open_page(browser, f"{site}/?bridge={b.url}/&form=1", ready="document.querySelector('#status')") as page, \
            mcp_client(b) as agent:
        await page.wait_for_function("document.querySelector('#status').textContent === 'connected'")
        await wait_for_tools(agent, "add_note", "add_to_counter")
        (note,) = [t for t in (await agent.list_tools(cache_mode="bypass")).tools if t.name == "add_note"]
        assert note.description == "Add a note to the list the page shows."
        assert note.input_schema["required"] == ["text"]
        result = await agent.call_tool("add_note", {"text": "buy tea"})
        assert (result.is_error, text_of(result)) == (False, "noted buy tea")  # the page's respondWith()
        await page.wait_for_function("document.querySelector('#notes').textContent === 'buy tea'")

        # forms={false}: the forms' tools leave; the hooks' stay. Back to true: served again.
        await page.uncheck("#serve-forms")
        await wait_for_tools(agent, "add_to_counter", absent=("add_note",))
        await page.check("#serve-forms")
        await wait_for_tools(agent, "add_note", "add_to_counter")
        assert await text_content(page, "#status") == "connected"
        assert not [line for line in page.console if line.startswith(("error", "pageerror"))], page.console


async def test_react_status_follows_the_connection(browser, app, built):
    # Before the bridge is up the provider says "connecting"/"reconnecting"; "connected" once it is.
    port = free_port()
    async with vite_preview(app, built) as site, \
            open_page(browser, f"{site}/?bridge=http://127.0.0.1:{port}/",
                      ready="document.querySelector('#status')") as page:
        await page.wait_for_function("document.querySelector('#status').textContent === 'reconnecting'")
        async with running_bridge(port) as b, mcp_client(b) as agent:
            await page.wait_for_function("document.querySelector('#status').textContent === 'connected'",
                                         timeout=30_000)
            await wait_for_tools(agent, "add_to_counter", timeout=20)


# --- TypeScript ---------------------------------------------------------------------------------

TYPED_CONSUMER = """\
import { useState, type ReactElement } from "react";
import { connect, registerUserTools, type ToolCallContext } from "agui-mcp-bridge";
import { BridgeProvider, useBridge, useBridgeStatus, useBridgeTool, useUserTools, type BridgeStatus }
  from "agui-mcp-bridge/react";
import { DECLINE, serveFrontendTools, type FrontendTool } from "agui-mcp-bridge/agui";

function Counter(): ReactElement {
  const [count, setCount] = useState(0);
  const status: BridgeStatus = useBridgeStatus();
  const bridge = useBridge();
  const { mcpName, error } = useBridgeTool<{ by: number }>({
    name: "add_to_counter",
    description: "Add to the counter.",
    inputSchema: { type: "object", properties: { by: { type: "integer" } }, required: ["by"] },
    annotations: { destructiveHint: false },
    handler: async ({ by }, { signal, progress }: ToolCallContext) => {
      progress(1, 1);
      if (signal.aborted) throw new Error("cancelled");
      setCount(count + by);
      return { count: count + by };
    },
  });
  const dialogs = useUserTools({ pinned: ["confirm"], prompt: false });
  return <p>{status} {count} {mcpName ?? error?.message} {dialogs?.confirm} {bridge?.room}</p>;
}

export function App(): ReactElement {
  return (
    <BridgeProvider url="http://127.0.0.1:8765/" room="default" token={null} onError={(e) => console.warn(e.code)}>
      <Counter />
    </BridgeProvider>
  );
}

export async function plain(): Promise<string | undefined> {
  const bridge = await connect({ url: "http://127.0.0.1:8765/" });
  return (await registerUserTools(bridge)).confirm;
}

export const tools: FrontendTool[] = [{ name: "decline", handler: () => DECLINE }];
export const served: Promise<void> = serveFrontendTools(
  { setMessages() {}, runAgent: async () => ({}), abortRun() {} } as never, tools);
"""

TSCONFIG = {
    "compilerOptions": {"noEmit": True, "strict": True, "target": "ES2022", "module": "ESNext",
                        "moduleResolution": "bundler", "jsx": "react-jsx", "lib": ["ES2022", "DOM", "DOM.Iterable"],
                        "types": [], "allowJs": True, "checkJs": True, "skipLibCheck": False},
}


def typecheck(app: Path, consumer: str, *package_modules: str) -> subprocess.CompletedProcess[str]:
    """tsc over a consumer file written into the app (where its packages resolve) and the package's modules."""
    assert TSC.exists(), f"{TSC} is missing: run scripts/setup --test (npm ci in tests/webmcp)"
    work = app / f".typecheck-{os.getpid()}"
    work.mkdir(exist_ok=True)
    try:
        (work / "consumer.tsx").write_text(consumer, encoding="utf-8")
        package = app / "node_modules" / "agui-mcp-bridge"
        files = ["consumer.tsx", *(os.path.relpath(package / m, work) for m in package_modules)]
        (work / "tsconfig.json").write_text(json.dumps({**TSCONFIG, "files": files}), encoding="utf-8")
        return run(TSC, "-p", work, cwd=work, check=False)
    finally:
        for path in work.iterdir():
            path.unlink()
        work.rmdir()


def test_typescript_checks_the_hooks_and_a_typed_consumer(app):
    # The hooks (react.js) and the AG-UI module are checked as JavaScript against their .d.ts too.
    done = typecheck(app, TYPED_CONSUMER, "react.js", "agui-app.js")
    assert done.returncode == 0, f"tsc failed:\n{done.stdout}{done.stderr}"


@pytest.mark.parametrize("wrong, expected", [
    ('const status: BridgeStatus = useBridgeStatus();', 'const status: "open" = useBridgeStatus();'),
    ("handler: async ({ by }", "handler: async ({ times }"),
    ('<BridgeProvider url="http://127.0.0.1:8765/" room="default"', "<BridgeProvider room={42}"),
], ids=["status", "handler args", "provider props"])
def test_typescript_rejects_a_wrong_consumer(app, wrong, expected):
    done = typecheck(app, TYPED_CONSUMER.replace(wrong, expected), "react.js")
    assert done.returncode != 0 and "error TS" in done.stdout + done.stderr, done.stdout + done.stderr


FORMS_PROP = """\
import type { ReactElement } from "react";
import { BridgeProvider } from "agui-mcp-bridge/react";

export const App = (): ReactElement => <BridgeProvider url="http://127.0.0.1:8765/" forms={false} />;
"""


def test_typescript_knows_the_providers_forms_prop(app):
    done = typecheck(app, FORMS_PROP, "react.js")
    assert done.returncode == 0, f"tsc failed:\n{done.stdout}{done.stderr}"
    done = typecheck(app, FORMS_PROP.replace("forms={false}", 'forms="off"'), "react.js")
    assert done.returncode != 0 and "error TS" in done.stdout + done.stderr, done.stdout + done.stderr


def test_each_export_declares_exactly_what_it_exports(app):
    script = ("const names = {};\n"
              "for (const entry of ['agui-mcp-bridge', 'agui-mcp-bridge/react', 'agui-mcp-bridge/agui'])\n"
              "  names[entry] = Object.keys(await import(entry)).sort();\n"
              "console.log(JSON.stringify(names));")
    # Imported from Node through the package's "exports" (react.js's `import "react"` resolves in the app).
    done = run("node", "--input-type=module", "-e", script, cwd=app)
    exported: dict[str, list[str]] = json.loads(done.stdout)
    assert exported["agui-mcp-bridge/react"] == ["BridgeProvider", "useBridge", "useBridgeStatus", "useBridgeTool",
                                                 "useUserTools"]
    assert {"serveFrontendTools", "DECLINE"} <= set(exported["agui-mcp-bridge/agui"])
    lines = []
    for index, (entry, names) in enumerate(exported.items()):
        union = " | ".join(json.dumps(n) for n in names)
        lines += [f"import type * as m{index} from {json.dumps(entry)};",
                  f"export const declared{index}: [Exclude<keyof typeof m{index}, {union}>, "
                  f"Exclude<{union}, keyof typeof m{index}>] extends [never, never] ? true : false = true;"]
    done = typecheck(app, "\n".join(lines) + "\n")
    assert done.returncode == 0, f"declared and exported values differ:\n{done.stdout}{done.stderr}"


# --- docs/agui.md's Node app ----------------------------------------------------------------------


def docs_snippet(path: Path, heading: str, language: str = "js") -> str:
    """The first ```<language> block after `heading` in a Markdown file."""
    text = path.read_text(encoding="utf-8")
    found = re.search(rf"```{language}\n(.*?)```", text[text.index(heading):], re.S)
    assert found, f"no {language} block after {heading!r} in {path}"
    return found.group(1)


async def test_the_agui_docs_node_app_runs_as_written(app, tmp_path):
    fresh_project(tmp_path, app)
    source = docs_snippet(ROOT / "docs" / "agui.md", "## Connecting")
    assert 'from "agui-mcp-bridge/agui"' in source and "http://127.0.0.1:8765/" in source
    async with running_bridge() as b, mcp_client(b) as agent:
        (tmp_path / "shop.mjs").write_text(source.replace("http://127.0.0.1:8765", b.url), encoding="utf-8")
        process = await asyncio.create_subprocess_exec(
            "node", "shop.mjs", cwd=tmp_path, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            assert process.stdout is not None and process.stdin is not None and process.stderr is not None
            line = await asyncio.wait_for(process.stdout.readline(), TIMEOUT)
            assert line.decode().strip() == "serving read_cart, confirm_order"
            await wait_for_tools(agent, "read_cart", "confirm_order")
            cart = await agent.call_tool("read_cart", {})
            assert json.loads(text_of(cart)) == [{"sku": "tea-earl-grey", "quantity": 2}]
            # The interrupt tool asks in the terminal; "y" approves.
            confirming = asyncio.create_task(agent.call_tool("confirm_order", {"total": 12.5}))
            asked = b""
            while b"[y/N] " not in asked:  # a line typed before the question would be lost
                asked += await asyncio.wait_for(process.stderr.read(100), TIMEOUT)
            assert b"Confirm the order? (12.5) [y/N] " in asked, asked
            process.stdin.write(b"y\n")
            await process.stdin.drain()
            confirmed = await asyncio.wait_for(confirming, TIMEOUT)
            assert not confirmed.is_error and confirmed.structured_content == {"approved": True}
        finally:
            process.terminate()
            await process.communicate()



# --- the package's README, as written -------------------------------------------------------------

README = WEB_CLIENT / "README.md"


def fresh_project(directory: Path, app: Path) -> Path:
    """A new project whose node_modules are the app's (React, Vite, @ag-ui/client, and the tarball)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "package.json").write_text(json.dumps({"type": "module", "private": True}))
    (directory / "node_modules").symlink_to(app / "node_modules")
    return directory


async def test_the_readme_react_quick_start_runs_as_written(browser, app, tmp_path):
    project = fresh_project(tmp_path / "my-app", app)
    source = docs_snippet(README, "## React quick start", "jsx")
    (project / "src").mkdir()
    (project / "index.html").write_text(
        '<!doctype html><html><head><link rel="icon" href="data:,"></head><body><div id="root"></div>'
        '<script type="module" src="/src/main.jsx"></script></body></html>')
    (project / "vite.config.js").write_text((app / "vite.config.js").read_text())
    async with running_bridge() as b:
        (project / "src" / "main.jsx").write_text(source.replace("http://127.0.0.1:8765/", f"{b.url}/"))
        run(app / "node_modules" / ".bin" / "vite", "build", cwd=project)
        async with vite_preview(project, project / "dist") as site, \
                open_page(browser, f"{site}/", ready="document.querySelector('li')") as page, mcp_client(b) as agent:
            await page.wait_for_function("document.body.textContent.includes('Bridge: connected')")
            await wait_for_tools(agent, "add_to_cart", "read_cart", "agui_user_confirm")
            assert text_of(await agent.call_tool("add_to_cart", {"item": "scones"})) == "added scones"
            await page.wait_for_function("document.querySelectorAll('li').length === 2")
            assert (await agent.call_tool("read_cart", {})).structured_content == {"items": ["tea", "scones"]}


async def test_the_readme_agui_quick_start_runs_as_written(app, tmp_path):
    project = fresh_project(tmp_path / "calculator", app)
    source = docs_snippet(README, "## AG-UI quick start")
    async with running_bridge() as b, mcp_client(b) as agent:
        (project / "app.mjs").write_text(source.replace("http://127.0.0.1:8765", b.url), encoding="utf-8")
        process = await asyncio.create_subprocess_exec("node", "app.mjs", cwd=project, stdout=asyncio.subprocess.PIPE)
        try:
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), TIMEOUT)
            assert line.decode().strip() == "serving add"
            assert text_of(await agent.call_tool("add", {"a": 2, "b": 3})) == "5"
        finally:
            process.terminate()
            await process.communicate()
