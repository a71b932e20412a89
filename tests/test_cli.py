"""`agui-mcp-bridge` as a user runs it: real processes, their exit codes, what they print and when."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import websockets
from support import running_bridge

import bridge

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "bridge.cli"]
BANNER = re.compile(r"demo (http://127\.0\.0\.1:(\d+))/")
TIMEOUT = 30


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=ROOT, env=_env(), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=TIMEOUT)


def _env() -> dict[str, str]:
    # No AGUI_BRIDGE_* from the caller's shell changes what these tests see.
    return {k: v for k, v in os.environ.items() if not k.startswith("AGUI_BRIDGE_")}


async def start_serve(*args: str) -> tuple[asyncio.subprocess.Process, str, list[str]]:
    """`serve` on a port the OS picks; returns once the banner is printed, with the URL and stderr so far."""
    process = await asyncio.create_subprocess_exec(*CLI, "serve", "--port", "0", *args, cwd=ROOT, env=_env(),
                                                   stdin=asyncio.subprocess.DEVNULL,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    lines: list[str] = []
    try:
        while True:
            line = (await asyncio.wait_for(process.stderr.readline(), TIMEOUT)).decode()
            if not line:
                raise AssertionError("serve exited before its banner:\n" + "".join(lines))
            lines.append(line)
            if match := BANNER.search(line):
                return process, match.group(1), lines
    except BaseException:
        await stop(process)
        raise


async def stop(process: asyncio.subprocess.Process) -> str:
    """Interrupt the bridge as Ctrl-C would; the rest of its stderr."""
    if process.returncode is None:
        process.send_signal(signal.SIGINT)
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), 10)
    except TimeoutError:
        process.kill()
        _, stderr = await process.communicate()
    return stderr.decode()


@pytest.mark.parametrize("command", ["serve", "stdio"])
def test_port_in_use_is_one_clear_line_and_exit_2(command):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = run(command, "--port", str(port))
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert str(port) in lines[0] and "--port" in lines[0]
    assert "Traceback" not in done.stderr
    assert "demo http://" not in done.stderr


async def test_banner_only_once_listening():
    process, url, lines = await start_serve()
    try:
        # The moment the banner is out, the port takes connections and answers.
        async with httpx.AsyncClient(timeout=2) as http:
            response = await http.get(url + "/api/state")
        assert response.status_code == 200
        assert isinstance(response.json(), dict)
        assert sum("demo http://" in line for line in lines) == 1
        assert f"MCP {url}/mcp" in lines[-1]
    finally:
        rest = await stop(process)
    assert "demo http://" not in rest  # said once
    assert "Traceback" not in rest


def test_version():
    done = run("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"agui-mcp-bridge {bridge.__version__}\n"


def test_stdio_refuses_a_bad_room_name():
    done = run("stdio", "--port", "0", "--room", "bad room")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "'bad room'" in done.stderr and "--room" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("flags", "named"), [
    (("--port", "70000"), "--port"), (("--port", "-5"), "--port"), (("--log-level", "verbose"), "--log-level"),
    (("--call-timeout", "-1"), "--call-timeout"), (("--call-timeout", "0"), "--call-timeout"),
    (("--inline-max", "-3"), "--inline-max"), (("--max-rooms", "0"), "--max-rooms"),
    (("--allowed-origins", "example.com"), "--allowed-origins"), (("--room-tokens", "foo"), "--room-tokens"),
    (("--search-tool-name", "call_tool"), "three different names"),
])
@pytest.mark.parametrize("command", ["serve", "stdio"])
def test_a_setting_that_cannot_work_is_one_line_and_exit_2(command, flags, named):
    done = run(command, *flags)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and done.stdout == ""
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2, done.stderr


@pytest.mark.parametrize(("name", "value"), [("PORT", "abc"), ("PORT", "99999"), ("CALL_TIMEOUT", "-2"),
                                             ("LOG_LEVEL", "loud"), ("ALLOWED_ORIGINS", "localhost")])
def test_an_environment_variable_that_cannot_work_is_one_line_and_exit_2(name, value):
    done = subprocess.run([*CLI, "serve"], cwd=ROOT, env=_env() | {f"AGUI_BRIDGE_{name}": value}, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT)
    assert done.returncode == 2, done.stderr
    assert f"AGUI_BRIDGE_{name}" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_settings_given_in_python_are_checked_the_same_way():
    from bridge import Bridge, Settings
    from bridge.config import UnusableSettings
    for bad in ({"port": 70000}, {"call_timeout": 0.0}, {"allowed_origins": "example.com"}, {"max_rooms": 0}):
        with pytest.raises(UnusableSettings, match="--" + next(iter(bad)).replace("_", "-")):
            Bridge(Settings(**bad))


def test_room_is_a_stdio_flag_only():
    serve_help, stdio_help = run("serve", "--help"), run("stdio", "--help")
    assert serve_help.returncode == stdio_help.returncode == 0
    assert "--port" in serve_help.stdout and "--port" in stdio_help.stdout
    room_flag = re.compile(r"--room(?![\w-])")  # not --room-tokens, which both commands have
    assert not room_flag.search(serve_help.stdout)
    assert room_flag.search(stdio_help.stdout)


async def refused(ws_url: str, origin: str) -> tuple[dict, int | None]:
    """Connect a page from `origin`: the bridge's first frame and the close code."""
    async with websockets.connect(ws_url, origin=origin, proxy=None) as ws:
        first = json.loads(await asyncio.wait_for(ws.recv(), 10))
        try:
            await asyncio.wait_for(ws.recv(), 10)
        except websockets.ConnectionClosed:
            pass
        return first, ws.close_code


