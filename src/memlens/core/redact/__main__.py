"""``python -m memlens.core.redact``: redact a file or stdin, or score the rules on a
labelled set (``--evaluate FILE.jsonl``); see :mod:`memlens.core.redact.evaluate`."""

from memlens.core.redact.evaluate import main

main()
