"""``memlens config``: print the effective settings and where each comes from."""

from __future__ import annotations

import json

from memlens.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    Args,
    CliError,
    Command,
    db_options,
    print_json,
)
from memlens.core.service import MemoryService, load_settings
from memlens.core.types import ConfigError, DatabaseError


def cmd_config(args: Args) -> int:
    """``memlens config``."""
    ov = {"db": str(args.db) if args.db else None}
    try:
        s = load_settings(args.config, overrides=ov)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    data = s.as_json()
    data["chunker_choices"] = []
    if s.db_path.is_file():  # never create a database just to show settings
        svc = MemoryService(s)
        try:
            data["chunker_choices"] = [
                {"scope": scope, "target": target, "config": json.loads(cfg.canonical_json()),
                 "set_at": at} for scope, target, cfg, at in svc.chunker_choices()]
        except DatabaseError as exc:
            raise CliError(str(exc), EXIT_FAIL) from None
        finally:
            svc.close()
    if args.json:
        print_json(data)
    else:
        print(f"config file: {data['config_file'] or '(none; defaults)'}")
        for k, v in data["settings"].items():
            print(f"  {k} = {v['value']!r}   ({v['source']})")
        for k, v in data["embedder_options"].items():
            print(f"  embedder.{k} = {v!r}   (file)")
        for r in data["redact_rules"]:
            extra = "".join([f", keywords {r['keywords']!r}" if r["keywords"] else "",
                             f", min_entropy {r['min_entropy']}" if r["min_entropy"] is not None
                             else ""])
            print(f"  redact rule {r['name']} = {r['pattern']!r}{extra}   (file)")
        for c in data["chunker_choices"]:
            cfg = c["config"]
            print(f"  chunker for {c['target']} = {cfg['strategy']}/{cfg['max_tokens']}/"
                  f"{cfg['overlap_tokens']}   (rechunk, {c['scope']})")
    return EXIT_OK


command = Command(
    "config", handler=cmd_config, short_help="print effective settings and their origin",
    help="Print the effective settings and their origin (file, environment, default), and the "
    "chunker choices remembered by `memlens rechunk`.",
    params=db_options())
