#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# deploy/schema and deploy/log-messages: SCRIPT (validate.js by default) of tests/deploy under
# node. Skipped (77) only when node is not installed; missing npm packages or kubectl are a
# failure (scripts/install-deps installs them).
set -u
src=${1:?usage: test-schema.sh SRCDIR [SCRIPT]}
node=$(command -v node || command -v nodejs) || { echo "SKIP: node is not installed"; exit 77; }
exec "$node" "$src/tests/deploy/${2:-validate.js}" "$src"
