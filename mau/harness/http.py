"""A lean async HTTP/1.1 client for JSON POSTs to one endpoint: keep-alive connections pooled per event loop,
TLS for https, Content-Length and chunked bodies. The ``openai`` backend's default transport (``http_client:
mau``): the ``openai`` package's client spends most of a collect worker's CPU on typing the request body and
building response models (``mau bench collect``: docs/collect.md); this sends the bytes and reads JSON back.
No proxy support (use ``http_client: openai`` behind an HTTPS proxy), no compression, no redirects.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from typing import Any
from urllib.parse import urlsplit


class HttpStatusError(Exception):
    """A response other than 2xx: its status, headers (lower-case names) and body."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes):
        super().__init__(f"HTTP {status}")
        self.status, self.headers, self.body = status, headers, body


class Endpoint:
    """``await Endpoint(base_url).post_json("/chat/completions", body, headers, timeout_s)`` -> the JSON
    answer. Connections are kept per event loop (a worker's) and reused; one that the server closed while
    idle is replaced once, transparently."""

    def __init__(self, base_url: str):
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"base_url {base_url!r}: expected http://host[:port]/path or https://...")
        self.host, self.tls = u.hostname, u.scheme == "https"
        self.port = u.port or (443 if self.tls else 80)
        self.prefix = u.path.rstrip("/")
        self.authority = u.netloc.rsplit("@", 1)[-1]
        self._ssl = ssl.create_default_context() if self.tls else None
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    async def post_json(self, path: str, body: Any, headers: dict[str, str], timeout_s: float) -> Any:
        data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        head = (f"POST {self.prefix}{path} HTTP/1.1\r\nHost: {self.authority}\r\nContent-Type: "
                f"application/json\r\nAccept: application/json\r\nContent-Length: {len(data)}\r\n"
                + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode()
        status, hdrs, payload = await asyncio.wait_for(self._exchange(head + data), timeout_s)
        if not 200 <= status < 300:
            raise HttpStatusError(status, hdrs, payload)
        return json.loads(payload)

    async def _exchange(self, request: bytes) -> tuple[int, dict[str, str], bytes]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # connections belong to the loop that opened them
            self._idle, self._loop = [], loop
        reused = bool(self._idle)
        conn = self._idle.pop() if reused else await self._open()
        try:
            try:
                result, keep = await self._roundtrip(conn, request)
            except (ConnectionError, asyncio.IncompleteReadError, EOFError):
                if not reused:
                    raise
                conn[1].close()  # the server closed it while idle: once more, on a new connection
                conn = await self._open()
                result, keep = await self._roundtrip(conn, request)
        except BaseException:
            conn[1].close()
            raise
        if keep:
            self._idle.append(conn)
        else:
            conn[1].close()
        return result

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.host, self.port, ssl=self._ssl,
                                             server_hostname=self.host if self.tls else None, limit=2 ** 22)

    @staticmethod
    async def _roundtrip(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                         request: bytes) -> tuple[tuple[int, dict[str, str], bytes], bool]:
        reader, writer = conn
        writer.write(request)
        await writer.drain()
        line = await reader.readline()
        if not line:
            raise EOFError("the server closed the connection")
        parts = line.decode("latin-1").split(" ", 2)
        status = int(parts[1])
        headers: dict[str, str] = {}
        while True:
            h = await reader.readline()
            if h in (b"\r\n", b"\n"):
                break
            if not h:
                raise EOFError("the server closed the connection in the headers")
            k, _, v = h.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
            body = b"".join(chunks)
            keep = True
        elif "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
            keep = True
        else:  # the body runs to the end of the connection
            body = await reader.read()
            keep = False
        keep = keep and headers.get("connection", "").lower() != "close"
        return (status, headers, body), keep

    def close(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle = []
