// Command kube-scheduler is a thin wrapper around the upstream k8s.io/kubernetes/cmd/kube-scheduler entry point
// (cmd/kube-scheduler/scheduler.go), built with the other node binaries in one `go build`; see tools/k8s/README.md.
// berth creates bare pods without spec.nodeName, so the real-node stack needs a real scheduler to bind them.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go prometheus plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric registration
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	command := app.NewSchedulerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
