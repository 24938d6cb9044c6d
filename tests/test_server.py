"""`taskforge serve` for real: a subprocess on loopback serving shards, 50
requests from concurrent clients (gold, wrong, empty and garbage answers,
malformed JSON, 20 MB bodies, unknown tasks, batches, OpenRLHF), every answer
checked; then overload (503), a deadline (flagged, not 0), and still healthy."""
from __future__ import annotations

import json
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from taskforge.training import rewards
from tests.conftest import ROOT

NEW_FILE = ("diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/NOTES.md\n@@ -0,0 +1 @@\n+notes\n")
GARBAGE = ["```diff\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n```",
           "diff --git a/x b/x\n@@@ not a hunk", "\x00\x01binary\xff", "I refuse."]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base: str, path: str, body=None, raw: bytes | None = None, method: str | None = None,
         timeout: float = 300):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method or ("POST" if data is not None
                                                                           else "GET"),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read()), r.headers
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null"), e.headers


@contextmanager
def server(tasks: Path, tmp: Path, *extra: str):
    port = free_port()
    log = open(tmp / f"serve-{port}.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "taskforge", "serve", "--tasks", str(tasks),
                             "--port", str(port), "--cache", str(tmp / "cache"), *extra],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if call(base, "/health", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None, open(log.name).read()
            assert time.monotonic() < deadline, "server did not come up"
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            code = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        log.seek(0)
        text = log.read()
        log.close()
        # uvicorn stops gracefully on SIGTERM, then re-raises it: -15 is a clean stop,
        # and 0 once the CLI's own SIGTERM handler (cli._term_as_interrupt) is back.
        assert code in (0, -15) and "taskforge serve: stopped after" in text, (code, text)
        assert "Traceback" not in text, text


def test_fifty_concurrent_requests(tasks, shard_dir, tmp_path):
    out, ids = tasks
    gold = {i: (out / i / "gold.patch").read_text() for i in ids}
    rnd = random.Random(6)
    cases = []      # (kind, path, body or raw bytes, check)

    def add(kind, n, make):
        for k in range(n):
            cases.append((kind, *make(k)))

    def ok(reward, reason=None):
        def check(status, body):
            assert status == 200, body
            assert body["reward"] == reward and body["infra_error"] is None, body
            assert reason is None or body["reason"].startswith(reason), body
        return check

    def err(code, needle):
        def check(status, body):
            assert status == code and needle in body["error"], (status, body)
        return check

    add("gold", 10, lambda k: ("/reward", {"instance_id": ids[k % 3],
                                           "solution": f"Fixed:\n```diff\n{gold[ids[k % 3]]}```"},
                               ok(1.0, "resolved")))
    add("wrong", 6, lambda k: ("/reward", {"instance_id": ids[k % 3], "solution": NEW_FILE},
                               ok(0.0, "hidden tests failing")))
    add("empty", 8, lambda k: ("/reward", {"instance_id": ids[k % 3], "solution": " \n" * k},
                               ok(0.0, "empty solution")))
    add("garbage", 8, lambda k: ("/reward", {"instance_id": ids[k % 3],
                                             "solution": GARBAGE[k % 4]}, ok(0.0, "patch-rejected")))
    bad_json = [b"{nope", b"", b"[1, 2", b"\xff\xfe\x00", b'{"instance_id": "x"', b"   "]
    add("malformed", 6, lambda k: ("/reward", bad_json[k], err(400, "JSON")))
    add("oversized", 2, lambda k: ("/reward" if k == 0 else "/reward/batch",
                                   b'{"solution": "' + b"a" * (20 * 1024 * 1024) + b'"}',
                                   err(413, "over")))
    fields = [{"instance_id": ids[0]}, {"instance_id": ids[0], "solution": 5}, [1, 2]]
    add("fields", 3, lambda k: ("/reward", fields[k], err(422, "")))
    add("unknown", 3, lambda k: ("/reward", {"instance_id": f"nope-{k}", "solution": "x"},
                                 err(404, "no task")))

    def batch_check(status, body):
        assert status == 200, body
        assert [r["reward"] for r in body["results"]] == [1.0, 0.0], body
    add("batch", 2, lambda k: ("/reward/batch", {"items": [
        {"instance_id": ids[k], "solution": gold[ids[k]]},
        {"instance_id": ids[k], "solution": GARBAGE[0]}]}, batch_check))

    def rlhf_check(status, body):
        assert status == 200, body
        assert body["rewards"] == [1.0, 0.0] and body["extra_logs"]["infra_error"] == [0.0, 0.0]
    add("openrlhf", 2, lambda k: ("/get_reward", {
        "query": ["Q:" + gold[ids[2]], "Q:nothing"], "prompts": ["Q:", "Q:"],
        "labels": [ids[2], ids[2]]}, rlhf_check))
    assert len(cases) == 50
    rnd.shuffle(cases)

    with server(shard_dir, tmp_path, "--concurrency", "2", "--max-queue", "64",
                "--max-body", str(8 * 1024 * 1024)) as base:
        def send(case):
            kind, path, body, check = case
            t0 = time.monotonic()
            if isinstance(body, bytes):
                status, got, _ = call(base, path, raw=body)
            else:
                status, got, _ = call(base, path, body)
            return kind, status, got, check, time.monotonic() - t0

        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(send, cases))
        wall = time.monotonic() - t0
        for _kind, status, got, check, _ in answers:
            check(status, got)
        graded = sum(1 for a in answers if a[0] in ("gold", "wrong")) + 4
        print(f"\n50 requests ({graded} graded in sandboxes) in {wall:.1f}s")

        # The library's remote mode goes through the same server.
        r = rewards.score(gold[ids[0]], ids[0], url=base)
        assert r.reward == 1.0 and r.resolved

        status, health, _ = call(base, "/health")
        assert status == 200 and health["status"] == "ok" and health["engine"] == "ok"
        assert health["in_flight"] == 0 and health["queued"] == 0
        assert health["infra_errors"] == 0 and health["served"] >= 10 + 6 + 8 + 8 + 4 + 2
        assert call(base, "/nope")[0] == 404
        assert call(base, "/reward", method="GET")[0] == 405


