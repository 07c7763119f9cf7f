"""The editor's MCP servers: connections, the guard of their processes, their tools."""
