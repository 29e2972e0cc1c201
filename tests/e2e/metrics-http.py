#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""metrics-http.py ADDRESS get PATH [METHOD] | ADDRESS abuse IDLE_WAIT_S

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
    beyond-limit closed|open    one more from there: closed by kdpd at once
    while-held STATUS           a scrape from 127.0.0.1 meanwhile
    idle-closed N               held connections kdpd closed within IDLE_WAIT_S
"""
import http.client
import socket
import sys
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


def abuse(address, idle_wait):
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
    extra = tcp(address)
    print("beyond-limit", "closed" if closed_now(extra, 10) else "open")
    extra.close()
    print("while-held", other_peer(address))
    deadline = time.monotonic() + idle_wait
    closed = sum(closed_now(h, max(0.1, deadline - time.monotonic())) for h in held)
    for h in held:
        h.close()
    print("idle-closed", closed)
    return 0


def main():
    if len(sys.argv) >= 4 and sys.argv[2] == "get":
        return get(sys.argv[1], sys.argv[3], *sys.argv[4:5])
    if len(sys.argv) == 4 and sys.argv[2] == "abuse":
        return abuse(sys.argv[1], float(sys.argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
