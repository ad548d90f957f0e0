"""The ``docsym`` command line: thin wrappers over the same functions the MCP tools use."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from rich.markup import escape

from docsym import __version__
from docsym.client_config import CLIENTS, DEFAULT_URL
from docsym.indexer.errors import WorkerSetupError
from docsym.output import err, print_json, print_table, print_text
from docsym.runtime.extras import MissingExtra
from docsym.runtime.settings import (
    SettingsError,
    get_settings,
    postgres_url,
    reload_settings,
    settings_table,
)
from docsym.storage.file_names import readable
from docsym.storage.paths import IndexNotFoundError, IndexPaths, is_store_url, resolve_index_dir
from docsym.storage.unwritable import IndexUnwritable


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        reload_settings()
    except SettingsError as exc:
        err.print(f"[red]error[/]: {escape(str(exc))}", highlight=False)
        return 2
    try:
        return args.run(args)
    except IndexNotFoundError as exc:
        return _one_line("no index", exc)
    except MissingExtra as exc:
        return _one_line("not installed", exc)
    except WorkerSetupError as exc:
        return _one_line("cannot index", exc)
    except IndexUnwritable as exc:  # read-only, or out of room: one line, the run cleaned up
        return _one_line("cannot index", exc)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]: documents committed so far are kept")
        return 130


def _one_line(kind: str, exc: Exception) -> int:
    """An expected failure, said in one line (its message names the file or directory, the
    cause and the remedy); its traceback only with -v."""
    logging.getLogger("docsym").debug("%s", kind, exc_info=exc)
    err.print(f"[red]{kind}[/]: {escape(str(exc))}", highlight=False)
    return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docsym", description="Neuro-symbolic document index served over MCP."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("--version", action="version", version=f"docsym {__version__}")
    sub = parser.add_subparsers(title="commands")

    def where(p: argparse.ArgumentParser) -> None:
        """--index DIR or --postgres URL (--store, its older name, still works): the store a
        command works on."""
        group = p.add_mutually_exclusive_group()
        group.add_argument(
            "--index",
            dest="index_dir",
            help="index directory (default: $DOCSYM_INDEX or ./.docsym)",
        )
        group.add_argument(
            "--postgres",
            "--store",
            dest="postgres",
            default=None,
            metavar="URL",
            help="PostgreSQL database to use instead of an index directory, "
            "postgresql://user@host/db (or $DOCSYM_POSTGRES); --store and $DOCSYM_STORE, "
            "the older names, still work",
        )

    p = sub.add_parser("index", help="index the documents under the given files or folders")
    p.add_argument("paths", nargs="+", type=Path, help="files or folders (searched recursively)")
    where(p)
    p.add_argument("--prune", action="store_true", help="remove documents whose files are gone")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--model",
        default=None,
        help="sentence-transformers model (default: all-MiniLM-L6-v2, or $DOCSYM_MODEL)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="processes that parse documents at once; this process encodes their vectors "
        "(default 1)",
    )
    p.add_argument(
        "--dask",
        default=None,
        metavar="SCHEDULER",
        help="parse on a Dask cluster (scheduler address, or 'local' for a "
        "LocalCluster of --workers processes); this process writes and encodes",
    )
    p.add_argument(
        "--ocr",
        choices=("auto", "off", "force"),
        default=None,
        help="OCR pages without a usable text layer (auto, the default, or $DOCSYM_OCR), "
        "never (off), or every page, replacing its text layer (force)",
    )
    p.add_argument(
        "--follow-links",
        action="store_true",
        help="read files and folders that links lead to outside the paths given (skipped and "
        "reported by default)",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="keep indexing: files saved, moved, renamed or deleted in the folders are applied "
        "as they happen, until stopped (Ctrl-C)",
    )
    p.add_argument(
        "--keyword-only",
        action="store_true",
        help="write the documents searchable by keyword and stop before their vectors (the "
        "slow part); the next run without it adds them, parsing nothing again",
    )
    p.set_defaults(run=_cmd_index)

    def as_json(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--json", action="store_true", help="print the structured result as JSON, alone"
        )

    p = sub.add_parser("status", help="what the index holds")
    where(p)
    as_json(p)
    p.set_defaults(run=_cmd_status)

    p = sub.add_parser("sql", help="run one read-only SQL statement against the index")
    p.add_argument("sql")
    where(p)
    p.add_argument("--limit", type=int, default=50)
    as_json(p)
    p.set_defaults(run=_cmd_sql)

    p = sub.add_parser("search", help="hybrid (or single-collection) search over the index")
    p.add_argument("query")
    where(p)
    p.add_argument(
        "--view",
        action="append",
        default=[],
        metavar="TABLE.COLUMN",
        help="search only these encodable views (repeatable); default: hybrid's views",
    )
    p.add_argument("--filter", default="", help="e.g. \"doc_id == 'abc' and page_number >= 3\"")
    p.add_argument(
        "--collection", default="hybrid", help="hybrid (default), bm25, or a dense collection"
    )
    p.add_argument("--limit", type=int, default=10)
    as_json(p)
    p.set_defaults(run=_cmd_search)

    p = sub.add_parser("eval", help="recall@k and MRR of gold pages for a QA set, per mode")
    p.add_argument("qa", type=Path, help="JSON lines: id, file, question, pages")
    where(p)
    p.add_argument("--modes", default="bm25,minilm,hybrid,classic")
    p.add_argument("--per-question", action="store_true", help="print each question's ranks")
    p.set_defaults(run=_cmd_eval)

    p = sub.add_parser(
        "call",
        help="call any MCP tool from the terminal: docsym call hybrid_search query='...' limit=5",
    )
    p.add_argument("tool", help="tool name (docsym call --list shows them)", nargs="?")
    p.add_argument(
        "arguments", nargs="*", metavar="NAME=VALUE", help="VALUE is JSON if it parses, else text"
    )
    where(p)
    p.add_argument("--list", action="store_true", help="list the tools and their arguments")
    as_json(p)
    p.set_defaults(run=_cmd_call)

    p = sub.add_parser(
        "compile", help="parse and check a query-compiler expression; print its tree and plan"
    )
    p.add_argument("expression", help='e.g. "Which company ... * What was {company}\'s revenue"')
    p.add_argument(
        "--question",
        action="store_true",
        help="translate EXPRESSION from natural language with the configured LLM endpoint",
    )
    p.add_argument("--json", action="store_true", help="print the tree and plan as JSON")
    p.set_defaults(run=_cmd_compile)

    p = sub.add_parser("check", help="check the search entries match the database")
    where(p)
    p.set_defaults(run=_cmd_check)

    p = sub.add_parser("schema", help="print the index schema with column descriptions")
    p.set_defaults(run=_cmd_schema)

    p = sub.add_parser("settings", help="print every DOCSYM_* setting with its default")
    p.set_defaults(run=_cmd_settings)

    p = sub.add_parser("serve", help="serve the index over MCP (stdio or streamable HTTP)")
    where(p)
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="http: address to bind (default loopback)")
    p.add_argument("--port", type=int, default=8765, help="http: port (default 8765)")
    p.add_argument(
        "--token", default=None, help="http: require Authorization: Bearer TOKEN (or $DOCSYM_TOKEN)"
    )
    p.add_argument(
        "--allow-origin",
        dest="allowed_origins",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="http: also accept this browser Origin, e.g. http://localhost:3000 (repeatable)",
    )
    p.add_argument(
        "--watch",
        nargs="+",
        type=Path,
        default=[],
        metavar="FOLDER",
        help="keep the index current with these folders while serving (a docsym index --watch "
        "process the server starts and stops; one writes an index at a time)",
    )
    p.set_defaults(run=_cmd_serve)

    p = sub.add_parser(
        "config", help="print the snippet that adds docsym to an MCP client's configuration"
    )
    p.add_argument("client", choices=CLIENTS)
    where(p)
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument(
        "--url", default=None, help=f"http: the server's MCP endpoint (default {DEFAULT_URL})"
    )
    p.add_argument(
        "--token", default=None, help="http: the bearer token it requires (or $DOCSYM_TOKEN)"
    )
    p.add_argument("--name", default="docsym", help="the server's name in the client")
    p.set_defaults(run=_cmd_config)

    p = sub.add_parser(
        "demo", help="index the bundled sample documents and answer a question over MCP"
    )
    p.add_argument("--index", dest="index_dir", default=None, help="default: ./.docsym-demo")
    p.set_defaults(run=_cmd_demo)
    return parser


def _cmd_index(args: argparse.Namespace) -> int:
    from docsym.index_progress import LineProgress, RichProgress
    from docsym.indexer.pipeline import index_paths
    from docsym.storage.directory.writer import IndexLockedError

    target = _target(args)
    if args.watch:
        return _watch(args, target)
    progress = (
        LineProgress()
        if not args.quiet and not err.is_terminal
        else RichProgress(enabled=not args.quiet)
    )
    try:
        with progress:
            report = index_paths(
                args.paths,
                target,
                prune=args.prune,
                progress=progress,
                model_name=args.model,
                ocr=args.ocr,
                workers=args.workers,
                dask=args.dask,
                follow_links=args.follow_links,
                vectors=not args.keyword_only,
            )
    except (FileNotFoundError, IndexLockedError) as exc:
        return _one_line("error", exc)
    _print_report(report, target)
    return 0 if report.ok else 1


def _watch(args: argparse.Namespace, target: Path | str) -> int:
    """``docsym index --watch``: one session, kept until Ctrl-C or SIGTERM (a server stopping
    the watcher it started); each pass's files on their own lines, its failures after it."""
    import signal
    import threading

    from docsym.index_progress import LineProgress
    from docsym.indexer.session import IndexSession
    from docsym.indexer.watch import Watcher
    from docsym.storage.directory.writer import IndexLockedError

    files = [path for path in args.paths if not path.is_dir()]
    if files:
        return _one_line("error", ValueError(f"--watch takes folders: {readable(files[0])}"))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    settings = get_settings()
    try:
        session = IndexSession(
            target,
            model_name=args.model,
            ocr=args.ocr,
            workers=args.workers,
            dask=args.dask,
            vectors=not args.keyword_only,
            start_workers=args.dask is None,
        )
    except IndexLockedError as exc:
        return _one_line("not watching", exc)
    with session:
        shown = ", ".join(readable(path) for path in args.paths)
        err.print(f"watching {escape(shown)} → {escape(_shown(target))} (Ctrl-C stops)")
        Watcher(
            session,
            args.paths,
            settle_seconds=settings.watch_settle_seconds,
            rescan_seconds=settings.watch_rescan_seconds,
            progress=None if args.quiet else LineProgress(),
            on_pass=_print_pass,
            say=lambda text: err.print(f"[yellow]{escape(text)}[/]"),
            stop=stop,
        ).run()
    return 0


