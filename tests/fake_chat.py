"""A scripted chat-completions server on 127.0.0.1, for frameworks that reach a
model only over HTTP: reply n of the current script answers a request whose
messages hold n assistant turns already (streamed as SSE when asked)."""
from __future__ import annotations

import json
import socket
import threading
import time


class FakeChat:
    def __init__(self):
        self.script: list[str] = []
        self.requests: list[dict] = []
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._server = None
        self._thread: threading.Thread | None = None

    def reply_for(self, body: dict) -> str:
        n = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        return self.script[n] if n < len(self.script) else "I have nothing more to do."

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse, StreamingResponse
        from starlette.routing import Route

        async def completions(request):
            body = await request.json()
            self.requests.append(body)
            text = self.reply_for(body)
            usage = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
            base = {"id": f"chatcmpl-{len(self.requests)}", "created": int(time.time()),
                    "model": body.get("model", "fake")}
            if not body.get("stream"):
                return JSONResponse({**base, "object": "chat.completion", "usage": usage, "choices": [
                    {"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}]})

            def events():
                chunk = {**base, "object": "chat.completion.chunk"}
                for choice in ({"index": 0, "delta": {"role": "assistant", "content": text},
                                "finish_reason": None},
                               {"index": 0, "delta": {}, "finish_reason": "stop"}):
                    yield f"data: {json.dumps({**chunk, 'choices': [choice]})}\n\n"
                yield f"data: {json.dumps({**chunk, 'choices': [], 'usage': usage})}\n\n"
                yield "data: [DONE]\n\n"
            return StreamingResponse(events(), media_type="text/event-stream")

        async def models(request):
            return JSONResponse({"object": "list", "data": [{"id": "fake", "object": "model"}]})

        return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                                 Route("/v1/models", models, methods=["GET"])])

    def __enter__(self) -> "FakeChat":
        import uvicorn

        self._server = uvicorn.Server(uvicorn.Config(self.app(), host="127.0.0.1", port=self.port,
                                                     log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            assert time.monotonic() < deadline, "the fake chat server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(30)
