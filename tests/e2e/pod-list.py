#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""pod-list.py FILE PODS CONTAINERS DEVICES [ID_PAD]

Writes to FILE a PodResources ListPodResourcesResponse as it is on the wire
(for `kdpctl kubelet --pod-list FILE`): PODS pods pod-<p> in namespace
default, each with CONTAINERS containers c<c>, each holding DEVICES devices of
example.com/widget, one ContainerDevices each as the kubelet splits them:
IDs widget-<k> (k counting on over all containers, ID_PAD 'x's appended),
device k on NUMA node k % 2. Prints on stdout the table `kdpctl who` makes of
it when no device is allocatable and no plugin socket is given.
"""
import sys


def varint(v):
    out = b""
    while v > 0x7f:
        out += bytes([v & 0x7f | 0x80])
        v >>= 7
    return out + bytes([v])


def field(number, data):
    return varint(number << 3 | 2) + varint(len(data)) + data


def main():
    path, pods, containers, devices = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    pad = "x" * (int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    out, rows, k = bytearray(), [], 0
    for p in range(pods):
        pod = field(1, b"pod-%d" % p) + field(2, b"default")
        for c in range(containers):
            container = field(1, b"c%d" % c)
            for _ in range(devices):
                ident = "widget-%d%s" % (k, pad)
                topology = field(1, varint(1 << 3) + varint(k % 2))
                container += field(2, field(1, b"example.com/widget") + field(2, ident.encode()) +
                                   field(3, topology))
                rows.append(["example.com/widget", ident, "-", str(k % 2), "default", "pod-%d" % p, "c%d" % c])
                k += 1
            pod += field(3, container)
        out += field(1, pod)
    with open(path, "wb") as f:
        f.write(out)
    rows.sort(key=lambda r: (r[0].encode(), r[1].encode()))
    rows.insert(0, ["RESOURCE", "DEVICE", "HEALTH", "NUMA", "NAMESPACE", "POD", "CONTAINER"])
    width = [max(len(r[i]) for r in rows) for i in range(7)]
    lines = ["".join(r[i].ljust(width[i] + 2) for i in range(6)) + r[6] for r in rows]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
