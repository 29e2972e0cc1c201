#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/ from the test
fixtures and from messages built here (protobuf and rtnetlink encoded by hand). Run it again
after changing it; the seeds are committed so that the suite needs no Python."""
import glob
import os
import re
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(SRC, "tests", "fixtures")
SEP = b"\x1e"


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- protobuf ----
def varint(v):
    out = b""
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field_bytes(num, data):
    data = data.encode() if isinstance(data, str) else data
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_int(num, v):
    return varint(num << 3) + varint(v)


def allocate(*containers):
    return b"".join(field_bytes(1, b"".join(field_bytes(1, i) for i in ids)) for ids in containers)


def preferred(*containers):
    out = b""
    for avail, must, size in containers:
        c = b"".join(field_bytes(1, i) for i in avail) + b"".join(field_bytes(2, i) for i in must)
        out += field_bytes(1, c + field_int(3, size))
    return out


W = [f"widget-{i}" for i in range(8)]
put("rpc-allocate", "one", allocate(["widget-0"]))
put("rpc-allocate", "two-containers", allocate(["widget-1", "widget-2"], ["widget-5"]))
put("rpc-allocate", "unhealthy", allocate(["widget-3"]))
put("rpc-allocate", "unknown", allocate(["widget-9"]))
put("rpc-allocate", "empty", b"")
put("rpc-preferred", "numa", preferred((W, [], 2)))
put("rpc-preferred", "must", preferred((W, ["widget-4"], 3), (W[:4], ["widget-1"], 1)))
put("rpc-preferred", "too-big", preferred((W[:2], ["widget-0", "widget-1", "widget-7"], 2)))
put("rpc-preferred", "negative", preferred((W, [], -1)))
put("rpc-prestart", "two", b"".join(field_bytes(1, i) for i in ["widget-0", "widget-6"]))
put("rpc-prestart", "unknown", field_bytes(1, "gadget-0"))

pod = field_bytes(1, field_bytes(1, "train-0") + field_bytes(2, "default") + field_bytes(3,
      field_bytes(1, "main") + field_bytes(2, field_bytes(1, "example.com/widget") + field_bytes(2, "widget-0")
                                           + field_bytes(2, "widget-1")) + field_int(3, 4)))
put("pod-resources", "one-pod", pod)
put("pod-resources", "two-pods", pod + field_bytes(1, field_bytes(1, "b") + field_bytes(3,
    field_bytes(2, field_bytes(1, "nvidia.com/gpu") + field_bytes(2, "GPU-1")))))

# ---- config files ----
put("config-yaml", "example", "# kdpd\nbackends: [example]\nexample:\n  devices: 4\n  unhealthy: widget-1\n")
put("config-yaml", "sections", "log:\n  v: 2\ngpu:\n  allow: [\"10de:*\"]\n  sharing:\n    nvidia.com/gpu: 4\n")
put("config-yaml", "anchors", "a: &x\n  devices: 2\nexample: *x\n---\nb: 1\n")
put("config-json", "example", '{"example": {"devices": 4, "resource": "example.com/widget"}}\n')
put("config-json", "nested", '{"gpu": {"allow": ["10de:2330"], "replicas": {"nvidia.com/gpu": 2}}, "x": null}\n')

# ---- GPU parsers ----
for path in sorted(glob.glob(os.path.join(FIX, "nodes", "*.files", "proc", "driver", "nvidia", "gpus", "*",
                                          "information")))[:2]:
    text = open(path, "rb").read()
    bdf = os.path.basename(os.path.dirname(path)).encode()
    put("nvidia-information", os.path.basename(os.path.dirname(path)).replace(":", "_"),
        text.replace(bdf, b"0000:3d:00.0"))
props = []
for path in glob.glob(os.path.join(FIX, "nodes", "*.umockdev")):
    for m in re.finditer(r"^A: topology/nodes/\d+/properties=(.*)$", open(path).read(), re.M):
        props.append(m.group(1).replace("\\n", "\n"))
for i, p in enumerate(sorted(set(props))[:3]):
    put("kfd-properties", f"node-{i}", p)
xid_src = open(os.path.join(SRC, "tests", "unit", "test-gpu-xid.c")).read()
for i, m in enumerate(re.finditer(r'\{ "(\d+,\d+,\d+,[-c];NVRM: Xid[^"]*)"', xid_src)):
    if i < 6:
        put("xid-record", f"xid-{i}", m.group(1).encode().decode("unicode_escape") + "\n")
put("xid-record", "mig", "3,9001,5000000,-;NVRM: Xid (PCI:0000:18:00): 94, pid=7, GPU-I:02 GPU-CI:01, Contained\n")
put("xid-set", "defaults", "13,31,43,45,68,109")
put("xid-set", "spaces", " 48, 63 ,64,")

# ---- PCI and AER (files separated by 0x1e, in the targets' order) ----
pci_files = ["0x10de", "0x2330", "0x030200", "0x10de", "0x16c1", "", "", "1", "109",
             "0x00000000f2000000 0x00000000f2ffffff 0x0000000000040200\n", "", "0xa1"]
put("pci", "gpu", SEP.join(f.encode() + (b"\n" if f and not f.endswith("\n") else b"") for f in pci_files))
vf = ["0x8086", "0x1889", "0x020000", "0x8086", "0x0000", "", "", "-1", "0", "", "", "0x02"]
put("pci", "vf", SEP.join(f.encode() + b"\n" for f in vf))
pf = ["0x8086", "0x159b", "0x020000", "0x8086", "0x0003", "64", "8", "0", "40", "", "", "0x02"]
put("pci", "pf", SEP.join(f.encode() + b"\n" for f in pf))
fatal = "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\n" \
        "ECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\n" \
        "PoisonTLPBlocked 0\nTOTAL_ERR_FATAL {}\n"
nonfatal = fatal.replace("TOTAL_ERR_FATAL", "TOTAL_ERR_NONFATAL")
put("aer", "rise", SEP.join(s.encode() for s in [fatal.format(0), nonfatal.format(2), fatal.format(1),
                                                 nonfatal.format(5), "1\n"]))
put("aer", "reset", SEP.join(s.encode() for s in [fatal.format(7), nonfatal.format(0), fatal.format(0),
                                                  nonfatal.format(0), "0\n"]))

# ---- SR-IOV ----
for path in sorted(glob.glob(os.path.join(FIX, "sriov", "configs", "*.json"))):
    put("sriov-config", os.path.basename(path), open(path, "rb").read())

RTM_NEWLINK, RTM_DELLINK, RTM_NEWROUTE, RTM_DELROUTE = 16, 17, 24, 25
NLMSG_DONE, NLMSG_ERROR = 3, 2


def attr(t, data):
    n = 4 + len(data)
    return struct.pack("=HH", n, t) + data + b"\0" * ((4 - n % 4) % 4)


def nlmsg(t, payload, flags=0, seq=0, pid=0):
    return struct.pack("=IHHII", 16 + len(payload), t, flags, seq, pid) + payload


def link(t, index, name, flags, oper, carrier):
    ifi = struct.pack("=BxHiII", 0, 1, index, flags, 0xFFFFFFFF)
    return nlmsg(t, ifi + attr(3, name.encode() + b"\0") + attr(16, bytes([oper])) + attr(33, bytes([carrier])))


def route(t, family, oif, multipath=()):
    rtm = struct.pack("=BBBBBBBBI", family, 0, 0, 0, 254, 3, 0, 1, 0)
    body = attr(15, struct.pack("=I", 254)) + (attr(4, struct.pack("=i", oif)) if oif else b"")
    if multipath:
        body += attr(9, b"".join(struct.pack("=HBBi", 8, 0, 0, o) for o in multipath))
    return nlmsg(t, rtm + body)


IFF_UP, IFF_LOWER_UP = 0x1, 0x10000
put("sriov-link", "up", link(RTM_NEWLINK, 4, "ens1f0", IFF_UP | IFF_LOWER_UP, 6, 1))
put("sriov-link", "down-then-gone", link(RTM_NEWLINK, 4, "ens1f0", IFF_UP, 2, 0)
    + link(RTM_NEWLINK, 9, "ens1f0v1", IFF_UP | IFF_LOWER_UP, 6, 1) + link(RTM_DELLINK, 9, "ens1f0v1", 0, 0, 0))
put("sriov-link", "routes", link(RTM_NEWLINK, 4, "ens1f0", IFF_UP | IFF_LOWER_UP, 6, 1)
    + route(RTM_NEWROUTE, 2, 4) + route(RTM_NEWROUTE, 10, 0, (4, 5)) + route(RTM_DELROUTE, 2, 4))
put("sriov-link", "control", nlmsg(NLMSG_ERROR, struct.pack("=i", -1) + nlmsg(18, b""))
    + nlmsg(NLMSG_DONE, struct.pack("=i", 0), flags=2))

# ---- FPGA GBS ----
meta = ('{"version": 1, "platform-name": "pac_s10_dc", "afu-image": {"magic-no": 488605312, '
        '"interface-uuid": "9346116d-a52d-5ca8-b06a-a9a389ef7c8d", "power": 0, "accelerator-clusters": '
        '[{"total-contexts": 1, "name": "nlb", "accelerator-type-uuid": "d8424dc4-a4a3-c413-f89e-433683f9040b"}]}}')


def gbs(m):
    return struct.pack("<QQI", 0x414750466E6F6558, 0x31303076534247B7, len(m)) + m.encode() + b"RAWBITS"


put("fpga-gbs", "nlb", gbs(meta))
put("fpga-gbs", "no-clusters", gbs('{"version": 1, "afu-image": {"interface-uuid": "x"}}'))
