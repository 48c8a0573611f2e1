#!/usr/bin/python3
"""Models by name (SPEC.md §6): `attnviz run ORG/NAME[@REVISION]` against a stand-in of the Hub
(hub_server.py) on 127.0.0.1, into a temporary HF_HOME.

usage: /usr/bin/python3 tests/hub/test_hub.py ATTNVIZ MODEL_REFS

The repos are the random-weight checkpoints of tests/model/make_models.py (MODEL_REFS). Checked:
the cache laid out as huggingface_hub lays it (refs, blobs named by etag, relative snapshot
links, nothing but the model's files), the same numbers as the folder itself, a second run that
asks the Hub only for the listing, the cache serving offline and when the Hub is down, a cache
written here in huggingface_hub's layout, pinned commits and tags, shards, a renamed repo, two
processes at once, a broken transfer resumed with Range, --list, and every error of §6 as one line
with exit code 2.

[SECTION] Running attnviz
[SECTION] The repos
[SECTION] Checks
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hub_server import Hub, git_sha1  # noqa: E402

binary, refs = os.path.abspath(sys.argv[1]), sys.argv[2]
failures = []
work = tempfile.mkdtemp(prefix="attnviz-hub-test-")


def fail(msg):
    failures.append(msg)
    print("FAIL  " + msg)


def ok(msg):
    print("ok    " + msg)


def check(cond, msg):
    (ok if cond else fail)(msg)


# [SECTION] Running attnviz ------------------------------------------------------------------

def env_for(home, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_") and k != "XDG_CACHE_HOME"}
    env.update({"HF_HOME": home, "HF_ENDPOINT": hub.endpoint, **extra})
    return env


def run(model, home, args=("--ids", "1,2,3", "--json"), **extra):
    return subprocess.run([binary, "run", model, *args], capture_output=True, text=True, env=env_for(home, **extra))


def numbers(stdout):  # the run's JSON without the model's name (a folder's name, or the repo's)
    j = json.loads(stdout)
    j.pop("model", None)
    return j


def folder_run(case, args=("--ids", "1,2,3", "--json")):
    p = subprocess.run([binary, "run", os.path.join(refs, case), *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return numbers(p.stdout)


def bad(name, p, *must):
    lines = p.stderr.strip().splitlines()
    if p.returncode != 2 or len(lines) != 1 or not all(m in lines[0] for m in must):
        fail(f"{name}: expected exit 2 and one line with {must}, got {p.returncode}: {p.stderr.strip()!r}")
    else:
        ok(f"{name}: {lines[0]}")


def requests_since(n, role=None):
    return [r for r in hub.log[n:] if role is None or r[0] == role]


# [SECTION] The repos ------------------------------------------------------------------------

def case_files(case, extra=None):
    d = os.path.join(refs, case)
    files = {f: open(os.path.join(d, f), "rb").read() for f in os.listdir(d)}
    files.update(extra or {})
    return files


GPT2, GPT2_OLD, SHARDS = "gpt2_l2_h2_d16_f32", "gpt2_l3_h4_d32_f16", "llama_l2_h4kv4_d32_bf16_linear_bias_shards"
junk = {"pytorch_model.bin": b"\0" * 100, "onnx/model.onnx": b"onnx", "README.md": b"# a model\n"}
hub = Hub()
old_commit, new_commit = hub.add("attnviz-test/gpt2-tiny", [case_files(GPT2_OLD), case_files(GPT2, junk)], {"v1": 0})
hub.add("attnviz-test/llama-shards", [case_files(SHARDS)])
hub.add("attnviz-test/gated", [case_files(GPT2)], gated_token="hf_right")
hub.add("attnviz-test/no-weights", [{"config.json": case_files(GPT2)["config.json"], "pytorch_model.bin": b"\0" * 64}])
hub.add("attnviz-test/too-big", [case_files(GPT2)])
hub.add("attnviz-test/corrupt", [case_files(GPT2)])
hub.add("attnviz-test/bad-etag", [case_files(GPT2)])
hub.add("attnviz-test/cut", [case_files(GPT2)])
hub.add("attnviz-test/stops", [case_files(GPT2_OLD)])
hub.add("attnviz-test/two", [case_files(SHARDS, {"generation_config.json": b"{}"})])
hub.add("old-name/gpt2-tiny", [{"x": b""}], renamed_to="attnviz-test/gpt2-tiny")
hub.add("tinygpt", [case_files(GPT2)])
GGUF_SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "gguf")
gguf_files = {"tiny-Q8_0.gguf": open(os.path.join(GGUF_SEEDS, "llama_tiny.gguf"), "rb").read(),
              "tiny-IQ4_NL.gguf": open(os.path.join(GGUF_SEEDS, "gemma2_tiny.gguf"), "rb").read(), "README.md": b"# GGUF\n"}
hub.add("attnviz-test/tiny-GGUF", [gguf_files])
hub.start()
sha = lambda data: hashlib.sha256(data).hexdigest()  # noqa: E731
gpt2_weights = sha(case_files(GPT2)["model.safetensors"])

# [SECTION] Checks ---------------------------------------------------------------------------

# 1. Fetched: the numbers are the folder's; the cache is huggingface_hub's layout, file by file.
home = os.path.join(work, "home")
n = len(hub.log)
p = run("attnviz-test/gpt2-tiny", home)
check(p.returncode == 0 and numbers(p.stdout) == folder_run(GPT2), "fetched by id: the same numbers as the folder")
repo = os.path.join(home, "hub", "models--attnviz-test--gpt2-tiny")
check(open(os.path.join(repo, "refs", "main")).read() == new_commit, "refs/main holds the commit")
snap = os.path.join(repo, "snapshots", new_commit)
wanted = sorted(f for f in os.listdir(os.path.join(refs, GPT2)) if f != "expected.json")
check(sorted(os.listdir(snap)) == wanted, f"the snapshot holds the model's files only: {sorted(os.listdir(snap))}")
layout_ok = True
for f in wanted:
    data = case_files(GPT2)[f]
    etag = sha(data) if f.endswith(".safetensors") else git_sha1(data)
    link = os.path.join(snap, f)
    if not os.path.islink(link) or os.readlink(link) != f"../../blobs/{etag}" or open(link, "rb").read() != data:
        layout_ok = False
        fail(f"{f}: expected a link ../../blobs/{etag}, got {os.readlink(link) if os.path.islink(link) else 'a file'}")
check(layout_ok, "every file a relative link to blobs/ETAG (sha256 for LFS files, the git blob sha1 otherwise)")
check(sorted(os.listdir(os.path.join(repo, "blobs"))) == sorted(
    sha(case_files(GPT2)[f]) if f.endswith(".safetensors") else git_sha1(case_files(GPT2)[f]) for f in wanted),
    "blobs: one per file, nothing .incomplete")
locks = os.path.join(home, "hub", ".locks", "models--attnviz-test--gpt2-tiny")
check(os.path.isdir(locks) and all(x.endswith(".lock") for x in os.listdir(locks)), "the locks in .locks/models--ORG--NAME/ETAG.lock")
log = requests_since(n)
check(log[0][1:3] == ("GET", "/api/models/attnviz-test/gpt2-tiny/revision/main"), "the listing first")
check(not any("pytorch_model" in r[2] or "onnx" in r[2] or "README" in r[2] or "expected" in r[2] for r in log),
      "nothing else fetched (no pytorch_model.bin, ONNX, README)")
check(any(r[0] == "cdn" and r[1] == "GET" for r in log), "the weights from the CDN, after the 302")
check(all(r[4] is None for r in log if r[0] == "cdn"), "no Authorization sent to the CDN")

# 2. A second run asks the Hub for the listing only; offline and with the Hub down, none.
n = len(hub.log)
p = run("attnviz-test/gpt2-tiny", home)
check(p.returncode == 0 and len(requests_since(n)) == 1, f"again: the listing only ({len(requests_since(n))} requests)")
n = len(hub.log)
p = run("attnviz-test/gpt2-tiny", home, HF_HUB_OFFLINE="1")
check(p.returncode == 0 and numbers(p.stdout) == folder_run(GPT2) and len(requests_since(n)) == 0 and p.stderr == "",
      "HF_HUB_OFFLINE=1: from the cache, no request")
p = run("attnviz-test/gpt2-tiny", home, HF_ENDPOINT="http://127.0.0.1:9")
check(p.returncode == 0 and numbers(p.stdout) == folder_run(GPT2) and len(p.stderr.strip().splitlines()) == 1
      and "cannot be reached" in p.stderr, f"the Hub down: the cache serves, with a note: {p.stderr.strip()!r}")

# 3. Pinned: a commit (no ref written), a tag (its ref written).
p = run(f"attnviz-test/gpt2-tiny@{old_commit}", home)
check(p.returncode == 0 and numbers(p.stdout) == folder_run(GPT2_OLD), "@COMMIT: that commit's model")
check(sorted(os.listdir(os.path.join(repo, "refs"))) == ["main"], "@COMMIT writes no ref")
p = run("attnviz-test/gpt2-tiny@v1", home)
check(p.returncode == 0 and open(os.path.join(repo, "refs", "v1")).read() == old_commit, "@v1: refs/v1 holds the tag's commit")
n = len(hub.log)
p = run(f"attnviz-test/gpt2-tiny@{old_commit}", home, HF_HUB_OFFLINE="1")
check(p.returncode == 0 and numbers(p.stdout) == folder_run(GPT2_OLD), "@COMMIT offline, from the cache")

# 4. Shards: the index and every shard it names; a renamed repo; a bare legacy id.
p = run("attnviz-test/llama-shards", home)
snap = os.path.join(home, "hub", "models--attnviz-test--llama-shards", "snapshots", hub.repos["attnviz-test/llama-shards"].branches["main"])
check(p.returncode == 0 and numbers(p.stdout) == folder_run(SHARDS), "sharded: the same numbers as the folder")
check(sorted(os.listdir(snap)) == ["config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                   "model.safetensors.index.json", "tokenizer.json"], "sharded: the index and both shards")
p = run("old-name/gpt2-tiny", home)
check(p.returncode == 0 and numbers(p.stdout) == folder_run(GPT2), "a renamed repo: the Hub's relative redirect followed")
p = run("tinygpt", home)
check(p.returncode == 0 and numbers(p.stdout) == folder_run(GPT2), "a bare legacy id (tinygpt)")

# 5. A cache written here as huggingface_hub writes it (links), and one of plain files: offline.
for links in (True, False):
    cache = os.path.join(work, f"written-{links}")
    r = os.path.join(cache, "models--someone--llama")
    commit = "0123456789abcdef0123456789abcdef01234567"
    os.makedirs(os.path.join(r, "refs"))
    os.makedirs(os.path.join(r, "blobs"))
    os.makedirs(os.path.join(r, "snapshots", commit))
    open(os.path.join(r, "refs", "main"), "w").write(commit)
    for f, data in case_files(SHARDS).items():
        etag = sha(data) if f.endswith(".safetensors") else git_sha1(data)
        open(os.path.join(r, "blobs", etag), "wb").write(data)
        target = os.path.join(r, "snapshots", commit, f)
        if links:
            os.symlink(f"../../blobs/{etag}", target)
        else:
            shutil.copy(os.path.join(r, "blobs", etag), target)
    p = run("someone/llama", home, HF_HUB_CACHE=cache, HF_HUB_OFFLINE="1")
    check(p.returncode == 0 and numbers(p.stdout) == folder_run(SHARDS),
          f"a cache written in huggingface_hub's layout ({'links' if links else 'plain files'}) opens offline")

# 6. --list: the built-in models, then the cached Hub models the runtime opens, with sizes.
lines = [l.split("\t") for l in run("--list", home, args=()).stdout.splitlines()]
listed = {l[0]: l for l in lines}
check(all(k in listed for k in ["attnviz-test/gpt2-tiny", "attnviz-test/gpt2-tiny@v1", "attnviz-test/llama-shards", "tinygpt"])
      and listed["attnviz-test/llama-shards"][1] == "llama" and listed["attnviz-test/gpt2-tiny"][2].endswith(" kB)"),
      f"--list names the cached models with sizes: {[l[0] for l in lines]}")
check(f"attnviz-test/gpt2-tiny@{old_commit}" not in listed, "a commit with a ref is listed by the ref")

# 7. A transfer cut halfway is resumed with Range; a server that keeps stopping is an error, and
#    the next run resumes the .incomplete blob.
hub.cuts[gpt2_weights] = 1
n = len(hub.log)
p = run("attnviz-test/cut", home)
ranges = [r[3] for r in requests_since(n, "cdn") if r[3]]
check(p.returncode == 0 and numbers(p.stdout) == folder_run(GPT2) and ranges and ranges[0].startswith("bytes="),
      f"a cut transfer resumed with Range ({ranges})")
stops = sha(case_files(GPT2_OLD)["model.safetensors"])
hub.cuts[stops] = 100
bad("the server stops mid-download", run("attnviz-test/stops", home), "attnviz-test/stops", "model.safetensors", "broke", "resume")
part = os.path.join(home, "hub", "models--attnviz-test--stops", "blobs", stops + ".incomplete")
check(os.path.exists(part) and 0 < os.path.getsize(part) < len(case_files(GPT2_OLD)["model.safetensors"]), "the .incomplete blob is kept")
hub.cuts[stops] = 0
have = os.path.getsize(part)
n = len(hub.log)
p = run("attnviz-test/stops", home)
check(p.returncode == 0 and numbers(p.stdout) == folder_run(GPT2_OLD) and
      [r[3] for r in requests_since(n, "cdn")] == [f"bytes={have}-"], "the next run resumes it from its last byte")

# 8. Two processes at once on an empty cache: both open the model, every blob written once.
hub.slow = 0.002
both = os.path.join(work, "both")
procs = [subprocess.Popen([binary, "run", "attnviz-test/two", "--ids", "1,2,3", "--json"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env_for(both)) for _ in range(2)]
outs = [pr.communicate() for pr in procs]
hub.slow = 0
blobs = os.listdir(os.path.join(both, "hub", "models--attnviz-test--two", "blobs"))
check(all(pr.returncode == 0 for pr in procs) and all(numbers(o[0]) == folder_run(SHARDS) for o in outs)
      and not any(b.endswith(".incomplete") for b in blobs) and len(blobs) == 6,
      f"two processes at once: both run, {len(blobs)} blobs, none incomplete")

# 9. Errors: exit 2 and one line that names the repo (SPEC.md §6).
bad("gated, no token", run("attnviz-test/gated", home), "attnviz-test/gated", "gated", "HF_TOKEN")
bad("gated, the wrong token", run("attnviz-test/gated", home, HF_TOKEN="hf_wrong"), "attnviz-test/gated", "refused")
check(run("attnviz-test/gated", home, HF_TOKEN="hf_right").returncode == 0, "gated, with HF_TOKEN: opens")
token_home = os.path.join(work, "token-home")
os.makedirs(token_home)
open(os.path.join(token_home, "token"), "w").write("hf_right\n")
check(run("attnviz-test/gated", token_home).returncode == 0, "gated, with the token in $HF_HOME/token: opens")
bad("no such repo", run("attnviz-test/nothing", home), "attnviz-test/nothing", "no such model")
bad("no such revision", run("attnviz-test/gpt2-tiny@v9", home), "attnviz-test/gpt2-tiny", "no revision \"v9\"")
bad("no safetensors", run("attnviz-test/no-weights", home), "attnviz-test/no-weights", "no safetensors", "pytorch_model.bin")
hub.corrupt.add(gpt2_weights)
bad("checksum mismatch", run("attnviz-test/corrupt", home), "attnviz-test/corrupt", "checksum mismatch")
corrupt_blobs = os.path.join(home, "hub", "models--attnviz-test--corrupt", "blobs")
check(not any(b.startswith(gpt2_weights) for b in os.listdir(corrupt_blobs)), "the mismatched download is deleted")
hub.corrupt.clear()
bad("offline, not cached", run("attnviz-test/llama-shards", os.path.join(work, "empty"), HF_HUB_OFFLINE="1"),
    "attnviz-test/llama-shards", "offline", os.path.join(work, "empty", "hub", "models--attnviz-test--llama-shards"))
bad("the Hub down, not cached", run("attnviz-test/llama-shards", os.path.join(work, "empty"), HF_ENDPOINT="http://127.0.0.1:9"),
    "attnviz-test/llama-shards", "cannot be reached", "not in the cache")
hub.etags[("attnviz-test/bad-etag", "config.json")] = 'W/"": W/""'  # what fuzz_hub found
bad("a malformed ETag", run("attnviz-test/bad-etag", home), "attnviz-test/bad-etag", "config.json", 'ETag W/"": W/""', "not one it sends")
check(not os.path.exists(os.path.join(home, "hub", "models--attnviz-test--bad-etag", "blobs")) or
      not os.listdir(os.path.join(home, "hub", "models--attnviz-test--bad-etag", "blobs")), "a malformed ETag: no blob written")
hub.claimed[("attnviz-test/too-big", "model.safetensors")] = 10 ** 15
n = len(hub.log)
bad("too big for memory", run("attnviz-test/too-big", home), "attnviz-test/too-big", "memory", "not downloaded")
check(not requests_since(n, "cdn"), "too big: refused before the download")

# 9. A GGUF repo (bartowski's kind): --quant picks one file, and only it is fetched.
bad("a GGUF repo without --quant", run("attnviz-test/tiny-GGUF", home), "attnviz-test/tiny-GGUF", "--quant",
    "tiny-IQ4_NL.gguf", "tiny-Q8_0.gguf")
p = run("attnviz-test/tiny-GGUF", home, args=("--quant", "q8_0", "--ids", "1,2,3", "--json"))
snap = os.path.join(home, "hub", "models--attnviz-test--tiny-GGUF", "snapshots", hub.repos["attnviz-test/tiny-GGUF"].branches["main"])
check(p.returncode == 0 and json.loads(p.stdout)["gguf"]["architecture"] == "llama" and sorted(os.listdir(snap)) == ["tiny-Q8_0.gguf"],
      f"--quant q8_0: that file alone, fetched and run ({p.stderr.strip()!r})")
p = run("attnviz-test/tiny-GGUF", home, args=("--quant", "IQ4_NL", "--ids", "1,2,3", "--json"), HF_HUB_OFFLINE="1")
bad("offline, the other quantization not cached", p, "attnviz-test/tiny-GGUF", "--quant", "IQ4_NL")
p = run("attnviz-test/tiny-GGUF", home, args=("--quant", "IQ4_NL", "--ids", "1,2,3", "--json"))
check(p.returncode == 0 and json.loads(p.stdout)["gguf"]["architecture"] == "gemma2", "--quant IQ4_NL: the other file")
# its faults: the GGUF's transfer cut halfway (resumed with Range), and a checksum mismatch
gguf_home = os.path.join(work, "gguf-home")
q8_sha = sha(gguf_files["tiny-Q8_0.gguf"])
hub.cuts[q8_sha] = 1
n = len(hub.log)
p = run("attnviz-test/tiny-GGUF", gguf_home, args=("--quant", "Q8_0", "--ids", "1,2,3", "--json"))
ranges = [r[3] for r in requests_since(n, "cdn") if r[3]]
check(p.returncode == 0 and json.loads(p.stdout)["gguf"]["architecture"] == "llama" and ranges and ranges[0].startswith("bytes="),
      f"a GGUF's cut transfer resumed with Range ({ranges})")
hub.cuts[q8_sha] = 0
hub.corrupt.add(sha(gguf_files["tiny-IQ4_NL.gguf"]))
bad("a GGUF's checksum mismatch", run("attnviz-test/tiny-GGUF", gguf_home, args=("--quant", "IQ4_NL", "--ids", "1")),
    "attnviz-test/tiny-GGUF", "checksum mismatch")
hub.corrupt.clear()
bad("a quantization the repo lacks", run("attnviz-test/tiny-GGUF", home, args=("--quant", "Q4_K_M", "--ids", "1")),
    "attnviz-test/tiny-GGUF", "--quant", "no .gguf file is Q4_K_M", "tiny-Q8_0.gguf")
# the quantization in the id, as llama.cpp's -hf ORG/NAME:QUANT names it (both snapshot files are cached now)
p = run("attnviz-test/tiny-GGUF:IQ4_NL", home, args=("--ids", "1,2,3", "--json"))
check(p.returncode == 0 and json.loads(p.stdout)["gguf"]["architecture"] == "gemma2",
      f"ORG/NAME:IQ4_NL: that file of the two in the snapshot ({p.stderr.strip()!r})")
p = run("attnviz-test/tiny-GGUF:Q8_0", home, args=("--quant", "q8_0", "--ids", "1,2,3", "--json"))
check(p.returncode == 0 and json.loads(p.stdout)["gguf"]["architecture"] == "llama", "ORG/NAME:Q8_0 with the same --quant")
bad("an id's quant and another --quant", run("attnviz-test/tiny-GGUF:Q8_0", home, args=("--quant", "IQ4_NL", "--ids", "1")),
    "attnviz-test/tiny-GGUF:Q8_0", "--quant", "the id names Q8_0 and --quant IQ4_NL")

hub.stop()
shutil.rmtree(work)
print(f"{len(failures)} failures" if failures else "hub: ok")
sys.exit(1 if failures else 0)
