"""Why a file could not be indexed: one exception type, with a reason a user can act on."""


class ParseError(Exception):
    """The file cannot be parsed (corrupt, encrypted, empty, not the format its name says)."""
