"""A stand-in for the Hugging Face Hub's file API on 127.0.0.1, for the tests of SPEC.md §6.

It answers as the Hub does (huggingface_hub's file_download.py and the Hub's own answers):
  GET  /api/models/REPO/revision/REV   {"id", "sha": COMMIT, "siblings": [{"rfilename"}]}
  HEAD /REPO/resolve/REV/FILE          X-Repo-Commit, ETag (a git blob's sha1), Content-Length;
                                       an LFS file (*.safetensors, *.gguf): 302 to the CDN with
                                       X-Linked-Etag (its sha256) and X-Linked-Size
  GET  /REPO/resolve/REV/FILE          the bytes (Range), or the same 302
  GET  CDN/blobs/SHA256                the bytes on a second port (Range, CORS), as the Hub's
                                       CDN serves them
Errors carry X-Error-Code as the Hub's do: 404 RepoNotFound, RevisionNotFound, EntryNotFound;
401 GatedRepo for a gated repo without its token. A renamed repo answers with a relative 307 to
its new name.

Faults, set by the tests on the Hub object (keyed by the blob's sha256):
  cuts[sha] = n      the next n transfers of the blob stop halfway (the connection closes)
  corrupt.add(sha)   the blob's bytes do not match its sha256 (one byte flipped)
  claimed[(repo, file)] = n   the headers give n as the file's size
  etags[(repo, file)] = raw   the HEAD's ETag header is raw (a malformed one)
  slow = seconds     a pause after every 4 KB of a blob (transfers that overlap)
Every request is logged: (port role, method, path, Range, Authorization).
"""
import hashlib
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def git_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def commit_of(files, salt=""):  # a commit hash that changes with the files
    h = hashlib.sha1(salt.encode())
    for name in sorted(files):
        h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return h.hexdigest()


class Repo:
    def __init__(self, name, commits, branches, gated_token=None, renamed_to=None):
        self.name = name
        self.commits = commits      # {commit: {path: bytes}}
        self.branches = branches    # {"main": commit, "v1": commit}
        self.gated_token = gated_token
        self.renamed_to = renamed_to

    def commit(self, rev):
        return rev if rev in self.commits else self.branches.get(rev)


