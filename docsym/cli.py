"""The ``docsym`` command line: thin wrappers over the same functions the MCP tools use."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from docsym.storage.file_names import readable
from docsym.storage.paths import IndexNotFoundError, is_store_url, resolve_index_dir
from docsym.storage.settings import SettingsError, get_settings, reload_settings, settings_table

# Messages are never folded: a path or a reason stays on one line for logs and pipes.
err = Console(stderr=True, soft_wrap=True)
out = Console()


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
        err.print(f"[red]no index[/]: {escape(str(exc))}", highlight=False)
        return 2
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]: documents committed so far are kept")
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docsym", description="Neuro-symbolic document index served over MCP."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(title="commands")

    def where(p: argparse.ArgumentParser) -> None:
        """--index DIR or --store URL: the index a command works on."""
        group = p.add_mutually_exclusive_group()
        group.add_argument(
            "--index",
            dest="index_dir",
            help="index directory (default: $DOCSYM_INDEX or ./.docsym)",
        )
        group.add_argument(
            "--store",
            default=None,
            metavar="URL",
            help="shared PostgreSQL store, postgresql://user@host/db (or $DOCSYM_STORE)",
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
        help="processes that parse and embed documents at once (default 1)",
    )
    p.add_argument(
        "--dask",
        default=None,
        metavar="SCHEDULER",
        help="parse and embed on a Dask cluster (scheduler address, or 'local' for a "
        "LocalCluster of --workers processes); this process writes",
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
    p.set_defaults(run=_cmd_index)

    p = sub.add_parser("status", help="what the index holds")
    where(p)
    p.set_defaults(run=_cmd_status)

    p = sub.add_parser("sql", help="run one read-only SQL statement against the index")
    p.add_argument("sql")
    where(p)
    p.add_argument("--limit", type=int, default=50)
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
    p.add_argument("--json", action="store_true", help="print the structured result as JSON")
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

    p = sub.add_parser("check", help="check the vector store matches the database")
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
    p.set_defaults(run=_cmd_serve)

    p = sub.add_parser(
        "demo", help="index the bundled sample documents and answer a question over MCP"
    )
    p.add_argument("--index", dest="index_dir", default=None, help="default: ./.docsym-demo")
    p.set_defaults(run=_cmd_demo)
    return parser


def _cmd_index(args: argparse.Namespace) -> int:
    from docsym.indexer.pipeline import index_paths
    from docsym.storage.writer import IndexLockedError

    target = _target(args)
    progress = (
        _LineProgress()
        if not args.quiet and not err.is_terminal
        else _RichProgress(enabled=not args.quiet)
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
            )
    except (FileNotFoundError, IndexLockedError) as exc:
        err.print(f"[red]error[/]: {exc}")
        return 2
    _print_report(report, target)
    return 0 if report.ok else 1


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
    summary = Table(title=f"docsym index → {_shown(target)}", show_header=False)
    for label, value in (
        ("added", len(report.added)),
        ("updated", len(report.updated)),
        ("unchanged", len(report.unchanged)),
        ("removed", len(report.removed)),
        ("failed", len(report.failed)),
        ("skipped", len(report.skipped)),
        ("pages", report.pages),
        ("read by OCR", report.ocr_pages),
        ("tables", report.tables),
        ("figures", report.figures),
        ("equations", report.equations),
        ("elapsed", f"{report.elapsed:.1f} s ({rate:.1f} pages/s)"),
    ):
        summary.add_row(label, str(value))
    out.print(summary)


class _RichProgress:
    """A progress bar over files that also shows pages and pages/s."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar = None
        self._task = None
        self._pages = 0
        self._started = time.perf_counter()

    def __enter__(self):
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(
                TextColumn("[bold]indexing"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[pages]} pages, {task.fields[rate]} pages/s"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[file]}"),
                console=err,
            )
            self._bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def start(self, files: int) -> None:
        self._started = time.perf_counter()
        if self._bar is not None:
            self._task = self._bar.add_task("index", total=files, pages=0, rate="-", file="")

    def file_started(self, path: Path) -> None:
        if self._bar is not None:
            self._bar.update(self._task, file=_name(path))

    def ocr_page(self, path: Path, done: int, total: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, file=f"{_name(path)} (OCR {done}/{total} pages)")

    def file_done(self, path: Path, pages: int) -> None:
        self._pages += pages
        if self._bar is not None:
            rate = self._pages / max(time.perf_counter() - self._started, 1e-9)
            self._bar.update(self._task, advance=1, pages=self._pages, rate=f"{rate:.1f}")


