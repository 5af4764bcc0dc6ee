// Command kube-apiserver is a thin wrapper around the upstream
// k8s.io/kubernetes/cmd/kube-apiserver entry point, built from the published
// Go modules (k8s.io/kubernetes plus its staging modules at v0.x). It mirrors
// cmd/kube-apiserver/apiserver.go. It is used only by berth's tests; see
// tools/k8s/README.md.
package main

import (
	"os"
	_ "time/tzdata" // for timeZone support in CronJob

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go prometheus plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric registration
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	command := app.NewAPIServerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
