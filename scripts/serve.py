#!/usr/bin/env python3
"""Serves a built site folder on 127.0.0.1 with the right type for .wasm and no caching.

usage: serve.py DIR [--port 8080] [--header 'Name: value' ...]
"""
import argparse
import functools
import http.server
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    extra_headers: list = []
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".js": "text/javascript", ".mjs": "text/javascript",
                      ".json": "application/json"}

    def end_headers(self):
        self.send_header("Cache-Control", "no-cache")
        for name, value in self.extra_headers:
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--header", action="append", default=[])
    args = parser.parse_args()
    Handler.extra_headers = [tuple(h.split(": ", 1)) for h in args.header]
    handler = functools.partial(Handler, directory=args.dir)
    with http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler) as server:
        print(f"attnviz: serving {args.dir} at http://127.0.0.1:{args.port}/", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            sys.exit(0)


if __name__ == "__main__":
    main()
