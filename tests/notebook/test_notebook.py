#!/usr/bin/python3
"""attnviz in a notebook, as a user gets it (SPEC.md §7):

1. a venv (with the system's numpy, torch, ipykernel) and `pip install ./python`, offline;
2. the package's unit tests (pytest: python/tests/);
3. examples/attention.ipynb executed by nbclient in that venv's kernel, with no network, and one
   cell added at the end that writes the maps each figure was asked to show (expected.json);
4. the outputs' sizes against the budget: ≤ 2 MB for the figure's code (the app, the scripts, the
   HTML), ≤ 2.5 bytes per weight for the maps (the attention less its header: the tokens);
5. nbconvert's HTML export, each output alone (outputs/N.html), a page holding each in a
   sandboxed srcdoc frame under Colab's CSP (sandbox.html), and the executed notebook saved twice
   for Jupyter Notebook to reopen: trusted.ipynb signed (in jupyter/data, as `jupyter trust` or
   running it oneself signs it), untrusted.ipynb not; for tests/browser/notebook.mjs.

usage: test_notebook.py OUT_DIR    (the web build in build-web/site; exits 1 on a failure)
"""
import base64
import gzip
import json
import struct
import os
import pathlib
import subprocess
import sys
import html as html_lib

ROOT = pathlib.Path(__file__).resolve().parents[2]
CODE_BUDGET, WEIGHT_BUDGET = 2 * 1024 * 1024, 2.5
COLAB_CSP = ("default-src 'none'; script-src 'unsafe-inline' 'wasm-unsafe-eval'; style-src 'unsafe-inline'; "
             "img-src data: blob:")

# Run in the kernel after the example: what each figure's twin must show (its map, the first
# 64 × 64 as the twin's table holds), and how many weights each carries. In output order.
EXPECTED_CELL = """
import json, os
def first(m): return [[round(float(x), 6) for x in row[:64]] for row in m[:64]]
expected = [
    {"map": first(hf_attentions[1][0, 2]), "weights": sum(a[0].numel() for a in hf_attentions)},
    {"map": first(cache["pattern", 1][0, 2]), "weights": sum(cache["pattern", l][0].numel() for l in range(2))},
    {"map": first(cross[1][0, 1]), "weights": sum(a[0].numel() for a in encoder + decoder + cross)},
    {"map": first(big[0, 0]), "weights": big.numel()},
    {"map": None, "weights": 0},
]
with open(os.environ["ATTNVIZ_EXPECTED"], "w") as f:
    json.dump(expected, f)
"""

failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(name)


