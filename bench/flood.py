#!/usr/bin/env python3
"""Handshake floods against a braid server on loopback, side by side with the flood-free run.

Phases, each SECONDS long (all traffic on 127.0.0.1, nothing else is touched):
  1. a download through a client's port forward, no flood (the reference goodput);
  2. the same download while a real HANDSHAKE_INIT of a key the server does not admit
     (captured from a real `braid client`) is replayed at RATE a second; two seconds in, a
     second, admitted client starts: how long until its session is up;
  3. the replay flood alone: the server's CPU per 1,000 initiations;
  4. junk "initiations" (the right type, version and length, random bytes) at JUNK_RATE a
     second during the download: goodput, and how long GET /status takes;
  5. the junk flood alone: the server's CPU per 1,000.
It also reports how many bytes the server logged during the floods.

Usage: bench/flood.py [--braid PATH] [--seconds 8] [--rate 20000] [--junk-rate 8000] [--json]
The last line with --json is one JSON object with every figure.
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HZ = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def flooder(packet_hex, port, rate, seconds, junk):
    """Sends `rate` datagrams a second for `seconds` (a child process of its own)."""
    packet = bytes.fromhex(packet_hex)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    dest = ("127.0.0.1", port)
    rnd = random.Random(7)
    start = time.monotonic()
    sent = 0
    while True:
        now = time.monotonic() - start
        if now >= seconds:
            break
        due = int(now * rate)
        while sent < due:
            p = packet if not junk else packet[:2] + rnd.randbytes(len(packet) - 2)
            try:
                s.sendto(p, dest)
            except BlockingIOError:
                pass
            sent += 1
        time.sleep(0.0005)
    print(sent)


class Bench:
    def __init__(self, braid, seconds):
        self.braid = braid
        self.seconds = seconds
        self.dir = tempfile.mkdtemp(prefix="braid-flood-")
        self.procs = []
        self.keys = {}
        for name in ["server", "a", "b", "stranger"]:
            key = subprocess.run([braid, "genkey"], capture_output=True, text=True, check=True).stdout
            path = os.path.join(self.dir, f"{name}.key")
            with open(path, "w") as f:
                f.write(key)
            os.chmod(path, 0o600)
            pub = subprocess.run([braid, "pubkey"], input=key, capture_output=True, text=True, check=True).stdout
            self.keys[name] = (path, pub.strip())
        self.listen = free_port(socket.SOCK_DGRAM)
        self.status = free_port()
        self.source_port = self.start_source()

    def spawn(self, args, log=None):
        out = open(log, "wb") if log else subprocess.DEVNULL
        env = dict(os.environ, XDG_RUNTIME_DIR=self.dir)
        p = subprocess.Popen([self.braid] + args, stdout=subprocess.DEVNULL, stderr=out, env=env)
        self.procs.append(p)
        return p

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["rm", "-rf", self.dir])

    def start_source(self):
        """A TCP source that sends zeros as fast as it can to every connection."""
        l = socket.socket()
        l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        l.bind(("127.0.0.1", 0))
        l.listen(16)
        block = memoryview(bytes(1 << 20))

        def serve(c):
            try:
                while True:
                    c.sendall(block)
            except OSError:
                pass

        def accept():
            while True:
                c, _ = l.accept()
                threading.Thread(target=serve, args=(c,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return l.getsockname()[1]

    def start_server(self):
        path, _ = self.keys["server"]
        self.server_log = os.path.join(self.dir, "server.log")
        args = ["server", "--listen", f"127.0.0.1:{self.listen}", "--key", path, "--allow-private",
                "--status", f"127.0.0.1:{self.status}"]
        for c in ["a", "b"]:
            args += ["--client", self.keys[c][1]]
        self.server = self.spawn(args, self.server_log)
        self.wait_status(self.status, lambda st: True, 10)

    def start_client(self, name, server_port, forward=None, status=None):
        path, _ = self.keys[name]
        args = ["--log", "warn", "client", "--server", f"127.0.0.1:{server_port}", "--server-key",
                self.keys["server"][1], "--key", path, "--link", "127.0.0.1"]
        if forward:
            args += ["--forward", f"127.0.0.1:{forward}=127.0.0.1:{self.source_port}"]
        if status:
            args += ["--status", f"127.0.0.1:{status}"]
        return self.spawn(args)

    def get_status(self, port, timeout=5.0):
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.sendall(f"GET /status HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        return json.loads(data.split(b"\r\n\r\n", 1)[1])

    def wait_status(self, port, ok, limit):
        start = time.monotonic()
        while time.monotonic() - start < limit:
            try:
                if ok(self.get_status(port, 1.0)):
                    return time.monotonic() - start
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        return None

    def capture_init(self):
        """The first datagram of a real client whose key the server does not admit."""
        cap = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        cap.bind(("127.0.0.1", 0))
        cap.settimeout(10)
        p = self.start_client("stranger", cap.getsockname()[1])
        data, _ = cap.recvfrom(2048)
        p.kill()
        p.wait()
        cap.close()
        return data

    def download(self, forward, seconds):
        s = socket.create_connection(("127.0.0.1", forward))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        buf = bytearray(1 << 20)
        got = 0
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            n = s.recv_into(buf)
            if n == 0:
                break
            got += n
        s.close()
        return got * 8 / seconds

    def flood(self, packet, rate, seconds, junk=False):
        return subprocess.Popen([sys.executable, __file__, "--flooder", packet.hex(), str(self.listen),
                                 str(rate), str(seconds), "1" if junk else "0"], stdout=subprocess.PIPE, text=True)


def measure(args):
    b = Bench(args.braid, args.seconds)
    out = {"rate": args.rate, "junk_rate": args.junk_rate, "seconds": args.seconds}
    try:
        b.start_server()
        fwd = free_port()
        b.start_client("a", b.listen, forward=fwd)
        b.wait_status(b.status, lambda st: len(st["sessions"]) == 1, 10)
        init = b.capture_init()
        out["init_bytes"] = len(init)
        secs = args.seconds

        # 1. No flood.
        out["goodput_no_flood_mbps"] = b.download(fwd, secs) / 1e6

        # 2. Replay flood during the download; a second admitted client starts 2 s in.
        log0 = os.path.getsize(b.server_log)
        f = b.flood(init, args.rate, secs)
        second = {}

        def start_second():
            time.sleep(2)
            st = free_port()
            t0 = time.monotonic()
            b.start_client("b", b.listen, status=st)
            took = b.wait_status(st, lambda s: any(x["established"] for x in s["sessions"]), 20)
            second["s"] = None if took is None else time.monotonic() - t0

        t = threading.Thread(target=start_second)
        t.start()
        out["goodput_replay_flood_mbps"] = b.download(fwd, secs) / 1e6
        t.join()
        out["replays_sent"] = int(f.communicate()[0])
        out["second_client_up_s"] = second.get("s")
        out["goodput_ratio_replay_flood"] = out["goodput_replay_flood_mbps"] / out["goodput_no_flood_mbps"]

        # 3. Replay flood alone: CPU per 1,000.
        c0 = cpu_seconds(b.server.pid)
        f = b.flood(init, args.rate, secs)
        n = int(f.communicate()[0])
        out["server_cpu_s_per_1000_replays"] = (cpu_seconds(b.server.pid) - c0) / (n / 1000)

        # 4. Junk flood during the download; GET /status time.
        f = b.flood(init, args.junk_rate, secs, junk=True)
        lat = {}

        def status_time():
            time.sleep(secs / 2)
            t0 = time.monotonic()
            try:
                b.get_status(b.status, 30)
                lat["s"] = time.monotonic() - t0
            except OSError:
                lat["s"] = None

        t = threading.Thread(target=status_time)
        t.start()
        out["goodput_junk_flood_mbps"] = b.download(fwd, secs) / 1e6
        t.join()
        f.communicate()
        out["status_answer_during_junk_s"] = lat.get("s")
        out["goodput_ratio_junk_flood"] = out["goodput_junk_flood_mbps"] / out["goodput_no_flood_mbps"]

        # 5. Junk flood alone: CPU per 1,000.
        c0 = cpu_seconds(b.server.pid)
        f = b.flood(init, args.junk_rate, secs, junk=True)
        n = int(f.communicate()[0])
        out["server_cpu_s_per_1000_junk"] = (cpu_seconds(b.server.pid) - c0) / (n / 1000)
        out["server_log_bytes_during_floods"] = os.path.getsize(b.server_log) - log0
        st = b.get_status(b.status)
        out["endpoint_dropped"] = st.get("endpoint_dropped", {})
    finally:
        b.cleanup()
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--flooder":
        flooder(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6] == "1")
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--braid", default=os.path.join(root, "target", "release", "braid"))
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--junk-rate", type=int, default=8000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    out = measure(args)
    f = lambda v, fmt: "-" if v is None else fmt.format(v)
    print(f"braid server under handshake floods ({args.braid})")
    print(f"  initiation size                  {out['init_bytes']} bytes")
    print(f"  goodput, no flood                {out['goodput_no_flood_mbps']:.0f} Mbit/s")
    print(f"  goodput, {args.rate}/s replays       {out['goodput_replay_flood_mbps']:.0f} Mbit/s "
          f"({out['goodput_ratio_replay_flood']:.2f} of no flood; {out['replays_sent']} sent)")
    print(f"  second admitted client up after  {f(out['second_client_up_s'], '{:.2f} s')}")
    print(f"  server CPU per 1,000 replays     {out['server_cpu_s_per_1000_replays'] * 1e3:.1f} ms")
    print(f"  goodput, {args.junk_rate}/s junk          {out['goodput_junk_flood_mbps']:.0f} Mbit/s "
          f"({out['goodput_ratio_junk_flood']:.2f} of no flood)")
    print(f"  GET /status during junk          {f(out['status_answer_during_junk_s'], '{:.3f} s')}")
    print(f"  server CPU per 1,000 junk        {out['server_cpu_s_per_1000_junk'] * 1e3:.1f} ms")
    print(f"  server log during the floods     {out['server_log_bytes_during_floods']} bytes")
    print(f"  endpoint drops                   {out['endpoint_dropped']}")
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
