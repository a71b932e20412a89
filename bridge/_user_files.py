"""Rewriting a file of the user's (an MCP client's config) safely.

- Through the link the user made: a config file that is a symbolic link (dotfiles) is written at its
  target, which stays the one file; the link stays a link.
- Never through a link planted beside it: the temporary file is made exclusively under a random name
  (`mkstemp`) and renamed over the target, and each backup is a new file made with O_EXCL (a name
  that exists, a link included, is passed over), so a cloned project's `.mcp.json.bak` linked to
  `~/.bashrc` is never written.
- Never half-written (the rename is atomic), and every earlier backup kept: `x.bak`, then `x.bak.1`, …
- A file that holds a secret is the owner's alone (0600), or stricter if it was.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

MAX_BACKUPS = 1000
PRIVATE_MODE = 0o600


class Refused(Exception):
    """A file this module will not write, and why (one line for the user)."""


@dataclass(frozen=True)
class Rewritten:
    target: Path  # the file written: `path`, or the file its link leads to
    backup: Path | None  # the old content, when there was any and it changed
    mode: int
    changed: bool


def target(path: Path, within: Path | None = None) -> Path:
    """The file a write to `path` changes: `path`, or the existing regular file its link leads to, which
    must lie under `within` when given (a link a cloned project could have planted)."""
    if not path.is_symlink():
        if path.exists() and not path.is_file():
            raise Refused(f"{path} is not a regular file; give another with --config-file.")
        return path
    final = path.resolve()
    if not final.is_file():
        raise Refused(f"{path} is a link to {final}, which is not an existing file; "
                      "make it one, or remove the link, then run this again.")
    if within is not None and not final.is_relative_to(within.resolve()):
        raise Refused(f"{path} is a link leading out of {within}, to {final}: this writes only inside "
                      "the project. Remove the link, or name the file with --config-file.")
    return final


def rewrite(file: Path, text: str, private: bool) -> Rewritten:
    """Put `text` in `file` (a `target()`), after a backup of what it held; `private`: it holds a secret."""
    data = text.encode("utf-8")
    old = file.read_bytes() if file.exists() else None
    mode = _mode(file, private)
    if old == data:
        if stat.S_IMODE(file.stat().st_mode) != mode:
            os.chmod(file, mode)
        return Rewritten(file, None, mode, changed=False)
    backup = _backup(file, old) if old is not None else None
    file.parent.mkdir(parents=True, exist_ok=True)
    replace_whole(file, data, mode)  # the client never reads half a file
    return Rewritten(file, backup, mode, changed=True)


def replace_whole(file: Path, data: bytes, mode: int | None = None, *, fsync: bool = True) -> None:
    """Put `data` in `file`, whole or not at all: written to a temporary file beside it, made exclusively
    under a random name and readable by the owner only from its first byte, then given `mode` (if any;
    never looser on the way) and renamed over `file`. `fsync`: on the disk before the rename. The
    temporary file is removed if anything fails; the error is raised."""
    descriptor, temporary = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
            if fsync:
                out.flush()
                os.fsync(out.fileno())
        if mode is not None:
            os.chmod(temporary, mode)  # mkstemp made it 0600
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _mode(file: Path, private: bool) -> int:
    """The file's mode, owner-only when it holds a secret; for a new file, what the umask gives."""
    if file.exists():
        mode = stat.S_IMODE(file.stat().st_mode)
        return mode & PRIVATE_MODE if private else mode
    if private:
        return PRIVATE_MODE
    umask = os.umask(0o077)
    os.umask(umask)
    return 0o666 & ~umask


def _backup(file: Path, content: bytes) -> Path:
    """A new file beside `file` holding `content`, readable by its owner only (it may hold secrets)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for number in range(MAX_BACKUPS):
        backup = file.with_name(file.name + (".bak" if number == 0 else f".bak.{number}"))
        try:
            descriptor = os.open(backup, flags, PRIVATE_MODE)
        except FileExistsError:  # an earlier backup, or a link someone put there: never written
            continue
        with os.fdopen(descriptor, "wb") as out:
            out.write(content)
        return backup
    raise Refused(f"{file} has {MAX_BACKUPS} backups beside it already; move some away, then run this again.")