def test_overload_deadline_and_engine_failures(tasks, tmp_path):
    out, ids = tasks
    gold = (out / ids[0] / "gold.patch").read_text()
    root = tmp_path / "tasks"
    shutil.copytree(out / ids[0], root / ids[0], symlinks=True)
    broken = root / "broken-image"          # its environment image is gone: the engine refuses
    shutil.copytree(out / ids[0], broken, symlinks=True)
    rec = json.loads((broken / "task.json").read_text())
    rec["image_name"] = "taskforge/env-gone:missing"
    (broken / "task.json").write_text(json.dumps(rec))
    with server(root, tmp_path, "--concurrency", "1", "--max-queue", "0", "--timeout", "120") as base:
        first = {}

        def slow():
            # A deadline shorter than any sandbox run: flagged, never scored 0.
            first["answer"] = call(base, "/reward", {"instance_id": ids[0], "solution": gold,
                                                     "timeout": 0.3})
        t = threading.Thread(target=slow)
        t.start()
        t.join()
        status, body, _ = first["answer"]
        assert status == 200 and body["reward"] is None, body
        assert "timed out" in body["infra_error"]

        # Its grading thread still holds the only slot until verify gives up:
        # meanwhile a new answer is turned away with 503, not queued forever.
        saw_busy = False
        for _ in range(100):
            status, body, headers = call(base, "/reward", {"instance_id": ids[0], "solution": gold})
            if status == 503:
                saw_busy = True
                assert "busy" in body["error"] and headers.get("Retry-After")
                time.sleep(0.2)
                continue
            break
        assert status == 200 and body["reward"] == 1.0, body
        assert saw_busy

        # A batch larger than the server could ever admit is refused for good, not 503.
        status, body, _ = call(base, "/reward/batch", {"items": [
            {"instance_id": ids[0], "solution": gold}] * 2})
        assert status == 422 and "at most 1" in body["error"]

        # Engine failures come back flagged (reward null), OpenRLHF's as a 503 to
        # retry; the server carries on.
        status, body, _ = call(base, "/reward", {"instance_id": "broken-image", "solution": gold})
        assert status == 200 and body["reward"] is None and "not found" in body["infra_error"]
        status, body, _ = call(base, "/get_reward", {"query": [gold], "prompts": [""],
                                                     "labels": ["broken-image"]})
        assert status == 503 and "could not be graded" in body["error"]
        status, body, _ = call(base, "/reward", {"instance_id": ids[0], "solution": gold})
        assert status == 200 and body["reward"] == 1.0
        status, health, _ = call(base, "/health")
        assert status == 200 and health["status"] == "ok"
        assert health["timeouts"] == 1 and health["infra_errors"] == 3 and health["in_flight"] == 0


def test_serve_refuses_a_bad_task_source(tmp_path):
    res = subprocess.run([sys.executable, "-m", "taskforge", "serve", "--tasks",
                          str(tmp_path / "nope"), "--port", str(free_port())], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.strip().startswith("error: "), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
