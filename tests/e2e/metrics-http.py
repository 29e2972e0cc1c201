#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""metrics-http.py ADDRESS get PATH [METHOD] | ADDRESS abuse HEAD_WAIT_S |
                  ADDRESS probes N TIMEOUT_S

A client of kdpd's metrics endpoint. ADDRESS is HOST:PORT (IPv4) or the path
of a unix socket.

  get PATH [METHOD]   one request (GET by default); prints the status code on
                      the first line, then the body. Exit 1 if no answer came.
  abuse IDLE_WAIT_S   what a scraper that misbehaves does, over TCP from a
                      second loopback address (127.0.0.2) so that the checks
                      from 127.0.0.1 count as another peer. One line each:
    junk STATUS|closed          bytes that are no HTTP request
    huge STATUS|closed          a request head of 64 KiB
    slow STATUS                 a request sent a byte at a time over a second,
                                while another peer's scrape is answered
    other-peer STATUS           that scrape
    held N                      idle connections held open from 127.0.0.2
    oldest-closed yes|no        one more from there: kdpd closes the oldest
    while-held STATUS           a scrape from 127.0.0.1 meanwhile
    head-closed N               the connections left, closed by kdpd within
                                HEAD_WAIT_S for want of a whole request head
  probes N TIMEOUT_S  N probes of GET /healthz as the kubelet makes them (a
                      new connection from 127.0.0.1 each, TIMEOUT_S each,
                      one a second) while connections that send their head
                      a byte a second, never whole, are held open past every
                      limit: 6 from 127.0.0.1 (the node's address, as the
                      kubelet's), 4 from each of 127.0.0.2-6 (pods); each one
                      kdpd closes is opened again. Prints:
    probes N                    probes made
    answered N                  of them answered 200 within TIMEOUT_S
    longest-failure-run N       most failed in a row (3: the kubelet restarts)
    attack-closed yes|no        kdpd closed attacking connections
                      and on stderr, for bench/metrics-probes.sh: the probes'
                      times (p50, max, ms) and the attacking connections opened
"""
import http.client
import socket
import sys
import threading
import time

PER_IP = 4


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.path)


def connection(address):
    if address.startswith("/"):
        return UnixConnection(address)
    host, port = address.rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port), timeout=30)


def get(address, path, method="GET"):
    conn = connection(address)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        body = resp.read().decode("utf-8", "replace")
    except OSError as e:
        print(f"no answer: {e}", file=sys.stderr)
        return 1
    finally:
        conn.close()
    print(resp.status)
    sys.stdout.write(body)
    return 0


def tcp(address, source="127.0.0.2"):
    host, port = address.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(30)
    s.bind((source, 0))
    s.connect((host, int(port)))
    return s


def status_of(s):
    """The status code of what the server answers, or 'closed' when it closes first."""
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    s.close()
    return data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else "closed"


def closed_now(s, wait):
    """True if the server closes `s` (EOF or reset) within `wait` seconds."""
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def other_peer(address):
    conn = http.client.HTTPConnection(*address.rsplit(":", 1), timeout=30)
    conn.request("GET", "/metrics")
    status = conn.getresponse().status
    conn.close()
    return status


def abuse(address, head_wait):
    s = tcp(address)
    s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03junk\xff\xfe\r\n\r\n")
    print("junk", status_of(s))

    s = tcp(address)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n")
    print("huge", status_of(s))

    s = tcp(address)
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    for i, byte in enumerate(request):
        s.sendall(bytes([byte]))
        if i == 10:
            print("other-peer", other_peer(address))
        time.sleep(1.0 / len(request))
    print("slow", status_of(s))

    held = [tcp(address) for _ in range(PER_IP)]    # accepted in the order they came: the next is past the limit
    print("held", len(held))
    held.append(tcp(address))
    print("oldest-closed", "yes" if closed_now(held[0], 10) else "no")
    print("while-held", other_peer(address))
    deadline = time.monotonic() + head_wait
    closed = sum(closed_now(h, max(0.1, deadline - time.monotonic())) for h in held[1:])
    for h in held:
        h.close()
    print("head-closed", closed)
    return 0


class Attacker(threading.Thread):
    """Holds one connection from `source` that sends its head a byte a second, never whole; opens it again when closed."""
    HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096

    def __init__(self, address, source, stop, closed):
        super().__init__(daemon=True)
        self.address, self.source, self.stop, self.closed = address, source, stop, closed
        self.up = threading.Event()
        self.opened = 0

    def run(self):
        while not self.stop.is_set():
            try:
                s = tcp(self.address, self.source)
            except OSError:
                self.stop.wait(0.1)
                continue
            self.up.set()
            self.opened += 1
            try:
                for byte in self.HEAD:
                    s.sendall(bytes([byte]))
                    s.settimeout(1)
                    try:
                        if s.recv(1) == b"":
                            break       # closed by kdpd
                    except socket.timeout:
                        pass
                    if self.stop.is_set():
                        break
            except OSError:
                pass
            finally:
                s.close()
            if not self.stop.is_set():
                self.closed.set()
                self.stop.wait(0.1)     # and again: bounded, on a shared machine


def probe(address, timeout):
    """One kubelet probe: None if GET /healthz answered 200 within `timeout`, else what went wrong."""
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout, source_address=("127.0.0.1", 0))
    try:
        conn.request("GET", "/healthz")
        status = conn.getresponse().status
        return None if status == 200 else f"status {status}"
    except (OSError, http.client.HTTPException) as e:
        return repr(e)
    finally:
        conn.close()


def probes(address, n, timeout):
    stop, closed = threading.Event(), threading.Event()
    sources = ["127.0.0.1"] * (PER_IP + 2) + [f"127.0.0.{i}" for i in range(2, 7) for _ in range(PER_IP)]
    attackers = [Attacker(address, src, stop, closed) for src in sources]
    for a in attackers:
        a.start()
    for a in attackers:                 # the attack in place before the first probe
        a.up.wait(30)
    answered = run = longest = 0
    times, failures = [], {}
    for _ in range(n):
        start = time.monotonic()
        failure = probe(address, timeout)
        times.append((time.monotonic() - start) * 1000)
        if failure:
            failures[failure] = failures.get(failure, 0) + 1
            run += 1
            longest = max(longest, run)
        else:
            answered += 1
            run = 0
        time.sleep(max(0.0, 1.0 - (time.monotonic() - start)))
    stop.set()
    for a in attackers:
        a.join()
    print("probes", n)
    print("answered", answered)
    print("longest-failure-run", longest)
    print("attack-closed", "yes" if closed.is_set() else "no")
    times.sort()
    print(f"probe_p50_ms={times[n // 2]:.2f} probe_max_ms={times[-1]:.2f} "
          f"attack_connections={sum(a.opened for a in attackers)}", file=sys.stderr)
    for failure, count in failures.items():
        print(f"failed {count}: {failure}", file=sys.stderr)
    return 0


def main():
    if len(sys.argv) >= 4 and sys.argv[2] == "get":
        return get(sys.argv[1], sys.argv[3], *sys.argv[4:5])
    if len(sys.argv) == 4 and sys.argv[2] == "abuse":
        return abuse(sys.argv[1], float(sys.argv[3]))
    if len(sys.argv) == 5 and sys.argv[2] == "probes":
        return probes(sys.argv[1], int(sys.argv[3]), float(sys.argv[4]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