def _print_pass(report) -> None:
    """A watched pass's changes, in one line, and its failures (only when something changed)."""
    for path, reason in report.failed:
        err.print(f"[red]failed[/] {escape(path)}: {escape(reason)}")
    done = [
        f"{len(items)} {what}"
        for what, items in (
            ("added", report.added),
            ("updated", report.updated),
            ("moved", report.moved),
            ("removed", report.removed),
        )
        if items
    ]
    if done:
        err.print(f"[dim]{', '.join(done)}[/]")


def _print_report(report, target: Path | str) -> None:
    for path, reason in report.failed:
        err.print(f"[red]failed[/] {escape(path)}: {escape(reason)}")
    for path, why in report.skipped:
        err.print(f"[yellow]skipped[/] {escape(path)}: {escape(why)}")
    for path in report.no_text:
        err.print(
            f"[yellow]no text[/] {escape(path)}: no text found, pages recorded for viewing only"
        )
    for path, warning in report.warnings:
        err.print(f"[yellow]warning[/] {escape(path)}: {escape(warning)}")
    rate = report.pages / report.elapsed if report.elapsed else 0.0
    rows = [
        ("added", len(report.added)),
        ("updated", len(report.updated)),
        ("unchanged", len(report.unchanged)),
        ("removed", len(report.removed)),
        ("moved", len(report.moved)),
        ("failed", len(report.failed)),
        ("skipped", len(report.skipped)),
        ("pages", report.pages),
        ("read by OCR", report.ocr_pages),
        ("tables", report.tables),
        ("figures", report.figures),
        ("equations", report.equations),
        ("elapsed", f"{report.elapsed:.1f} s ({rate:.1f} pages/s)"),
    ]
    print_table(None, rows, title=f"docsym index → {_shown(target)}")


