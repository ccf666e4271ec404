"""The text of ``memlens --help`` (a terminal 80 columns or wider, or no terminal), for
the console script (:mod:`memlens.launch`) to print without importing click.

Generated from the click tree: ``tests/test_cli_click.py::test_root_help_text_is_clicks``
renders the root group's help and fails, showing the text to paste here, when the two
differ. Narrower terminals get click's own rendering.
"""

COLUMNS = 80
"""From this terminal width on, click renders the root help as :data:`TEXT`."""

TEXT = """\
Usage: memlens [OPTIONS] COMMAND [ARGS]...

  Keep Claude Code's Markdown memory in one SQLite database; search and
  inspect it. With no command, opens the terminal UI.

Options:
  -h, --help  Show this message and exit.

Commands:
  ingest   read memory folders into the database
  project  project pending documents for search
  search   search active memory
  docs     list documents
  history  revision timeline of a document
  chunks   show how a Markdown file is chunked
  rechunk  re-chunk stored documents with another config
  doctor   check database consistency
  config   print effective settings and their origin
  watch    watch memory folders and re-ingest changes as they happen
  bench    benchmark chunking strategies, search modes and embedders
  mcp      serve memory to MCP clients (Claude Code…) over stdio
  tui      open the terminal UI (the default command)
  purge    re-redact everything stored with the current rules; leave no trace
  redact   show what redaction would replace in a file

  Run `memlens COMMAND --help` for the options of a command.
"""
