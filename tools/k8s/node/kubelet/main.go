// Command kubelet is a thin wrapper around the upstream k8s.io/kubernetes/cmd/kubelet entry point, built from the
// published Go modules together with kube-apiserver, kube-scheduler and kube-controller-manager in one `go build`
// (tools/k8s/build.sh), so the packages they share compile once. It mirrors cmd/kubelet/kubelet.go. It is used only
// by berth's real-node tests (tools/k8s/stack.sh); see tools/k8s/README.md.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client metric registration
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric registration
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	command := app.NewKubeletCommand(context.Background())
	code := cli.Run(command)
	os.Exit(code)
}