def main():
    out = pathlib.Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    venv = out / "venv"

    # 1. The package, as a user installs it: no index reachable, nothing downloaded.
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--clear", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([str(python), "-m", "pip", "install", str(ROOT / "python")], env=env,
                       capture_output=True, text=True)
    check("pip install ./python, offline", r.returncode == 0, (r.stdout + r.stderr).strip().splitlines()[-1])
    if r.returncode:
        return

    # 2. Unit tests of the arguments, and of the figure's HTML.
    r = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "python" / "tests")],
                       cwd=out, capture_output=True, text=True, env=dict(env, PYTHONDONTWRITEBYTECODE="1"))
    check("pytest python/tests", r.returncode == 0, r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr)
    if r.returncode:
        print(r.stdout[-4000:])

    # 3. The example, executed in the venv's kernel (a kernel spec of its own, found first).
    kernels = out / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True, exist_ok=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (attnviz test venv)", "language": "python"}))
    run = subprocess.run([str(python), "-c", EXECUTE, str(ROOT / "examples" / "attention.ipynb"), str(out)],
                         env=dict(env, JUPYTER_PATH=str(out / "jupyter"), ATTNVIZ_EXPECTED=str(out / "expected.json"),
                                  EXPECTED_CELL=EXPECTED_CELL),
                         capture_output=True, text=True)
    check("nbclient runs examples/attention.ipynb", run.returncode == 0, run.stdout.strip() or run.stderr[-3000:])
    if run.returncode:
        return

    # 4. The sizes: the code once per output, the attention by its weights.
    import nbformat
    nb = nbformat.read(out / "executed.ipynb", as_version=4)
    outputs = [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
               if "text/html" in o.get("data", {})]
    expected = json.loads((out / "expected.json").read_text())
    check("one figure per example", len(outputs) == len(expected), f"{len(outputs)} outputs")
    for i, (fragment, e) in enumerate(zip(outputs, expected)):
        payload = json.loads(fragment.split('-payload">', 1)[1].split("</script>", 1)[0])
        # The maps: the attention's bytes less what its header (the tokens) alone packs to.
        data = len(payload["attention"] or "")
        if data:
            raw = gzip.decompress(base64.b64decode(payload["attention"]))
            data -= len(base64.b64encode(gzip.compress(raw[:8 + struct.unpack("<Q", raw[:8])[0]], mtime=0)))
        models = sum(len(v) for files in payload["models"].values() for v in files.values())
        picture = len(payload["picture"]["bytes"]) if payload.get("picture") else 0  # a vision model's picture: data, not code
        code = len(fragment) - len(payload["attention"] or "") - models - picture  # the app, the scripts, the HTML around
        note = f"output {i + 1}: {len(fragment) / 1e6:.2f} MB; code {code / 1e6:.2f} MB"
        if e["weights"]:
            note += f", {data / e['weights']:.2f} bytes per weight ({e['weights']} weights)"
        if models:
            note += f", built-in model {models / 1e6:.2f} MB"
        check(f"output {i + 1} within budget", code <= CODE_BUDGET and (not e["weights"] or data <= WEIGHT_BUDGET * e["weights"]), note)
        (out / "outputs").mkdir(exist_ok=True)
        (out / "outputs" / f"{i + 1}.html").write_text(fragment)

    # 5. nbconvert's export, and Colab's situation: each output in its own sandboxed frame.
    from nbconvert import HTMLExporter
    body, _ = HTMLExporter().from_notebook_node(nb)
    (out / "notebook.html").write_text(body)
    frames = "\n".join(
        f'<iframe sandbox="allow-scripts" style="width:900px;height:600px;border:0" srcdoc="'
        + html_lib.escape(f'<!doctype html><html><head><meta charset="utf-8">'
                          f'<meta http-equiv="Content-Security-Policy" content="{COLAB_CSP}"></head>'
                          f'<body style="margin:0">{fragment}</body></html>', quote=True) + '"></iframe>'
        for fragment in outputs)
    (out / "sandbox.html").write_text(f'<!doctype html><html><head><meta charset="utf-8"><title>sandboxed outputs</title>'
                                      f'</head><body>{frames}</body></html>')
    from nbformat.sign import NotebookNotary
    copy = nbformat.read(out / "executed.ipynb", as_version=4)
    copy.metadata["title"] = "untrusted"  # its own digest: the notary trusts what it signed, by content
    nbformat.write(copy, out / "untrusted.ipynb")
    signed = nbformat.read(out / "executed.ipynb", as_version=4)
    (out / "jupyter" / "data").mkdir(parents=True, exist_ok=True)
    NotebookNotary(data_dir=str(out / "jupyter" / "data")).sign(signed)
    nbformat.write(signed, out / "trusted.ipynb")
    (out / "index.html").write_text('<!doctype html><title>notebook test</title><a href="notebook.html">notebook</a> '
                                    '<a href="sandbox.html">sandboxed outputs</a>')
    check("nbconvert exports the notebook", "attnvizNotebook(" in body, f"notebook.html {len(body) / 1e6:.1f} MB")


# Run by the venv's python: nbclient executes the example plus EXPECTED_CELL, and saves it.
EXECUTE = """
import os, sys, nbformat, nbclient
path, out = sys.argv[1], sys.argv[2]
nb = nbformat.read(path, as_version=4)
nb.cells.append(nbformat.v4.new_code_cell(os.environ["EXPECTED_CELL"]))
nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": out}}).execute()
nb.cells.pop()
nbformat.write(nb, os.path.join(out, "executed.ipynb"))
print(f"{sum(c.cell_type == 'code' for c in nb.cells)} code cells executed")
"""

if __name__ == "__main__":
    main()
    print(f"notebook: {len(failures)} failed" if failures else "notebook: all passed")
    sys.exit(1 if failures else 0)
