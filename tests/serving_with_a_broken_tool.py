"""The service of `python -m tinyagent serve`, but queryLogistics raises as a courier's API down would.

Run by tests/test_serving_http.py (as `python -c` with this file's text) with serve's own options (only --port, --now, --db and --session-store are
read), to show a tool failing in the middle of a run over real HTTP.
"""

from __future__ import annotations

import argparse
import sys

from tinyagent.checks import registry_with_a_broken_courier
from tinyagent.serving import ServiceConfig, ServiceServer


def main() -> int:
    parser = argparse.ArgumentParser()
    for option in ("--port", "--now", "--db", "--session-store"):
        parser.add_argument(option)
    args = parser.parse_args()
    config = ServiceConfig(now=args.now, shop_db=args.db, session_store=args.session_store)
    server = ServiceServer(config, port=int(args.port), tools=registry_with_a_broken_courier)
    print(f"tinyagent service on {server.url}/ (queryLogistics broken on purpose)", flush=True)
    server.serve_forever()
    print("service stopped.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
