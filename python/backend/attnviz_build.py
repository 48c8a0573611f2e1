"""A PEP 517 backend in the standard library: the attnviz wheel, with the built web app inside.

pip install ./python calls build_wheel here (pyproject.toml says why not setuptools). The wheel
holds python/attnviz/*.py and, under attnviz/app/, what a notebook output carries: the app's
SIMD128 build (attnviz.js, .wasm), its fonts (attnviz.data, and the common CJK font loaded when
a character is missing), the embed and notebook scripts and the built-in models, copied from the web build (../build-web/site, or $ATTNVIZ_SITE).
"""
import base64
import hashlib
import os
import pathlib
import tomllib
import zipfile

HERE = pathlib.Path(__file__).resolve().parents[1]  # python/
APP_FILES = ("attnviz.js", "attnviz.wasm", "attnviz.data", "attnviz-embed.js", "attnviz-notebook.js",
             "fonts/cjk-common.ttf",
             # the whole page, which attnviz.serve() serves at its address
             "index.html", "attnviz-page.js", "attnviz.css", "favicon.svg")


def _project():
    return tomllib.loads((HERE / "pyproject.toml").read_text())["project"]


def _site():
    site = pathlib.Path(os.environ.get("ATTNVIZ_SITE", HERE.parent / "build-web" / "site"))
    missing = [name for name in APP_FILES if not (site / name).is_file()]
    if missing:
        raise RuntimeError(f"attnviz: {site} has no {', '.join(missing)}: build the web app first "
                           "(scripts/run.sh; docs/WEB.md), or set ATTNVIZ_SITE to its site folder")
    return site


def _files():
    """(path in the wheel, bytes) of everything but the .dist-info."""
    for path in sorted((HERE / "attnviz").glob("*.py")):
        yield f"attnviz/{path.name}", path.read_bytes()
    site = _site()
    for name in APP_FILES:
        yield f"attnviz/app/{name}", (site / name).read_bytes()
    models = site / "models"
    for path in sorted(models.glob("*/*")) if models.is_dir() else []:
        yield f"attnviz/app/models/{path.parent.name}/{path.name}", path.read_bytes()


def _metadata(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project['description']}", f"Requires-Python: {project['requires-python']}"]
    lines += [f"Requires-Dist: {d}" for d in project["dependencies"]]
    return "\n".join(lines) + "\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    name, version = project["name"], project["version"]
    wheel = f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    entries = list(_files()) + [
        (f"{info}/METADATA", _metadata(project).encode()),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: attnviz_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = []
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            z.writestr(zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        z.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return wheel
