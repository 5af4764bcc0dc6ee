// Command kube-controller-manager is a thin wrapper around the upstream
// k8s.io/kubernetes/cmd/kube-controller-manager entry point (cmd/kube-controller-manager/controller-manager.go),
// built with the other node binaries in one `go build`; see tools/k8s/README.md. The real-node stack needs it to
// lift the node's not-ready taint, finish namespace deletion and create ServiceAccounts.
package main

import (
	"os"
	_ "time/tzdata" // for CronJob time zone support

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go prometheus plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric registration
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	command := app.NewControllerManagerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
