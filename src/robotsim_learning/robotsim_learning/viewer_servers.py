"""The live view's two servers, ROS-free: the page server (``GET /`` and the ``/ws`` WebSocket the page reads its
updates from) and the Foxglove WebSocket protocol server (``foxglove-sdk``). The viewer node
(:mod:`robotsim_learning.ros.viewer_node`) feeds both; each binds to 127.0.0.1 unless told otherwise and says in
one line why it cannot start.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import threading


class ServerError(RuntimeError):
    """A server cannot start (port in use, address not available): one line, exit status 2."""


def _bind_problem(error: OSError, what: str, host: str, port: int, flag: str) -> ServerError:
    if error.errno == errno.EADDRINUSE:
        return ServerError(f'{what} port {port} on {host} is in use (another viewer?): choose another with {flag}')
    return ServerError(f'{what} cannot listen on {host}:{port}: {error.strerror or error}')


class PageServer:
    """HTTP (the page) + WebSocket (the updates) on one port, in an asyncio loop of its own thread."""

    def __init__(self, host: str, port: int, page: bytes, logger):
        from websockets.asyncio.server import serve

        self.page = page
        self.logger = logger
        self.clients: set = set()
        self.history: collections.deque = collections.deque()  # (sim time, JSON text) of the newest window
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name='viewer-server', daemon=True)
        self.thread.start()

        async def start():
            return await serve(self._handler, host, port, process_request=self._process_request,
                               max_size=2**20, compression=None)

        try:
            self.server = asyncio.run_coroutine_threadsafe(start(), self.loop).result(timeout=30)
        except OSError as error:
            self.loop.call_soon_threadsafe(self.loop.stop)
            raise _bind_problem(error, 'view:', host, port, '--port (view_port:=)') from None
        self.port = self.server.sockets[0].getsockname()[1] if self.server.sockets else port

    def _process_request(self, connection, request):
        from websockets.datastructures import Headers
        from websockets.http11 import Response

        path = request.path.split('?')[0]
        if path == '/ws':
            return None
        if path in ('/', '/index.html'):
            return Response(200, 'OK', Headers([('Content-Type', 'text/html; charset=utf-8'),
                                                 ('Content-Length', str(len(self.page))),
                                                 ('Cache-Control', 'no-store')]), self.page)
        body = b'not found: the view is at /\n'
        return Response(404, 'Not Found', Headers([('Content-Type', 'text/plain'), ('Content-Length', str(len(body)))]),
                        body)

    async def _handler(self, connection):
        with self.lock:
            backlog = [text for _, text in self.history]
        for text in backlog:
            await connection.send(text)
        self.clients.add(connection)
        try:
            await connection.wait_closed()
        finally:
            self.clients.discard(connection)

    def publish(self, sim_time: float, text: str, window: float) -> None:
        from websockets.asyncio.server import broadcast

        with self.lock:
            self.history.append((sim_time, text))
            while self.history and self.history[0][0] < sim_time - window:
                self.history.popleft()
        self.loop.call_soon_threadsafe(lambda: broadcast(set(self.clients), text))

    def close(self) -> None:
        async def stop():
            self.server.close()
            await self.server.wait_closed()
        try:
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(timeout=5)
        except Exception:  # closing on the way out: nothing left to report it to
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)


class FoxgloveBridge:
    """Every subscribed topic as a Foxglove channel of CDR bytes with its ros2msg schema."""

    def __init__(self, host: str, port: int, name: str):
        import foxglove
        from rosbags.typesys import Stores, get_typestore

        self.foxglove = foxglove
        self.store = get_typestore(Stores.ROS2_KILTED)
        try:
            self.server = foxglove.start_server(name=name, host=host, port=port,
                                                capabilities=[foxglove.Capability.Time])
        except Exception as error:  # the SDK raises its own error type; an OSError text inside
            text = str(error)
            if 'in use' in text.lower() or 'address already' in text.lower() or 'os error 98' in text.lower():
                raise ServerError(f'view: Foxglove port {port} on {host} is in use: choose another with '
                                  '--foxglove-port (foxglove_port:=), 0 turns it off') from None
            raise ServerError(f'view: Foxglove server cannot start on {host}:{port}: {text}') from None
        self.port = self.server.port if hasattr(self.server, 'port') else port
        self.channels: dict[str, object] = {}

    def channel(self, topic: str, msg_type: str):
        if topic not in self.channels:
            try:
                definition, _ = self.store.generate_msgdef(msg_type, ros_version=2)
            except Exception:  # a type the ROS 2 store does not know (robotsim_msgs): not forwarded
                self.channels[topic] = None
                return None
            self.channels[topic] = self.foxglove.Channel(
                topic, message_encoding='cdr',
                schema=self.foxglove.Schema(name=msg_type, encoding='ros2msg', data=definition.encode()))
        return self.channels[topic]

    def log(self, topic: str, msg_type: str, data: bytes, log_time_ns: int) -> None:
        channel = self.channel(topic, msg_type)
        if channel is not None and channel.has_sinks():
            channel.log(bytes(data), log_time=log_time_ns)

    def time(self, sim_ns: int) -> None:
        self.server.broadcast_time(sim_ns)

    def close(self) -> None:
        self.server.stop()