def _cmd_status(args: argparse.Namespace) -> int:
    from docsym.tools.documents import index_status

    status = index_status(_store(args))
    if args.json:
        print_json(status.model_dump(mode="json"))
        return 0
    rows = list(status.row_counts.items())
    print_table(("view", "rows"), rows, title=f"docsym index {status.index}", right=("rows",))
    if status.awaiting_vectors:
        when = _vectors_when(status.indexing)
        print(f"{status.awaiting_vectors} document(s) searchable by keyword only: {when}.")
    if status.failed_count:
        print(f"{status.failed_count} file(s) could not be indexed:")
        for failed in status.failed_files:
            print(f"  {failed.outcome} {failed.path} ({failed.recorded_at}): {failed.reason}")
        if status.failed_count > len(status.failed_files):
            more = status.failed_count - len(status.failed_files)
            print(f"  ... and {more} more (list_documents pages them)")
    return 0


def _vectors_when(indexing: bool) -> str:
    """When the vectors of documents searchable by keyword only come: a run alive is writing
    them; after a stopped or killed run, the next one does."""
    if indexing:
        return "their vectors are still being written"
    return "their vectors are waiting for the next run (docsym index writes them)"


def _cmd_sql(args: argparse.Namespace) -> int:
    from docsym.tools.sql import RUN_SQL

    result = _run_tool(RUN_SQL, args, {"sql": args.sql, "limit": args.limit})
    if result is None:
        return 2
    if args.json:
        print_json(result.model_dump(mode="json"))
        return 0
    print_table(result.columns, result.rows)
    _note(result.note)
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    from docsym.output import print_hits
    from docsym.tools.search import HYBRID_SEARCH, VECTOR_SEARCH

    base = {"query": args.query, "filter": args.filter, "limit": args.limit}
    if args.collection == "hybrid":
        result = _run_tool(HYBRID_SEARCH, args, base | {"views": args.view or None})
    else:
        view = _one_view(args.view)
        if view is None:
            return 2
        table_name, column_name = view
        arguments = base | {
            "collection": args.collection,
            "table_name": table_name,
            "column_name": column_name,
        }
        result = _run_tool(VECTOR_SEARCH, args, arguments)
    if result is None:
        return 2
    if args.json:
        print_json(result.model_dump(mode="json"))
        return 0
    print_hits(result)
    _note(result.note)
    return 0


