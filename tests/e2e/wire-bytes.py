#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""wire-bytes.py requests DIR N
   wire-bytes.py pod-list FILE PODS CONTAINERS DEVICES [ID_PAD]
   wire-bytes.py pod-list-smallest FILE

Protobuf messages as they are on the wire, written for `kdpctl raw @FILE` and
`kdpctl kubelet --pod-list FILE`.

requests: three requests of N tiny elements each, into DIR:
  containers.bin  N empty container_requests (field 1 of AllocateRequest and of
                  PreferredAllocationRequest)
  ids.bin         one container_requests of N - 3 empty IDs (field 1 of either
                  container message)
  unknown.bin     N times field 15 (varint 0), unknown to both

pod-list: a ListPodResourcesResponse into FILE: PODS pods pod-<p> in
namespace default, each with CONTAINERS containers c<c>, each holding DEVICES
devices of example.com/widget, one ContainerDevices each as the kubelet
splits them: IDs widget-<k> (k counting on over all containers, ID_PAD 'x's
appended), device k on NUMA node k % 2. Prints on stdout the table `kdpctl
who` makes of it when no device is allocatable and no plugin socket is given.

pod-list-smallest: a ListPodResourcesResponse at kdp's bounds of one node made
of the smallest elements, into FILE: 2048 pods p of 4 containers c, each with
8 CPU IDs and 8 devices of resource a/b, all of ID d, on NUMA nodes 0 and 1.
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


def requests(d, n):
    for name, data in (("containers", field(1, b"") * n), ("ids", field(1, field(1, b"") * (n - 3))),
                       ("unknown", (varint(15 << 3) + varint(0)) * n)):
        with open("%s/%s.bin" % (d, name), "wb") as f:
            f.write(data)


def pod_list(path, pods, containers, devices, pad):
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


def pod_list_smallest(path):
    topology = field(1, varint(1 << 3) + varint(0)) + field(1, varint(1 << 3) + varint(1))
    devices = field(2, field(1, b"a/b") + field(2, b"d") + field(3, topology))
    container = field(3, field(1, b"c") + devices * 8 + field(3, varint(1) * 8))
    with open(path, "wb") as f:
        f.write(field(1, field(1, b"p") + container * 4) * 2048)


def main():
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "requests":
        requests(args[1], int(args[2]))
    elif len(args) in (5, 6) and args[0] == "pod-list":
        pod_list(args[1], int(args[2]), int(args[3]), int(args[4]), "x" * (int(args[5]) if len(args) == 6 else 0))
    elif len(args) == 2 and args[0] == "pod-list-smallest":
        pod_list_smallest(args[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
