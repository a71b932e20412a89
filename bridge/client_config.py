"""`agui-mcp-bridge config CLIENT`: the entry an MCP client needs to start this bridge over stdio.

The entry names this installation's executable by its absolute path (GUI apps such as Claude
Desktop do not read the shell's PATH) and carries the settings given with it: plain ones as
flags, tokens in `env` (a process's arguments are visible to every user of the machine).
With `--write` it is merged into the client's own config file, after a backup of that file.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from bridge.config import ENV_PREFIX, Settings, UnusableSettings

CLIENTS = ("claude-desktop", "cursor", "vscode", "claude-code")
SECRETS = ("token", "room_tokens", "agent_token")
DEFAULT_NAME = "agui-bridge"


def executable() -> list[str]:
    """The command that starts this installation's bridge, with absolute paths."""
    beside = Path(sys.executable).parent / ("agui-mcp-bridge.exe" if os.name == "nt" else "agui-mcp-bridge")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("agui-mcp-bridge")
    return [str(Path(found).resolve())] if found else [sys.executable, "-m", "bridge.cli"]


def server_entry(client: str, settings: Settings, command: list[str] | None = None) -> dict[str, Any]:
    """What goes under the client's list of servers for the bridge."""
    command = command or executable()
    defaults = Settings()
    args, env = [*command[1:], "stdio"], {}
    for f in fields(Settings):
        value = getattr(settings, f.name)
        if value == getattr(defaults, f.name) or "stdio" not in f.metadata.get("commands", ("stdio",)):
            continue
        if f.name in SECRETS:
            env[ENV_PREFIX + f.name.upper()] = str(value)
        elif isinstance(value, bool):
            args.append(f"--{'' if value else 'no-'}{f.name.replace('_', '-')}")
        else:
            args += [f"--{f.name.replace('_', '-')}", str(value)]
    entry: dict[str, Any] = {"type": "stdio"} if client == "vscode" else {}
    entry |= {"command": command[0], "args": args}
    if env:
        entry["env"] = env
    return entry


def servers_key(client: str) -> str:
    return "servers" if client == "vscode" else "mcpServers"


def config_file(client: str, platform: str = sys.platform, home: Path | None = None,
                environ: Mapping[str, str] = os.environ) -> Path:
    """Where the client reads its MCP servers on this platform (user scope; Claude Code: this project)."""
    home = home or Path.home()
    if client == "claude-code":
        return Path.cwd() / ".mcp.json"  # the project's shared servers
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if platform == "darwin":
        base = home / "Library" / "Application Support"
    elif platform.startswith("win"):
        base = Path(environ.get("APPDATA", home / "AppData" / "Roaming"))
    else:
        base = Path(environ.get("XDG_CONFIG_HOME", home / ".config"))
    if client == "claude-desktop":
        return base / "Claude" / "claude_desktop_config.json"
    return base / "Code" / "User" / "mcp.json"


def snippet(client: str, name: str, entry: dict[str, Any]) -> str:
    """What to paste: the JSON block, or for Claude Code the command that adds the server."""
    if client == "claude-code":
        env = [f"--env={key}={value}" for key, value in entry.get("env", {}).items()]
        return " ".join(_quote(part) for part in ["claude", "mcp", "add", *env, name, "--", entry["command"],
                                                  *entry["args"]])
    return json.dumps({servers_key(client): {name: entry}}, indent=2)


def write(path: Path, client: str, name: str, entry: dict[str, Any]) -> Path | None:
    """Merge the entry into the config file (made if missing); returns the backup of the old file, if any."""
    existing: dict[str, Any] = {}
    if path.exists():
        try:
            existing = json.loads(path.read_text(encoding="utf-8") or "{}")
        except ValueError as exc:
            raise UnusableSettings(f"{path} is not JSON ({exc}); fix or move it, then run this again.") from None
        if not isinstance(existing, dict) or not isinstance(existing.get(servers_key(client), {}), dict):
            raise UnusableSettings(f"{path} does not hold a JSON object with a '{servers_key(client)}' object.")
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    existing.setdefault(servers_key(client), {})[name] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(existing, indent=2) + "\n", encoding="utf-8")
    temporary.replace(path)  # the client never reads half a file
    return backup


def _quote(part: str) -> str:
    return part if part and all(c.isalnum() or c in "-_./:=@" for c in part) else json.dumps(part)
