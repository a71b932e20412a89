"""`agui-mcp-bridge config CLIENT`: the entry an MCP client needs to start this bridge over stdio.

The entry names this installation's executable by its absolute path (GUI apps such as Claude
Desktop do not read the shell's PATH) and carries the settings given with it: plain ones as
flags, tokens in `env` (a process's arguments are visible to every user of the machine).
With `--write` it is merged into the client's own config file (JSON, or VS Code's JSON with comments,
whose comments and layout are kept), after a backup of that file (bridge/_user_files.py: how it is
written safely). What the user should know about where a token ends up is said beside it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from bridge import _jsonc as jsonc
from bridge import _user_files as user_files
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


def snippet_notes(client: str, entry: dict[str, Any]) -> list[str]:
    """What the user should know before using the snippet."""
    if client != "claude-code" or not entry.get("env"):
        return []
    variable = next(iter(entry["env"]))
    return [f"this command carries {', '.join(entry['env'])} on its command line: your shell's history keeps it, "
            "and other users of this machine can see it (ps) while it runs. To keep it out of the history, export "
            f"the variable first and give it as --env={variable}=\"${variable}\"."]


@dataclass(frozen=True)
class Written:
    file: user_files.Rewritten
    had_comments: bool  # and kept them


def write(path: Path, client: str, name: str, entry: dict[str, Any], within: Path | None = None) -> Written:
    """Merge the entry into the config file (made if missing): the file's other servers, settings, comments
    and layout are kept. `within`: the folder a link at `path` must lead into (a project's file)."""
    file = user_files.target(path, within)
    key = servers_key(client)
    try:
        old = file.read_text(encoding="utf-8-sig") if file.exists() else ""  # -sig: a BOM some editors write
        existing = jsonc.loads(old) if jsonc.blanked(old).strip() else {}
    except RecursionError:
        raise UnusableSettings(f"{path} nests its values too deeply to be read; fix or move it, then run this "
                               "again.") from None
    except ValueError as exc:  # UnicodeDecodeError too
        raise UnusableSettings(f"{path} is not JSON ({exc}); fix or move it, then run this again.") from None
    if not isinstance(existing, dict) or not isinstance(existing.get(key, {}), dict):
        raise UnusableSettings(f"{path} does not hold a JSON object with a '{key}' object.")
    try:
        text = jsonc.with_member(old, [key, name], entry)
    except ValueError as exc:  # the edit checks itself: the file is never written otherwise than meant
        raise UnusableSettings(f"could not add the server to {path} keeping the rest as it is ({exc}); add it "
                               f"by hand (`agui-mcp-bridge config {client}` prints it).") from None
    had_comments = jsonc.blanked(old, trailing_commas=False) != old
    return Written(user_files.rewrite(file, text, private=bool(entry.get("env"))), had_comments)


def written_notes(client: str, name: str, path: Path, written: Written, entry: dict[str, Any]) -> list[str]:
    """What `--write` did, and what the user should know about the file now."""
    file = written.file
    where = f"{file.target}" + (f" (through the link {path})" if file.target != path else "")
    if not file.changed:
        notes = [f"{where} already has this server {name!r}; nothing changed."]
    else:
        kept = f"; the old file is kept as {file.backup}" if file.backup else ""
        notes = [f"wrote server {name!r} to {where}{kept}; restart {client} to use it."]
    if written.had_comments and file.changed:
        notes.append("its comments and layout are kept.")
    if entry.get("env"):
        notes.append(f"{file.target} holds a token: it is readable by you only (mode {file.mode:o}).")
    if client == "claude-code":
        notes.append(f"{file.target} is this project's own file (`git status` shows it): once committed, everyone "
                     "who gets the project has it.")
        if entry.get("env"):
            variable = next(iter(entry["env"]))
            backups = " (and the backups beside it may)" if file.backup else ""
            notes.append(f"it holds the token{backups}: do not commit it as is. Keep the secret out of the project: "
                         f"write \"${{{variable}}}\" in place of the token (Claude Code reads it from the environment "
                         "you start it in), or add the server in your own scope (`claude mcp add --scope user …`; "
                         "`agui-mcp-bridge config claude-code` without --write prints the command).")
    return notes


def _quote(part: str) -> str:
    return part if part and all(c.isalnum() or c in "-_./:=@" for c in part) else json.dumps(part)
