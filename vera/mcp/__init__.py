"""The MCP server: agents reach VERA's knowledge through the same services as REST."""
