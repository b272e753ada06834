"""Shared by the kafka-python scripts: a brokerd process on free loopback
ports in a temporary directory, and the client options both scripts use.

BROKERD_BIN, if set, is used instead of building ./cmd/brokerd;
KAFKA_PYTHON_API_VERSION=2.5.0 (for example) skips kafka-python's probe.
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Script:
    """Messages prefixed with the script's name."""

    def __init__(self, name):
        self.name = name

    def log(self, msg):
        print("%s: %s" % (self.name, msg), flush=True)

    def fail(self, msg):
        print("%s: FAIL: %s" % (self.name, msg), file=sys.stderr, flush=True)
        sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Broker:
    """A brokerd process in a temporary directory."""

    def __init__(self, script):
        self.script = script
        self.tmp = tempfile.mkdtemp(prefix="brokerd-%s-" % script.name.split(".")[0])
        self.proc = None
        self.log_path = os.path.join(self.tmp, "brokerd.log")
        self.failed = True

    def start(self, version):
        binary = os.environ.get("BROKERD_BIN")
        if not binary:
            binary = os.path.join(self.tmp, "brokerd")
            env = dict(os.environ, CGO_ENABLED="0")
            if subprocess.run(["go", "build", "-o", binary, "./cmd/brokerd"], cwd=REPO, env=env).returncode != 0:
                self.script.fail("go build ./cmd/brokerd failed")
        kport, aport, rport = free_port(), free_port(), free_port()
        self.addr = "127.0.0.1:%d" % kport
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [binary, "--data-dir", os.path.join(self.tmp, "data"), "--kafka-addr", self.addr,
             "--admin-addr", "127.0.0.1:%d" % aport, "--raft-addr", "127.0.0.1:%d" % rport],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while True:
            if self.proc.poll() is not None:
                self.script.fail("brokerd exited before it was ready (code %s)" % self.proc.returncode)
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % aport, timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                self.script.fail("brokerd not ready after 30s")
            time.sleep(0.1)
        self.script.log("brokerd ready on %s (kafka-python %s)" % (self.addr, version))

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.failed and os.path.exists(self.log_path):
            with open(self.log_path, "rb") as f:
                tail = f.read()[-6000:]
            sys.stderr.write("---- brokerd log (tail) ----\n" + tail.decode("utf-8", "replace") + "\n")
        shutil.rmtree(self.tmp, ignore_errors=True)


def api_version_kwargs():
    v = os.environ.get("KAFKA_PYTHON_API_VERSION")
    if not v:
        return {}
    return {"api_version": tuple(int(x) for x in v.split("."))}