class _LineProgress:
    """One plain line per document on stderr (a log, a pipe): seconds, pages, path."""

    def __init__(self) -> None:
        self._started: dict[Path, float] = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def start(self, files: int) -> None:
        print(f"indexing {files} file(s)", file=sys.stderr, flush=True)

    def file_started(self, path: Path) -> None:
        self._started[path] = time.perf_counter()

    def ocr_page(self, path: Path, done: int, total: int) -> None:
        pass

    def file_done(self, path: Path, pages: int) -> None:
        seconds = time.perf_counter() - self._started.pop(path, time.perf_counter())
        line = f"{seconds:7.1f} s {pages:6} pages  {readable(path)}"
        print(line, file=sys.stderr, flush=True)


def _cmd_status(args: argparse.Namespace) -> int:
    from docsym.tools.documents import index_status

    status = index_status(_store(args))
    table = Table(title=f"docsym index {status.index}")
    table.add_column("view")
    table.add_column("rows", justify="right")
    for name, count in status.row_counts.items():
        table.add_row(name, str(count))
    out.print(table)
    return 0


def _cmd_sql(args: argparse.Namespace) -> int:
    from docsym.tools.sql import SqlError, run_sql

    try:
        result = run_sql(_store(args), args.sql, limit=args.limit)
    except SqlError as exc:
        err.print(f"[red]refused[/]: {exc}")
        return 2
    out.print(result.to_markdown(), markup=False)
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    from docsym.tools.errors import ToolError
    from docsym.tools.search import hybrid_search, parse_views, vector_search

    store = _store(args)
    try:
        views = parse_views(args.view)
        if args.collection == "hybrid":
            result = hybrid_search(
                store, args.query, filter=args.filter, limit=args.limit, views=args.view
            )
        else:
            table_name, column_name = views[0] if len(views) == 1 else (None, None)
            result = vector_search(
                store, args.query, args.collection, table_name, column_name, args.filter, args.limit
            )
    except ToolError as exc:
        err.print(f"[red]error[/]: {exc}")
        return 2
    table = Table(title=f"{result.mode}: {args.query}")
    for name in ("#", "score", "view", "doc_id", "page", "text"):
        table.add_column(name, overflow="fold")
    for hit in result.hits:
        table.add_row(
            str(hit.rank),
            f"{hit.score:.4f}",
            f"{hit.table_name}.{hit.column_name}",
            hit.doc_id,
            str(hit.page_number or ""),
            hit.text[:200],
        )
    out.print(table)
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from docsym.tools.evaluate import KS, by_kind, evaluate, load_qa

    items = load_qa(args.qa)
    scores = evaluate(_store(args), items, args.modes.split(","))
    if args.per_question:
        per = Table(title="rank of the first gold page (- = not in top 10)")
        per.add_column("question")
        per.add_column("kind")
        for score in scores:
            per.add_column(score.mode, justify="right")
        for item in items:
            per.add_row(item.id, item.kind, *(str(s.ranks[item.id] or "-") for s in scores))
        out.print(per)
    summary = Table(title=f"{args.qa.name}: {len(items)} questions")
    summary.add_column("mode")
    for k in KS:
        summary.add_column(f"recall@{k}", justify="right")
    summary.add_column("MRR", justify="right")
    for s in scores:
        summary.add_row(s.mode, *(f"{s.recall[k]:.2f}" for k in KS), f"{s.mrr:.3f}")
    out.print(summary)
    kinds = Table(title="per kind of question")
    for name in ("mode", "kind", "n", *(f"recall@{k}" for k in KS), "MRR"):
        kinds.add_column(name, justify="left" if name in ("mode", "kind") else "right")
    for s in scores:
        for kind, part in by_kind(s, items).items():
            recalls = (f"{part.recall[k]:.2f}" for k in KS)
            kinds.add_row(s.mode, kind, str(len(part.ranks)), *recalls, f"{part.mrr:.3f}")
    out.print(kinds)
    return 0


