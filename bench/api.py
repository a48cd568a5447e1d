"""The API's cached answers against a bare FastAPI app returning the same bytes, over real HTTP.

For a synthetic snapshot (bench/inventory.py's generator; 5,000 nodes by default) it serves Lens's
app and a bare FastAPI app, each with uvicorn on 127.0.0.1 in a process of its own, and times the same client (one
keep-alive connection, sequential requests, batches alternating between the two) against both. The bare app answers the bytes Lens
answered, from memory, so the ratio (median of the batches' ratios; goal >= 0.8) is the cost of everything Lens does per request
once the snapshot has been read: the source from the environment, the file's identity, the cache
lookup, the ETag. It prints:

- ``/api/v1/clusters/overview`` (after a first request read the snapshot) and with ``nodes=false``;
- ``/api/v1/hardware/capabilities``;
- both with ``If-None-Match`` carrying their ETag: the status (304) and requests/s;
- how many times the snapshot was parsed for N concurrent first requests (goal: 1).

    python bench/api.py                               # 5,000 nodes
    python bench/api.py --nodes 100 --requests 50
"""

from __future__ import annotations

import argparse
import http.client
import os
import json
import shutil
import socket
import subprocess
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import uvicorn  # noqa: E402
from fastapi import FastAPI, Response  # noqa: E402
from inventory import write_snapshot  # noqa: E402

from llm_d_lens.api.app import create_app  # noqa: E402
from llm_d_lens.cluster import service  # noqa: E402
from llm_d_lens.serving import inventories as cache


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[int]:
    """uvicorn on a free loopback port in a thread, until the block ends."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        connection.request("GET", path, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, answer.read(), {k.lower(): v for k, v in answer.getheaders()}
    finally:
        connection.close()


def requests_per_second(port: int, path: str, count: int, headers: dict[str, str] | None = None) -> tuple[float, int]:
    """``count`` sequential requests on one keep-alive connection; (requests/s, last status)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    status = 0
    try:
        started = time.perf_counter()
        for _ in range(count):
            connection.request("GET", path, headers=headers or {})
            answer = connection.getresponse()
            answer.read()
            status = answer.status
        return count / (time.perf_counter() - started), status
    finally:
        connection.close()


def bare_app(bodies: dict[str, bytes]) -> FastAPI:
    """A FastAPI app answering each path with fixed bytes: the floor."""
    app = FastAPI()

    def route(body: bytes) -> Any:
        async def answer() -> Response:  # async: no worker thread, the strictest floor
            return Response(body, media_type="application/json")
        return answer

    for path, body in bodies.items():
        app.add_api_route(path, route(body), methods=["GET"])
    return app


#: a server in its own process (so the client's and the other server's work never shares its GIL)
SERVER = """
import json, sys, uvicorn
sys.path[:0] = [sys.argv[3], sys.argv[3] + "/bench"]
if sys.argv[1] == "lens":
    from llm_d_lens.api.app import create_app
    app = create_app()
else:
    import api
    bodies = json.loads(open(sys.argv[4]).read())
    app = api.bare_app({path: open(file, "rb").read() for path, file in bodies.items()})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", access_log=False)
"""


@contextmanager
def server_process(kind: str, extra: list[str] = ()) -> Iterator[int]:  # type: ignore[assignment]
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", SERVER, kind, str(port), str(ROOT), *extra])
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                get(port, "/openapi.json")
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"the {kind} server did not start") from None
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def concurrent_first_parses(port: int, path: str, clients: int) -> int:
    """Parses of the snapshot while ``clients`` requests arrive at once on a server that has read nothing."""
    calls: list[int] = []
    real = service.inspect

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    cache.forget()
    service.inspect = counted  # type: ignore[assignment]
    try:
        start = threading.Barrier(clients)
        statuses: list[int] = []

        def one() -> None:
            start.wait()
            statuses.append(get(port, path)[0])

        threads = [threading.Thread(target=one) for _ in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        service.inspect = real  # type: ignore[assignment]
    if statuses != [200] * clients:
        raise RuntimeError(f"concurrent first requests answered {statuses}")
    return len(calls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=20)
    parser.add_argument("--requests", type=int, default=100, help="requests per batch")
    parser.add_argument("--rounds", type=int, default=5, help="alternating batches per app; the median is printed")
    parser.add_argument("--clients", type=int, default=10, help="concurrent first requests")
    parser.add_argument("--snapshot", type=Path, help="use this snapshot instead of generating one")
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="lens-bench-api-"))
    path = args.snapshot or directory / "cluster.json"
    if args.snapshot is None:
        write_snapshot(path, args.nodes, args.pods_per_node, indent=4)
    os.environ["LENS_CLUSTER_SNAPSHOT"] = str(path)
    for name in ("LENS_CLUSTER_DEMO", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG"):
        os.environ.pop(name, None)
    paths = ["/api/v1/clusters/overview", "/api/v1/clusters/overview?nodes=false", "/api/v1/hardware/capabilities"]
    print(f"snapshot: {path.stat().st_size / 2**20:.1f} MiB; {args.requests} sequential requests per measurement")
    bare_paths = {p: p.split("?")[0] + ("/bare" if "?" in p else "") for p in paths}
    try:
        with serving(create_app()) as port:  # in this process, so the parses can be counted
            parses = concurrent_first_parses(port, paths[0], args.clients)
        with server_process("lens") as port:
            answers = {p: get(port, p) for p in paths}  # the first (cold) answers; every later one is cached
            files = {}
            for number, p in enumerate(paths):
                files[bare_paths[p]] = str(directory / f"body-{number}")
                Path(files[bare_paths[p]]).write_bytes(answers[p][1])
            (directory / "bodies.json").write_text(json.dumps(files))
            with server_process("bare", [str(directory / "bodies.json")]) as bare_port:
                samples: dict[str, list[tuple[float, float]]] = {p: [] for p in paths}
                for _ in range(args.rounds):  # alternate, so a noisy moment on a shared machine hurts both alike
                    for p in paths:
                        samples[p].append((requests_per_second(port, p, args.requests)[0],
                                           requests_per_second(bare_port, bare_paths[p], args.requests)[0]))
            revalidated = {p: requests_per_second(port, p, args.requests, {"If-None-Match": answers[p][2]["etag"]})
                           for p in (paths[0], paths[2])}
    finally:
        if args.snapshot is None and path.exists():
            os.unlink(path)
        shutil.rmtree(directory)
    lens = {p: statistics.median(rate for rate, _ in samples[p]) for p in paths}
    bare = {p: statistics.median(rate for _, rate in samples[p]) for p in paths}
    ratios = {p: statistics.median(mine / theirs for mine, theirs in samples[p]) for p in paths}
    for p in paths:
        print(f"{p}: {len(answers[p][1]) / 1024:.1f} KiB, lens {lens[p]:.1f} req/s, bare FastAPI {bare[p]:.1f} req/s, "
              f"ratio {ratios[p]:.2f} (goal >= 0.8)")
    for p, (rate, status) in revalidated.items():
        print(f"{p} with If-None-Match: {status}, {rate:.1f} req/s")
    print(f"{args.clients} concurrent first requests: the snapshot was parsed {parses} time(s) (goal: 1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
