"""mau's lean HTTP client (mau/harness/http.py) against small servers on loopback: a chunked answer, a
kept-alive connection the server closed while it was idle (sent again, once, on a new one), an error status
with its headers, a body that runs to the end of the connection, and a timeout."""

from __future__ import annotations

import asyncio
import json

import pytest

from mau.harness.http import Endpoint, HttpStatusError


async def _serve(handler) -> tuple[asyncio.AbstractServer, str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1"


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict]:
    line = (await reader.readline()).decode()
    length = 0
    while (h := await reader.readline()) not in (b"\r\n", b""):
        k, _, v = h.decode().partition(":")
        if k.lower() == "content-length":
            length = int(v)
    return line, json.loads(await reader.readexactly(length))


def test_chunked_answers_and_a_connection_closed_while_idle():
    seen: list[tuple[str, dict]] = []

    async def handler(reader, writer):
        seen.append(await _read_request(reader))  # one request per connection, then the server closes it
        body = json.dumps({"n": len(seen)}).encode()
        half = len(body) // 2
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     + f"{half:x}\r\n".encode() + body[:half] + b"\r\n"
                     + f"{len(body) - half:x}\r\n".encode() + body[half:] + b"\r\n0\r\n\r\n")
        await writer.drain()
        writer.close()

    async def main():
        server, url = await _serve(handler)
        ep = Endpoint(url)
        try:
            first = await ep.post_json("/chat/completions", {"q": 1}, {"Authorization": "Bearer k"}, 5)
            await asyncio.sleep(0.05)  # the server has closed the kept-alive connection by now
            second = await ep.post_json("/chat/completions", {"q": 2}, {}, 5)
        finally:
            ep.close()
            server.close()
        return first, second

    first, second = asyncio.run(main())
    assert first == {"n": 1} and second == {"n": 2}
    assert [body for _, body in seen] == [{"q": 1}, {"q": 2}]
    assert seen[0][0].startswith("POST /v1/chat/completions HTTP/1.1")


def test_error_status_body_to_the_end_and_timeout():
    async def handler(reader, writer):
        while True:  # keep-alive: requests on one connection until one says otherwise
            line, body = await _read_request(reader)
            if body["kind"] == "limited":
                writer.write(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: "
                             b"2\r\n\r\n{}")
                await writer.drain()
            elif body["kind"] == "close":
                writer.write(b"HTTP/1.1 200 OK\r\nConnection: "
                             b"close\r\n\r\n" + json.dumps({"ok": True}).encode())
                await writer.drain()
                writer.close()
                return
            else:
                await asyncio.sleep(5)  # hangs
                return

    async def main():
        server, url = await _serve(handler)
        ep = Endpoint(url)
        try:
            with pytest.raises(HttpStatusError) as e:
                await ep.post_json("/chat/completions", {"kind": "limited"}, {}, 5)
            assert e.value.status == 429 and e.value.headers["retry-after"] == "3"
            assert await ep.post_json("/chat/completions", {"kind": "close"}, {}, 5) == {"ok": True}
            with pytest.raises(asyncio.TimeoutError):
                await ep.post_json("/chat/completions", {"kind": "hang"}, {}, 0.3)
        finally:
            ep.close()
            server.close()

    asyncio.run(main())
    with pytest.raises(ValueError, match="base_url"):
        Endpoint("ftp://example.org/v1")
