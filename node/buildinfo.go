package node

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/version"
)

// buildInfo is idemgate_build_info{version,commit,go_version} 1: which
// build each node runs, for a dashboard or a query during a rolling
// upgrade (count by (version) (idemgate_build_info)).
func buildInfo() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "idemgate_build_info",
		Help: "Always 1; its labels name the build this node runs (idemgate version).",
		ConstLabels: prometheus.Labels{"version": version.String(), "commit": version.Revision(),
			"go_version": runtime.Version()},
	})
	g.Set(1)
	return g
}
