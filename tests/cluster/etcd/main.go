// SPDX-License-Identifier: GPL-2.0-or-later

// Command etcd is etcd's own server, built from go.etcd.io/etcd/server/v3 at
// the version go.mod pins, for the test cluster's kube-apiserver.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