def _run_tool(spec, args: argparse.Namespace, arguments: dict):
    """The tool's result, validated and bounded as the MCP server does it (ToolSpec.run); None,
    the refusal said on stderr, when the tool refuses."""
    from docsym.tools.errors import ToolError

    try:
        return spec.run(_store(args), arguments)
    except ToolError as exc:
        err.print(f"[red]refused[/]: {escape(str(exc))}", highlight=False)
        return None


def _one_view(views: list[str]) -> tuple[str | None, str | None] | None:
    """vector_search reads one view (or all): --view TABLE.COLUMN at most once."""
    if not views:
        return None, None
    table_name, dot, column_name = views[0].partition(".")
    if len(views) > 1 or not dot:
        err.print(
            "[red]refused[/]: a single-collection search takes one --view TABLE.COLUMN "
            "(hybrid takes several)",
            highlight=False,
        )
        return None
    return table_name, column_name


def _note(note: str | None) -> None:
    """A result's note (rows cut, what to call next) on stderr: stdout keeps the rows alone."""
    if note:
        err.print(escape(note), style="dim", highlight=False)


def _cmd_eval(args: argparse.Namespace) -> int:
    from docsym.tools.evaluate import KS, by_kind, evaluate, load_qa

    items = load_qa(args.qa)
    scores = evaluate(_store(args), items, args.modes.split(","))
    if args.per_question:
        print_table(
            ("question", "kind", *(score.mode for score in scores)),
            [
                (item.id, item.kind, *(str(s.ranks[item.id] or "-") for s in scores))
                for item in items
            ],
            title="rank of the first gold page (- = not in top 10)",
            right=[score.mode for score in scores],
        )
    recalls = [f"recall@{k}" for k in KS]
    print_table(
        ("mode", *recalls, "MRR"),
        [(s.mode, *(f"{s.recall[k]:.2f}" for k in KS), f"{s.mrr:.3f}") for s in scores],
        title=f"{args.qa.name}: {len(items)} questions",
        right=[*recalls, "MRR"],
    )
    print_table(
        ("mode", "kind", "n", *recalls, "MRR"),
        [
            (s.mode, kind, len(p.ranks), *(f"{p.recall[k]:.2f}" for k in KS), f"{p.mrr:.3f}")
            for s in scores
            for kind, p in by_kind(s, items).items()
        ],
        title="per kind of question",
        right=["n", *recalls, "MRR"],
    )
    return 0


