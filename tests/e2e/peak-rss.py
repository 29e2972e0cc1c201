#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""peak-rss.py PREFIX COMMAND...

Runs COMMAND with its stdout in PREFIX.stdout and its stderr in PREFIX.stderr,
writes its peak RSS in kB (getrusage of the child: the kernel's own count, no
polling) to PREFIX.rss, and exits with its exit code.
"""
import resource
import subprocess
import sys

if len(sys.argv) < 3:
    sys.exit(__doc__)
prefix = sys.argv[1]
with open(prefix + ".stdout", "wb") as out, open(prefix + ".stderr", "wb") as err:
    rc = subprocess.run(sys.argv[2:], stdout=out, stderr=err).returncode
with open(prefix + ".rss", "w") as f:
    f.write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)
