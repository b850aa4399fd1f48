"""A mail relay for tests: a small SMTP server on loopback, in a thread.

`SmtpSink()` accepts every message and keeps it (`messages`, `received`);
`SmtpSink(silent=True)` accepts connections and never answers, as a hung relay
does; `SmtpSink(gate=threading.Event())` takes each message's data, then holds
its reply until the gate opens (`data_seen` is set meanwhile), so a test knows
the sender is in the middle of a send.
"""

import email
import socket
import threading
from email import policy


class SmtpSink:
    def __init__(self, *, silent: bool = False, gate: threading.Event | None = None):
        self.silent = silent
        self.gate = gate
        self.messages: list[email.message.EmailMessage] = []
        self.received = threading.Condition()
        self.data_seen = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        for connection in self.connections:
            connection.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def subjects(self) -> list[str]:
        with self.received:
            return [message["Subject"] for message in self.messages]

    def wait_for_subjects(self, expected: set[str], timeout: float) -> set[str]:
        """The subjects received, once they include `expected` (or at the
        deadline)."""

        def arrived() -> bool:
            return expected <= {message["Subject"] for message in self.messages}

        with self.received:
            self.received.wait_for(arrived, timeout)
            return {message["Subject"] for message in self.messages}

    def _accept(self) -> None:
        while not self.closed:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(connection)
            if not self.silent:
                threading.Thread(
                    target=self._serve, args=(connection,), daemon=True
                ).start()

    def _serve(self, connection: socket.socket) -> None:
        stream = connection.makefile("rb")

        def reply(line: str) -> None:
            connection.sendall(line.encode() + b"\r\n")

        try:
            reply("220 sink ESMTP")
            while line := stream.readline():
                command = line.decode("ascii", "replace").strip().upper()
                if command.startswith(("EHLO", "HELO")):
                    reply("250 sink")
                elif command.startswith(("MAIL", "RCPT", "RSET", "NOOP")):
                    reply("250 OK")
                elif command == "DATA":
                    reply("354 End data with <CR><LF>.<CR><LF>")
                    self._take_data(stream)
                    reply("250 OK queued")
                elif command == "QUIT":
                    reply("221 Bye")
                    return
                else:
                    reply("502 Command not implemented")
        except OSError:
            return
        finally:
            connection.close()

    def _take_data(self, stream) -> None:
        lines = []
        while (line := stream.readline()) not in (b".\r\n", b""):
            lines.append(line[1:] if line.startswith(b"..") else line)
        self.data_seen.set()
        if self.gate is not None:
            self.gate.wait()
        message = email.message_from_bytes(b"".join(lines), policy=policy.default)
        with self.received:
            self.messages.append(message)
            self.received.notify_all()