def _cmd_call(args: argparse.Namespace) -> int:
    from docsym.tools.errors import ToolError
    from docsym.tools.registry import TOOLS, tool

    if args.list or not args.tool:
        print_text("\n".join(f"{spec.usage()}\n    {spec.summary}" for spec in TOOLS))
        return 0
    try:
        spec = tool(args.tool)
        result = spec.run(_store(args), _call_arguments(spec, args.arguments))
    except (ToolError, IndexNotFoundError) as exc:
        err.print(f"[red]refused[/]: {escape(str(exc))}", highlight=False)
        return 2
    if args.json:
        print_json(result.model_dump(mode="json"))
    else:
        print_text(result.to_markdown())
    return 0


def _call_arguments(spec, pairs: list[str]) -> dict:
    """['limit=5', 'views=["a.b"]', 'query=what is x'] -> {'limit': 5, ...}: text for text
    arguments, JSON for the rest (numbers, lists, null)."""
    import json

    from docsym.tools.errors import ToolError

    arguments = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name:
            raise ToolError(f"arguments are NAME=VALUE, got {pair!r}; see docsym call --list")
        field = spec.arguments.model_fields.get(name)
        if field is not None and field.annotation in (str, str | None):
            arguments[name] = value
            continue
        try:
            arguments[name] = json.loads(value)
        except json.JSONDecodeError:
            arguments[name] = value  # the tool's validation says what it should have been
    return arguments


def _cmd_compile(args: argparse.Namespace) -> int:
    from docsym.tools.errors import ToolError
    from docsym.tools.query_plans import compile_query

    try:
        if args.question:
            compiled = compile_query(question=args.expression)
        else:
            compiled = compile_query(expression=args.expression)
    except ToolError as exc:
        err.print(f"[red]refused[/]: {escape(str(exc))}", highlight=False)
        return 2
    if args.json:
        print_json(compiled.model_dump(mode="json"))
    else:
        print_text(compiled.to_markdown())
    return 0


def _keyword_index_remedy(result) -> str:
    if result.keyword_index.startswith("differs"):
        return "remove the index's vectors.keywords folder: the next index run rebuilds it"
    return "keyword search reads FTS5 alone, slower, until the next index run rebuilds it"



def _cmd_check(args: argparse.Namespace) -> int:
    from docsym.storage.consistency import check

    store = _store(args)
    result = check(store)
    lines = [
        f"{result.expected} encodable cells, {result.entries} entries; missing "
        f"{result.missing_count}, orphans {result.orphan_count}; entries lacking per collection: "
        f"{result.collections}"
    ]
    if result.unpublished:
        lines.append(
            f"{result.unpublished} entries past the published generation (hidden from every "
            "tool; the next index run removes them)"
        )
    if result.awaiting_vectors:
        lines.append(
            f"{result.awaiting_vectors} document(s) searchable by keyword only: "
            f"{_vectors_when(store.indexing().alive)}"
        )
    if result.keyword_index not in (None, "current"):
        lines.append(f"keyword index: {result.keyword_index} ({_keyword_index_remedy(result)})")
    lines += [f"missing {item}" for item in result.missing]
    lines += [f"orphan {item}" for item in result.orphans]
    print_text("\n".join(lines))
    return 0 if result.ok else 1