class Hub:
    def __init__(self):
        self.repos = {}
        self.cuts, self.corrupt, self.claimed, self.etags, self.slow = {}, set(), {}, {}, 0.0
        self.log = []
        self.lock = threading.Lock()
        self.blobs = {}  # sha256 → bytes
        self.servers = []

    def add(self, name, commits, branches=None, **kw):
        """commits: [{path: bytes}, …], oldest first; main is the last unless branches say."""
        ids = {}
        for i, files in enumerate(commits):
            c = commit_of(files, f"{name}#{i}")
            ids[c] = files
            for data in files.values():
                self.blobs[hashlib.sha256(data).hexdigest()] = data
        order = list(ids)
        b = {"main": order[-1]}
        for k, v in (branches or {}).items():
            b[k] = order[v]
        self.repos[name] = Repo(name, ids, b, **kw)
        return order

    # -- serving --------------------------------------------------------------------------
    def start(self):
        hub, cdn = self._server("hub"), self._server("cdn")
        self.endpoint = f"http://127.0.0.1:{hub.server_port}"
        self.cdn = f"http://127.0.0.1:{cdn.server_port}"
        return self.endpoint

    def stop(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()
        self.servers = []

    def _server(self, role):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.handle_any(False)

            def do_GET(self):
                self.handle_any(True)

            def handle_any(self, body):
                with hub.lock:
                    hub.log.append((role, self.command, urllib.parse.unquote(self.path),
                                    self.headers.get("Range"), self.headers.get("Authorization")))
                try:
                    (hub.serve_cdn if role == "cdn" else hub.serve_hub)(self, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        s = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        s.daemon_threads = True
        threading.Thread(target=s.serve_forever, daemon=True).start()
        self.servers.append(s)
        return s

    def answer(self, h, status, headers=(), data=b"", body=True):
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Access-Control-Allow-Origin", "*")  # the page's fetches are cross-origin
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if body and data:
            h.wfile.write(data)

    def error(self, h, status, code, body):
        msg = json.dumps({"error": code}).encode()
        self.answer(h, status, [("X-Error-Code", code), ("Content-Type", "application/json")], msg, body)

    def serve_hub(self, h, body):
        path = urllib.parse.unquote(urllib.parse.urlsplit(h.path).path)
        token = (h.headers.get("Authorization") or "").removeprefix("Bearer ")
        if path.startswith("/api/models/"):
            name, sep, rev = path[len("/api/models/"):].partition("/revision/")
            repo = self.repos.get(name)
            if repo and repo.renamed_to:
                return self.answer(h, 307, [("Location", f"/api/models/{repo.renamed_to}/revision/{urllib.parse.quote(rev, safe='')}")], b"", body)
            if not sep or not repo:
                return self.error(h, 404, "RepoNotFound", body)
            commit = repo.commit(rev)
            if not commit:
                return self.error(h, 404, "RevisionNotFound", body)
            siblings = []
            for f, data in sorted(repo.commits[commit].items()):
                s = {"rfilename": f}
                if "blobs=true" in h.path:  # huggingface_hub's files_metadata: sizes, and LFS's sha256
                    size = self.claimed.get((repo.name, f), len(data))
                    s.update(size=size, blobId=git_sha1(data))
                    if f.endswith((".safetensors", ".gguf")):
                        s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": size, "pointerSize": 134}
                siblings.append(s)
            listing = {"id": name, "modelId": name, "sha": commit, "private": False,
                       "gated": "manual" if repo.gated_token else False, "siblings": siblings}
            return self.answer(h, 200, [("Content-Type", "application/json")], json.dumps(listing).encode(), body)
        name, sep, rest = path[1:].partition("/resolve/")
        repo = self.repos.get(name)
        if repo and repo.renamed_to:
            return self.answer(h, 307, [("Location", f"/{repo.renamed_to}/resolve/{urllib.parse.quote(rest, safe='/')}")], b"", body)
        if not sep or not repo:
            return self.error(h, 404, "RepoNotFound", body)
        rev, _, file = rest.partition("/")
        commit = repo.commit(rev)
        if not commit:
            return self.error(h, 404, "RevisionNotFound", body)
        if repo.gated_token and token != repo.gated_token:
            return self.error(h, 401, "GatedRepo", body)
        data = repo.commits[commit].get(file)
        if data is None:
            return self.error(h, 404, "EntryNotFound", body)
        size = self.claimed.get((repo.name, file), len(data))
        common = [("X-Repo-Commit", commit)]
        if file.endswith((".safetensors", ".gguf")):  # LFS: the bytes are on the CDN
            sha = hashlib.sha256(data).hexdigest()
            pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(data)}\n".encode()
            return self.answer(h, 302, common + [
                ("Location", f"{self.cdn}/blobs/{sha}?repo={urllib.parse.quote(repo.name, safe='')}"),
                ("X-Linked-Etag", f'"{sha}"'), ("X-Linked-Size", str(size)), ("ETag", f'"{git_sha1(pointer)}"')], b"", body)
        etag = self.etags.get((repo.name, file), f'"{git_sha1(data)}"')
        self.send_bytes(h, data, common + [("ETag", etag)], body, None)

    def serve_cdn(self, h, body):
        path = urllib.parse.urlsplit(h.path).path
        sha = path.removeprefix("/blobs/")
        data = self.blobs.get(sha)
        if data is None:
            return self.error(h, 404, "EntryNotFound", body)
        if sha in self.corrupt:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        self.send_bytes(h, data, [("Access-Control-Expose-Headers", "Content-Range, Content-Length")], body, sha)

    def send_bytes(self, h, data, headers, body, sha):
        """200 or, for a Range, 206 (416 past the end); a cut or a slow transfer where set."""
        start, status = 0, 200
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[len("bytes="):-1])
            if start >= len(data):
                return self.answer(h, 416, headers + [("Content-Range", f"bytes */{len(data)}")], b"", body)
            status = 206
            headers = headers + [("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")]
        part = data[start:]
        h.send_response(status)
        for k, v in headers + [("Accept-Ranges", "bytes"), ("Access-Control-Allow-Origin", "*"), ("Content-Length", str(len(part)))]:
            h.send_header(k, v)
        h.end_headers()
        if not body:
            return
        with self.lock:
            cut = self.cuts.get(sha, 0) > 0
            if cut:
                self.cuts[sha] -= 1
        if cut:  # half the bytes, then the connection closes
            h.wfile.write(part[:len(part) // 2])
            h.wfile.flush()
            h.close_connection = True
            return
        for i in range(0, len(part), 4096):
            h.wfile.write(part[i:i + 4096])
            if self.slow:
                time.sleep(self.slow)


if __name__ == "__main__":
    # python3 hub_server.py [--slow S] [--gated ORG/NAME=TOKEN] [--claim ORG/NAME/FILE=BYTES] ORG/NAME=FOLDER…
    # serves each folder as a repo (one commit) until killed, and prints the endpoint and the CDN's address (the desktop
    # and browser tests, a look by hand). --slow: a pause per 4 KB; --gated: that token only;
    # --claim: the listing and headers give that size.
    import os
    import sys
    args, gated, claims = sys.argv[1:], {}, {}
    hub = Hub()
    while args and args[0].startswith("--"):
        flag, value, args = args[0], args[1], args[2:]
        if flag == "--slow":
            hub.slow = float(value)
        elif flag == "--gated":
            gated.update([value.split("=", 1)])
        elif flag == "--claim":
            path, size = value.rsplit("=", 1)
            org, name, file = path.split("/", 2)
            hub.claimed[(f"{org}/{name}", file)] = int(size)
    for spec in args:
        name, folder = spec.split("=", 1)
        hub.add(name, [{f: open(os.path.join(folder, f), "rb").read() for f in os.listdir(folder)}], gated_token=gated.get(name))
    print(hub.start(), hub.cdn, flush=True)  # the Hub's address, then its CDN's
    threading.Event().wait()
