// Command etcd is a thin wrapper that runs etcd's own server entry point
// (go.etcd.io/etcd/server/v3/etcdmain), built from the published Go module.
// It is used only by berth's tests; see tools/k8s/README.md.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
