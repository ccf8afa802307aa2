"""`cargo lambda watch` as a developer runs it from the repository root: started, waited for,
called through its router, and stopped with Ctrl-C (SIGINT), with whatever it started."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import requests


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cargo_lambda():
    """The cargo-lambda binary: on PATH (tests/run.sh puts the project's venv there)."""
    return shutil.which("cargo-lambda")


class Watch:
    """`cargo lambda watch` on a free port in `root`, its output in a file."""

    def __init__(self, root, env_extra=None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile(prefix="cargo-lambda-watch-", suffix=".log", delete=False)
        env = dict(os.environ, NETOPS_LOG_FORMAT="text", RUST_LOG="warn", **(env_extra or {}))
        self.proc = subprocess.Popen(
            ["cargo", "lambda", "watch", "--invoke-address", "127.0.0.1", "--invoke-port", str(self.port)],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )

    def wait_listening(self, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"cargo lambda watch exited:\n{self.output()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"cargo lambda watch not listening after {timeout} s:\n{self.output()}")

    def request(self, method, path, token=None, json_body=None, timeout=120):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return requests.request(method, self.base + path, headers=headers, json=json_body, timeout=timeout)

    def output(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def descendants(self):
        """(pid, command line) of every process started under cargo lambda (function
        instances run in process groups of their own, so only the parent links tell)."""
        out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,args="], capture_output=True, text=True).stdout
        children, args = {}, {}
        for line in out.splitlines():
            pid, ppid, cmd = (line.split(None, 2) + [""])[:3]
            children.setdefault(int(ppid), []).append(int(pid))
            args[int(pid)] = cmd
        found, todo = [], [self.proc.pid]
        while todo:
            for child in children.get(todo.pop(), []):
                found.append((child, args[child]))
                todo.append(child)
        return found

    def stop(self, timeout=20):
        """Ctrl-C; returns the seconds it took to exit (killing it, and failing, past
        `timeout`). The processes it started and left running are then in `survivors`."""
        started = time.time()
        if self.proc.poll() is None:
            started_under = self.descendants()
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
            time.sleep(0.5)
            self.survivors = [(pid, cmd) for pid, cmd in started_under if alive(pid, cmd)]
        return time.time() - started

    def close(self):
        try:
            self.stop()
        finally:
            for pid, cmd in getattr(self, "survivors", []):
                if alive(pid, cmd):
                    os.kill(pid, signal.SIGKILL)
            os.unlink(self.log.name)


def alive(pid, cmd):
    """Whether `pid` still runs `cmd` (and is not a new process that took the number)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip() == cmd.strip()
    except OSError:
        return False