def _cmd_schema(args: argparse.Namespace) -> int:
    from docsym.storage.schema import describe

    print_text(describe())
    return 0


def _cmd_settings(args: argparse.Namespace) -> int:
    print_text(settings_table())
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    target = _target(args)
    watcher = _start_watcher(args.watch, target) if args.watch else None
    try:
        if args.transport == "stdio":
            from docsym.mcp_server.server import serve_stdio

            serve_stdio(target)
            return 0
        from docsym.mcp_server.http import serve_http

        token = args.token or _secret(get_settings().token)
        # An empty DOCSYM_TOKEN means "no token", never "the empty string is the secret".
        serve_http(target, args.host, args.port, token or None, args.allowed_origins)
        return 0
    finally:
        if watcher is not None:
            watcher.terminate()  # it publishes what it committed and ends
            watcher.wait(timeout=60)


def _start_watcher(folders: list[Path], target: Path | str):
    """``docsym index --watch`` in a process of its own (the server stays small and answers
    while it parses), dying with the server. Its output goes to the server's stderr, never to
    stdout (the stdio transport's). If another process writes the index, it says which in one
    line and ends; the server serves on."""
    import subprocess

    from docsym.runtime.process_limits import die_with_parent

    where = ["--postgres", target] if isinstance(target, str) else ["--index", str(target)]
    command = [sys.executable, "-m", "docsym", "index", *map(str, folders), "--watch", *where]
    return subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, preexec_fn=die_with_parent
    )


def _cmd_config(args: argparse.Namespace) -> int:
    from docsym.client_config import WHERE, ConfigError, Server, serve_command, snippet

    target = _target(args)
    if args.transport == "stdio":
        if args.url or args.token:
            err.print("[red]error[/]: --url and --token are for --transport http")
            return 2
        server = Server(args.name, command=serve_command(target))
        if isinstance(target, Path) and not IndexPaths(target).is_published():
            err.print(
                f"[yellow]note[/]: no index at {escape(_shown(target))} yet; "
                f"docsym index PATH... --index {escape(_shown(target))} builds it",
                highlight=False,
            )
    else:
        token = args.token or _secret(get_settings().token)
        server = Server(args.name, url=args.url or DEFAULT_URL, token=token or None)
    try:
        text = snippet(args.client, server)
    except ConfigError as exc:
        err.print(f"[red]error[/]: {escape(str(exc))}", highlight=False)
        return 2
    print_text(text)
    err.print(f"[dim]{escape(WHERE[args.client])}[/]", highlight=False)
    if args.transport == "http":
        err.print(
            "[dim]the server must be running: docsym serve --transport http (its --port, and "
            "--token or $DOCSYM_TOKEN with this token)[/]",
            highlight=False,
        )
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from docsym.demo import run_demo

    return run_demo(Path(args.index_dir or ".docsym-demo"))


def _secret(value) -> str | None:
    return value.get_secret_value() if value is not None else None


def _target(args: argparse.Namespace) -> Path | str:
    """The PostgreSQL database named by --postgres (or --store) or $DOCSYM_POSTGRES (or
    $DOCSYM_STORE), else the index directory."""
    url = args.postgres or (None if args.index_dir else postgres_url(get_settings()))
    if url:
        if not is_store_url(url):
            raise SystemExit(
                "docsym: --postgres (--store) and $DOCSYM_POSTGRES ($DOCSYM_STORE) take a "
                f"postgresql:// URL, got {url!r}"
            )
        return url
    return resolve_index_dir(args.index_dir)


def _shown(target: Path | str) -> str:
    """The index as text to show: a directory escaped (storage/file_names.py), a store's URL
    without its password. Plain text: escape() it for rich markup."""
    if isinstance(target, Path):
        return readable(target)
    from docsym.storage.postgres.connect import redacted

    return redacted(target)


def _store(args: argparse.Namespace):
    from docsym.storage.backends import open_store

    return open_store(_target(args))


if __name__ == "__main__":
    sys.exit(main())