def _cmd_call(args: argparse.Namespace) -> int:
    import json

    from docsym.tools.errors import ToolError
    from docsym.tools.registry import TOOLS, tool

    if args.list or not args.tool:
        for spec in TOOLS:
            line = f"{spec.usage()}\n    {spec.summary}"
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        return 0
    try:
        spec = tool(args.tool)
        result = spec.run(_store(args), _call_arguments(spec, args.arguments))
    except (ToolError, IndexNotFoundError) as exc:
        err.print(f"[red]refused[/]: {escape(str(exc))}", highlight=False)
        return 2
    if args.json:
        out.print_json(json.dumps(result.model_dump(), default=str))
    else:
        out.print(result.to_markdown(), markup=False, highlight=False, soft_wrap=True)
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
    import json

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
        out.print_json(json.dumps(compiled.model_dump()))
    else:
        out.print(compiled.to_markdown(), markup=False, highlight=False, soft_wrap=True)
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from docsym.storage.consistency import check

    result = check(_store(args))
    out.print(
        f"{result.expected} encodable cells, {result.entries} entries; missing "
        f"{result.missing_count}, orphans {result.orphan_count}; entries lacking per collection: "
        f"{result.collections}"
    )
    if result.unpublished:
        out.print(
            f"{result.unpublished} entries past the published generation (hidden from every "
            "tool; the next index run removes them)"
        )
    for item in result.missing:
        out.print(f"missing {item}")
    for item in result.orphans:
        out.print(f"orphan {item}")
    return 0 if result.ok else 1


def _cmd_schema(args: argparse.Namespace) -> int:
    from docsym.storage.schema import describe

    out.print(describe(), markup=False)
    return 0


def _cmd_settings(args: argparse.Namespace) -> int:
    out.print(settings_table(), markup=False, soft_wrap=True)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    target = _target(args)
    if args.transport == "stdio":
        from docsym.mcp_server.server import serve_stdio

        serve_stdio(target)
        return 0
    from docsym.mcp_server.http import serve_http

    token = args.token or _secret(get_settings().token)
    # An empty DOCSYM_TOKEN means "no token", never "the empty string is the secret".
    serve_http(target, args.host, args.port, token or None, args.allowed_origins)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from docsym.demo import run_demo

    return run_demo(Path(args.index_dir or ".docsym-demo"))


def _secret(value) -> str | None:
    return value.get_secret_value() if value is not None else None


def _target(args: argparse.Namespace) -> Path | str:
    """The store named by --store or $DOCSYM_STORE, else the index directory."""
    url = args.store or (None if args.index_dir else get_settings().store)
    if url:
        if not is_store_url(url):
            raise SystemExit(f"docsym: --store takes a postgresql:// URL, got {url!r}")
        return url
    return resolve_index_dir(args.index_dir)


def _name(path: Path) -> str:
    """A file's name for the progress bar: escaped (storage/file_names.py) and without markup."""
    return escape(readable(path.name))


def _shown(target: Path | str) -> str:
    if isinstance(target, Path):
        return escape(readable(target))
    from docsym.storage.postgres.connect import redacted

    return redacted(target)


def _store(args: argparse.Namespace):
    from docsym.storage.store import open_store

    return open_store(_target(args))


if __name__ == "__main__":
    sys.exit(main())