async def test_file_page_is_refused_with_the_flag_that_admits_it_warned_once():
    process, url, _ = await start_serve("--log-level", "info")
    ws_url = url.replace("http://", "ws://") + "/agui/ws"
    try:
        values = []
        for _ in range(2):
            error, close_code = await refused(ws_url, "null")  # what a file:// page sends
            assert error["type"] == "agui.error" and error["code"] == "forbidden_origin", error
            assert close_code == 1008
            match = re.search(r"--allowed-origins '([^']+)'", error["message"])
            assert match, error["message"]
            values.append(match.group(1))
        assert values[0] == values[1]
    finally:
        stderr = await stop(process)
    value = values[0]

    warnings = [line for line in stderr.splitlines() if "refused a page from origin null" in line]
    assert len(warnings) == 1, stderr
    assert "WARNING" in warnings[0] and f"--allowed-origins {value}" in warnings[0]

    # The value named does admit the page, and still admits the local origins it admitted before.
    async with running_bridge(allowed_origins=value) as b:
        for origin in ("null", f"http://127.0.0.1:{b.server.port}"):
            async with websockets.connect(b.ws_url, origin=origin, proxy=None) as ws:
                await ws.send(json.dumps({"type": "agui.hello", "room": "default"}))
                welcome = json.loads(await asyncio.wait_for(ws.recv(), 10))
                assert welcome["type"] == "agui.welcome", welcome


def test_accepted_connections_have_tcp_nodelay():
    """Without it an answer written as headers then body waits for the client's delayed ACK (~40 ms)."""
    from bridge.config import Settings
    from bridge.server import bind

    listener = bind(Settings(port=0))
    with listener, socket.create_connection(listener.getsockname()):
        accepted, _ = listener.accept()
        with accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


# --- `config`: the entry an MCP client needs --------------------------------------------------------


def test_config_prints_the_entry_with_this_installations_absolute_path():
    done = run("config", "cursor", "--port", "9123", "--room", "r1", "--token", "pagesecret")
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["mcpServers"]["agui-bridge"]
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists()
    assert entry["args"][-5:] == ["stdio", "--port", "9123", "--room", "r1"]
    assert "pagesecret" not in " ".join(entry["args"]) and entry["env"] == {"AGUI_BRIDGE_TOKEN": "pagesecret"}
    vscode = json.loads(run("config", "vscode").stdout)["servers"]["agui-bridge"]
    assert vscode["type"] == "stdio" and vscode["args"][-1] == "stdio"
    claude_code = run("config", "claude-code", "--name", "page").stdout.strip()
    assert claude_code.startswith("claude mcp add page -- /") and claude_code.endswith(" stdio")


def test_config_write_merges_into_the_clients_file_and_keeps_a_backup(tmp_path):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}))
    done = run("config", "claude-desktop", "--write", "--config-file", str(path), "--port", "9124")
    assert done.returncode == 0, done.stderr
    written = json.loads(path.read_text())
    assert written["theme"] == "dark" and written["mcpServers"]["other"] == {"command": "x"}
    assert written["mcpServers"]["agui-bridge"]["args"][-3:] == ["stdio", "--port", "9124"]
    assert json.loads((tmp_path / "claude_desktop_config.json.bak").read_text())["mcpServers"] == {
        "other": {"command": "x"}}
    # A file that is not JSON is left alone, with one clear line.
    path.write_text("{not json")
    refused = run("config", "claude-desktop", "--write", "--config-file", str(path))
    assert refused.returncode == 2 and "not JSON" in refused.stderr and "Traceback" not in refused.stderr
    assert path.read_text() == "{not json"


def test_config_file_locations_follow_each_clients_platform(tmp_path):
    from bridge.client_config import config_file
    home = tmp_path
    assert config_file("claude-desktop", "darwin", home) == \
        home / "Library/Application Support/Claude/claude_desktop_config.json"
    assert config_file("claude-desktop", "win32", home, {"APPDATA": "C:/Users/u/AppData/Roaming"}) == \
        Path("C:/Users/u/AppData/Roaming/Claude/claude_desktop_config.json")
    assert config_file("cursor", "linux", home) == home / ".cursor/mcp.json"
    assert config_file("vscode", "linux", home, {}) == home / ".config/Code/User/mcp.json"


async def test_the_configured_command_serves_an_agent():
    from mcp import Client, StdioServerParameters
    port = _free_port()
    entry = json.loads(run("config", "cursor", "--port", str(port)).stdout)["mcpServers"]["agui-bridge"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=_env())
    async with Client(params, mode="legacy") as client, httpx.AsyncClient() as http:
        assert {t.name for t in (await client.list_tools()).tools} <= {"tool_search", "tool_describe", "call_tool",
                                                                       "run_code"}
        assert (await http.get(f"http://127.0.0.1:{port}/api/state")).status_code == 200  # pages connect there


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
