"""agui-mcp-bridge: serve the tools a browser page registers to AI agents as an MCP server.

Importing the package imports nothing else, so the core modules (`catalog`, `search`, `calls`,
`results`, `sessions`, `hub`, `messages`) stay usable without starlette or mcp:
`from bridge.search import ToolIndex`. The server is `bridge.app.create_app`; the command line is
`bridge.cli`.
"""
