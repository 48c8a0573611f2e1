"""A model served for the browser's tests (tests/browser/served.mjs): torch_llama's model of a
checkpoint folder, served by attnviz.serve() until stdin closes; prints its port and token.

    python3 tests/serve/serve_model.py FOLDER [--port P] [--key K] [--site SITE_DIR] [--max-tokens N]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
import torch_llama  # noqa: E402
import attnviz  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("folder")
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--key")
parser.add_argument("--site")
parser.add_argument("--max-tokens", type=int, default=2048)  # the test checkpoints say 64 positions; RoPE takes more
args = parser.parse_args()
model, tokenizer = torch_llama.load(args.folder)
served = attnviz.serve(model, tokenizer, port=args.port, key=args.key, site=args.site, max_tokens=args.max_tokens, quiet=True)
print(served.port, served.token, flush=True)
sys.stdin.read()  # until the test closes it
served.stop()
