"""The browser client's .d.ts files agree with its modules.

Two checks, both with TypeScript's `tsc` (`scripts/setup --test` installs it in tests/webmcp/):
- `tsc -p web_client` type-checks the modules (JavaScript, `checkJs`) against their declarations: each
  module types its exports with its own .d.ts (`@type {typeof types.name}`, `@implements`), so a
  declaration that disagrees with the code is an error (web_client/tsconfig.json);
- each module exports, at run time (Node), exactly the values its .d.ts declares.
Each check is also run on a copy of web_client/ with a deliberately wrong declaration, which must fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WEB_CLIENT = ROOT / "web_client"
TSC = ROOT / "tests" / "webmcp" / "node_modules" / ".bin" / "tsc"
MODULES = ("agui-bridge", "errors", "connection", "transport", "registrations", "calls", "dialogs", "webmcp", "forms")


def tsc(*args: str) -> subprocess.CompletedProcess[str]:
    assert TSC.exists(), f"{TSC} is missing: run scripts/setup --test (npm ci in tests/webmcp)"
    return subprocess.run([str(TSC), *args], capture_output=True, text=True, timeout=120)


def check_modules(web_client: Path) -> subprocess.CompletedProcess[str]:
    return tsc("-p", str(web_client))


def runtime_exports(web_client: Path) -> dict[str, list[str]]:
    """What each module exports when Node imports it."""
    urls = {name: (web_client / f"{name}.js").as_uri() for name in MODULES}
    script = (f"const urls = {json.dumps(urls)}; const names = {{}};\n"
              "for (const [name, url] of Object.entries(urls)) names[name] = Object.keys(await import(url));\n"
              "console.log(JSON.stringify(names));")
    done = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check_exports(web_client: Path, work: Path) -> subprocess.CompletedProcess[str]:
    """tsc on a file stating, per module, that the values its .d.ts declares are the names it exports."""
    lines = []
    for index, (name, exported) in enumerate(runtime_exports(web_client).items()):
        names = " | ".join(json.dumps(n) for n in sorted(exported)) or "never"
        lines += [
            f'import type * as m{index} from {json.dumps(str(web_client / f"{name}.js"))};',
            f"type Declared{index} = keyof typeof m{index};",
            f"type Exported{index} = {names};",
            # Each constant's type is `true` only when nothing is left over; otherwise the names left over.
            f"export const {name.replace('-', '_')}_declares_but_does_not_export: "
            f"[Exclude<Declared{index}, Exported{index}>] extends [never] ? true "
            f": Exclude<Declared{index}, Exported{index}> = true;",
            f"export const {name.replace('-', '_')}_exports_but_does_not_declare: "
            f"[Exclude<Exported{index}, Declared{index}>] extends [never] ? true "
            f": Exclude<Exported{index}, Declared{index}> = true;",
        ]
    (work / "exports.ts").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (work / "tsconfig.json").write_text(json.dumps({
        "compilerOptions": {"noEmit": True, "strict": True, "target": "ES2022", "module": "ESNext",
                            "moduleResolution": "bundler", "lib": ["ES2022", "DOM", "DOM.Iterable"], "types": []},
        "files": ["exports.ts"],
    }), encoding="utf-8")
    return tsc("-p", str(work))


def test_the_modules_type_check_against_their_declarations():
    done = check_modules(WEB_CLIENT)
    assert done.returncode == 0, f"tsc -p web_client failed:\n{done.stdout}{done.stderr}"


def test_each_module_exports_exactly_what_its_declaration_declares(tmp_path):
    exports = runtime_exports(WEB_CLIENT)
    assert {"connect", "registerUserTools", "bridgeWebMCP", "confirmDialog"} <= set(exports["agui-bridge"])
    assert "abortError" in exports["errors"] and "abortError" not in exports["agui-bridge"], "internal helper"
    done = check_exports(WEB_CLIENT, tmp_path)
    assert done.returncode == 0, f"declared and exported values differ:\n{done.stdout}{done.stderr}"


# Wrong declarations, each with what tsc must then report: (file, text in it, replacement, expected in the output).
WRONG_DECLARATIONS = {
    "connect resolves to something else": (
        "connection.d.ts", "export declare function connect(options?: ConnectOptions): Promise<AguiBridge>;",
        "export declare function connect(options?: ConnectOptions): Promise<string>;", "connection.js"),
    "an option the code reads is not declared": (
        "connection.d.ts", "  reregisterTimeout?: number;\n", "", "reregisterTimeout"),
    "a declared method the class lacks": (
        "connection.d.ts", "  disconnect(): void;\n", "  disconnect(): void;\n  pause(): void;\n", "pause"),
    "a method declared with the wrong return": (
        "connection.d.ts", "  unregisterTool(...names: Array<string | string[]>): void;",
        "  unregisterTool(...names: Array<string | string[]>): boolean;", "unregisterTool"),
    "the answers of a dialog": (
        "dialogs.d.ts", 'Promise<"ok" | "cancel">', 'Promise<"yes" | "no">', "dialogs.js"),
    "a field of a user tool definition": (
        "dialogs.d.ts", '"name" | "title" | "description" | "inputSchema" | "annotations"',
        '"name" | "title" | "description" | "inputSchema" | "annotations" | "outputSchema"', "outputSchema"),
    "the handle bridgeWebMCP returns": (
        "webmcp.d.ts", "  ready: Promise<void>;", "  whenReady: Promise<void>;", "whenReady"),
    "a parameter's type": (
        "errors.d.ts", "export declare function errorMessage(thrown: unknown): string;",
        "export declare function errorMessage(thrown: unknown): number;", "errors.js"),
}


def wrong_copy(tmp_path: Path, file: str, text: str, replacement: str) -> Path:
    copy = tmp_path / "web_client"
    shutil.copytree(WEB_CLIENT, copy, ignore=shutil.ignore_patterns("*.html", "*.css", "*.md", "agui-app.*"))
    declaration = copy / file
    source = declaration.read_text(encoding="utf-8")
    assert text in source, f"{file} no longer has {text!r}: update this test"
    declaration.write_text(source.replace(text, replacement, 1), encoding="utf-8")
    return copy


@pytest.mark.parametrize("case", sorted(WRONG_DECLARATIONS))
def test_a_declaration_that_disagrees_with_the_code_fails(tmp_path, case):
    file, text, replacement, expected = WRONG_DECLARATIONS[case]
    done = check_modules(wrong_copy(tmp_path, file, text, replacement))
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "error TS" in output, f"tsc accepted {case}:\n{output}"
    assert expected in output, output


@pytest.mark.parametrize("file, text, replacement, name", [
    ("connection.d.ts", "export declare function connect(options?: ConnectOptions): Promise<AguiBridge>;",
     "export declare function connect(options?: ConnectOptions): Promise<AguiBridge>;\n"
     "export declare function reconnect(): void;", "reconnect"),
    ("agui-bridge.d.ts", 'export { AguiBridgeError, errorMessage } from "./errors.js";',
     'export { AguiBridgeError, errorMessage, abortError } from "./errors.js";', "abortError"),
], ids=["connection declares reconnect()", "agui-bridge declares abortError"])
def test_a_declared_value_the_module_does_not_export_fails(tmp_path, file, text, replacement, name):
    copy = wrong_copy(tmp_path, file, text, replacement)
    (tmp_path / "check").mkdir()
    done = check_exports(copy, tmp_path / "check")
    output = done.stdout + done.stderr
    assert done.returncode != 0, f"the export check accepted a declared {name} that is not exported:\n{output}"
    assert f'"{name}"' in output, output
