"""A bridge proves it was started by this user before a stdio process relays an agent through it.

Whatever answers on a port could pretend to be a bridge; the agent token and the agent's calls must
not go to it. A bridge keeps a random secret and, asked to prove itself, writes the secret to a file
only its user can read (its port's claim, in a runtime directory of mode 0700, as Jupyter does) and
answers the asker's nonce with an HMAC of the nonce and the address it was reached at. The stdio
process reads the claim and checks the HMAC: the secret never crosses the wire, and a server that
passes the challenge on to a bridge elsewhere is caught by the address.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import hmac
import ipaddress
import json
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path

from bridge._user_files import replace_whole

NONCE_BYTES = 16
NONCE = re.compile(r"[A-Za-z0-9_-]{16,128}")  # what a bridge answers: enough to be unguessable, not a payload


class ClaimUnusable(Exception):
    """The runtime directory or a claim cannot be used; the message says what to do."""


def runtime_dir() -> Path:
    """This user's directory for claims, created mode 0700 and refused when someone else could have
    made or changed it. Every process of the user must find the same one, whatever variables its MCP
    client passed it (clients pass few): $XDG_RUNTIME_DIR, else systemd's /run/user/<uid> that it names,
    else a per-user directory in /tmp (not $TMPDIR, which clients drop)."""
    path = _claims_dir()
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError as exc:
        raise ClaimUnusable(f"cannot use {path}: {exc.strerror}") from None
    if hasattr(os, "getuid") and (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
                                  or info.st_mode & 0o077):
        raise ClaimUnusable(f"{path} must be a directory of yours only you can use (mode 0700): remove it, "
                            "and the bridge makes it again")
    return path


def _claims_dir() -> Path:
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / "agui-mcp-bridge"
    if not hasattr(os, "getuid"):  # Windows: the temp directory is the user's own
        return Path(tempfile.gettempdir()) / f"agui-mcp-bridge-{getpass.getuser()}"
    systemd = Path(f"/run/user/{os.getuid()}")
    with contextlib.suppress(OSError):
        if systemd.is_dir() and systemd.stat().st_uid == os.getuid():
            return systemd / "agui-mcp-bridge"
    return Path(f"/tmp/agui-mcp-bridge-{os.getuid()}")


def claim_path(port: int) -> Path:
    return runtime_dir() / f"port-{port}.json"


def socket_address(host: str, port: int) -> str:
    """One spelling of an address for both sides (an IPv4 client of a dual-stack socket is seen as
    ::ffff:127.0.0.1 by it)."""
    try:
        ip = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return f"{host}:{port}"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def new_nonce() -> str:
    return secrets.token_hex(NONCE_BYTES)


def _proof(secret: bytes, nonce: str, address: str) -> str:
    return hmac.new(secret, f"agui-mcp-bridge holder {address} {nonce}".encode(), hashlib.sha256).hexdigest()


class PortClaim:
    """One bridge's secret and the claims it wrote (one a port it was reached on), removed when it stops."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)
        self._written: set[Path] = set()

    def prove(self, nonce: str, host: str, port: int) -> str:
        """The answer to `nonce` for an asker who reached this bridge at host:port; the claim for that
        port is (re)written first when it is not this bridge's (a bridge killed before it could remove
        its claim leaves one)."""
        path = claim_path(port)
        if _read_secret(path) != self._secret:
            _write_private(path, json.dumps({"pid": os.getpid(), "secret": self._secret.hex()}))
            self._written.add(path)
        return _proof(self._secret, nonce, socket_address(host, port))

    def release(self) -> None:
        """Remove this bridge's claims, those still its own (another bridge may have claimed the port since)."""
        for path in self._written:
            if _read_secret(path) == self._secret:
                with contextlib.suppress(OSError):
                    path.unlink()
        self._written.clear()


def claimed_secret(port: int) -> bytes:
    """The secret of the bridge that claims `port`; `ClaimUnusable` when none does."""
    path = claim_path(port)
    secret = _read_secret(path)
    if secret is None:
        raise ClaimUnusable(f"no bridge of yours claims port {port} ({path} is missing or unreadable)")
    return secret


def proves(secret: bytes, nonce: str, host: str, port: int, proof: str) -> bool:
    """Whether `proof` answers `nonce` with `secret`, from a bridge reached at host:port."""
    return proof.isascii() and hmac.compare_digest(_proof(secret, nonce, socket_address(host, port)), proof)


def _read_secret(path: Path) -> bytes | None:
    try:
        claim = json.loads(path.read_text())
        return bytes.fromhex(claim["secret"])
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable by this user only from its first byte, and whole or not at all."""
    try:
        replace_whole(path, text.encode(), fsync=False)
    except OSError as exc:
        raise ClaimUnusable(f"cannot write {path}: {exc.strerror}") from None
