"""A stand-in for the AWS Lambda Runtime API (the HTTP protocol a function's runtime polls),
serving API Gateway events to a real function binary and collecting its answers."""

import json
import os
import queue
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/2018-06-01/runtime"


class RuntimeApi:
    def __init__(self, events):
        self.events = queue.Queue()
        for i, event in enumerate(events):
            self.events.put((f"req-{i}", event))
        self.responses = {}
        self.errors = {}
        # When the function first asked for an event: its init is over (Lambda's Init Duration).
        self.first_next = None
        self.done = threading.Event()
        self.expected = len(events)
        # The trace header of every invocation (a test of tracing sets its own).
        self.trace_header = "Root=1-00000000-000000000000000000000000"
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path != f"{PREFIX}/invocation/next":
                    self.send_error(404)
                    return
                if api.first_next is None:
                    api.first_next = time.perf_counter()
                try:
                    request_id, event = api.events.get(timeout=60)
                except queue.Empty:
                    self.send_error(500)
                    return
                body = json.dumps(event).encode()
                self.send_response(200)
                self.send_header("Lambda-Runtime-Aws-Request-Id", request_id)
                self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 30000))
                self.send_header("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:eu-west-3:123456789012:function:fleet")
                self.send_header("Lambda-Runtime-Trace-Id", api.trace_header)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                parts = self.path[len(PREFIX):].strip("/").split("/")
                if len(parts) == 3 and parts[0] == "invocation":
                    target = api.responses if parts[2] == "response" else api.errors
                    target[parts[1]] = (time.perf_counter(), json.loads(body or b"null"))
                elif parts[:2] == ["init", "error"]:
                    api.errors["init"] = (time.perf_counter(), body.decode(errors="replace"))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                if len(api.responses) + len(api.errors) >= api.expected:
                    api.done.set()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def run_function(binary, events, env_extra, timeout=30, prefix=()):
    """Starts the function binary (under `prefix`, a wrapper command such as faketime)
    against a fresh Runtime API; returns (started, api)."""
    api = RuntimeApi(events)
    env = dict(os.environ)
    env.update({
        "AWS_LAMBDA_RUNTIME_API": api.address,
        "AWS_LAMBDA_FUNCTION_NAME": "fleet",
        "AWS_LAMBDA_FUNCTION_VERSION": "1",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/fleet",
        "AWS_LAMBDA_LOG_STREAM_NAME": "local",
        "RUST_LOG": "warn",
    })
    env.update(env_extra)
    out = tempfile.TemporaryFile()
    started = time.perf_counter()
    proc = subprocess.Popen([*prefix, str(binary)], env=env, stdout=out, stderr=subprocess.PIPE)
    try:
        api.done.wait(timeout)
    finally:
        proc.kill()
        proc.wait()
        api.close()
    out.seek(0)
    # What the function printed on stdout (its per-request metrics lines).
    api.stdout = out.read().decode(errors="replace")
    out.close()
    return started, api


def apigw_event(path, token, query=""):
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query,
        "headers": {"authorization": f"Bearer {token}", "accept": "application/json"},
        "requestContext": {
            "accountId": "123456789012", "apiId": "abc123", "domainName": "abc123.execute-api.eu-west-3.amazonaws.com",
            "http": {"method": "GET", "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.10", "userAgent": "test"},
            "requestId": "cold-start-1", "routeKey": "$default", "stage": "$default", "timeEpoch": int(time.time() * 1000),
        },
        "isBase64Encoded": False,
    }


class Started:
    """A function binary kept running against its own Runtime API, answering events one at a
    time as the test sends them (what happens between two events is up to the test)."""

    def __init__(self, binary, env_extra):
        self.api = RuntimeApi([])
        env = dict(os.environ)
        env.update({
            "AWS_LAMBDA_RUNTIME_API": self.api.address,
            "AWS_LAMBDA_FUNCTION_NAME": "fleet",
            "AWS_LAMBDA_FUNCTION_VERSION": "1",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
            "RUST_LOG": "warn",
        })
        env.update(env_extra)
        self.proc = subprocess.Popen([str(binary)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.sent = 0

    def call(self, event, timeout=30):
        request_id = f"req-{self.sent}"
        self.sent += 1
        self.api.events.put((request_id, event))
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if request_id in self.api.responses:
                return self.api.responses[request_id][1]
            if request_id in self.api.errors or "init" in self.api.errors or self.proc.poll() is not None:
                raise AssertionError(f"the function failed: {self.api.errors}")
            time.sleep(0.01)
        raise AssertionError(f"no answer to {request_id} in {timeout} s")

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.api.close()
        return self.proc.stderr.read().decode(errors="replace")
