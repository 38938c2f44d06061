"""`munjang serve` prints its address only once the port listens, so a client that follows the
address at once is answered, never refused; the docs it names work offline (Swagger UI from the
server's own files)."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx

from tests.helpers.processes import ROOT, free_port


def test_the_printed_address_answers_at_once(tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "MUNJANG_CACHE": str(tmp_path / "cache"),
        "MUNJANG_ENCODE_BACKEND": "torch:fp32",
    }
    command = [sys.executable, "-m", "munjang.cli", "serve", "-m", "all-MiniLM-L6-v2", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("serving all-MiniLM-L6-v2 at "), line
        assert "API docs: /docs" in line
        answer = httpx.get(f"http://127.0.0.1:{port}/health", timeout=60)  # refused before the fix
        assert answer.status_code == 200
        docs = httpx.get(f"http://127.0.0.1:{port}/docs", timeout=10)
        assert docs.status_code == 200 and "https://" not in docs.text
    finally:
        server.kill()
        server.wait()
