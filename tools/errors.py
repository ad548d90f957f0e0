"""Refusals a tool can give. Each message says how to fix the call; the MCP layer turns them into
tool errors, the CLI prints them."""


class ToolError(Exception):
    """A call that cannot be answered as made; the message tells the caller what to change."""


class NotFoundError(ToolError):
    """An id that names nothing in the index."""
