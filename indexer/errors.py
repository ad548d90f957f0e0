"""Why indexing could not go on: a file that cannot be parsed, or a run that cannot start."""


class ParseError(Exception):
    """The file cannot be parsed (corrupt, encrypted, empty, not the format its name says)."""


class WorkerSetupError(RuntimeError):
    """The run could not set up what every file needs (the embedding model, a worker's parsers):
    no file can be indexed, so the run stops with the reason (an unsupported model, a missing
    package)."""
