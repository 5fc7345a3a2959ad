#!/usr/bin/env python3
"""Test double for the braid binary's command-line contract, used only by
tests/braid_contract.rs to exercise the lab's braid contender (keys, start-up,
readiness checks, the port forward, the status snapshot) before the real daemon
exists. It is NOT braid: the forward is one plain TCP connection from the first
--link address, so its figures mean nothing and are never reported anywhere.

Contract checked (exits 2 on any deviation):
  genkey > FILE ; pubkey < FILE
  server --listen ADDR --key FILE --client PUBKEY --allow-private --status ADDR
  client --server ADDR --server-key PUBKEY --key FILE --link IP [--link IP ...]
         --forward LADDR=RADDR --scheduler NAME --status ADDR
"""
import base64
import hashlib
import http.server
import json
import os
import socket
import sys
import threading


def fail(msg):
    print(f"fake-braid: {msg}", file=sys.stderr)
    sys.exit(2)


def parse(argv, single, multi=(), flags=()):
    out = {k: None for k in single}
    out.update({k: [] for k in multi})
    out.update({k: False for k in flags})
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in flags:
            out[a] = True
            i += 1
        elif a in single or a in multi:
            if i + 1 >= len(argv):
                fail(f"{a} needs a value")
            if a in multi:
                out[a].append(argv[i + 1])
            else:
                out[a] = argv[i + 1]
            i += 2
        else:
            fail(f"unexpected argument {a!r}")
    for k in single:
        if out[k] is None:
            fail(f"missing {k}")
    for k in multi:
        if not out[k]:
            fail(f"missing {k}")
    return out


def addr(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


def status_server(where, body):
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path != "/status":
                self.send_error(404)
                return
            data = json.dumps(body()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(addr(where), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()


def pump(src, dst, counter):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            counter[0] += len(b)
            dst.sendall(b)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    if len(sys.argv) < 2:
        fail("no subcommand")
    cmd, rest = sys.argv[1], sys.argv[2:]
    if rest == ["--help"] and cmd in ("client", "server", "genkey", "pubkey"):
        print(f"fake-braid {cmd}")
        return
    if cmd == "genkey":
        print(base64.b64encode(os.urandom(32)).decode())
    elif cmd == "pubkey":
        key = sys.stdin.read().strip()
        if not key:
            fail("empty key on stdin")
        print(base64.b64encode(hashlib.sha256(key.encode()).digest()).decode())
    elif cmd == "server":
        a = parse(rest, ["--listen", "--key", "--client", "--status"], flags=["--allow-private"])
        if not a["--allow-private"]:
            fail("missing --allow-private")
        open(a["--key"]).read()
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(addr(a["--listen"]))
        status_server(a["--status"], lambda: {"role": "server"})
        threading.Event().wait()
    elif cmd == "client":
        a = parse(
            rest,
            ["--server", "--server-key", "--key", "--forward", "--scheduler", "--status"],
            multi=["--link"],
        )
        open(a["--key"]).read()
        local, remote = a["--forward"].split("=", 1)
        moved = [0]
        status_server(
            a["--status"],
            lambda: {"scheduler": a["--scheduler"], "links": a["--link"], "bytes": moved[0]},
        )
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(addr(local))
        lst.listen(16)
        while True:
            c, _ = lst.accept()
            r = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            r.bind((a["--link"][0], 0))
            r.connect(addr(remote))
            threading.Thread(target=pump, args=(c, r, moved), daemon=True).start()
            threading.Thread(target=pump, args=(r, c, moved), daemon=True).start()
    else:
        fail(f"unknown subcommand {cmd!r}")


if __name__ == "__main__":
    main()
