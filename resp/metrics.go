package resp

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the listener's collectors, per command (its lowercase name,
// "unknown" for what is not one: the label set stays bounded).
type metrics struct {
	commands *prometheus.CounterVec
	duration *prometheus.HistogramVec
	conns    prometheus.Gauge
	refused  prometheus.Counter
	// budgetClosed counts connections closed for the client buffer
	// budget (budget.go); buffered is what the budget holds.
	budgetClosed prometheus.Counter
	buffered     prometheus.GaugeFunc
}

func newMetrics() *metrics {
	m := &metrics{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemgate_resp_commands_total",
			Help: "Redis-protocol commands answered, by command and result (ok, error).",
		}, []string{"cmd", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "idemgate_resp_command_duration_seconds",
			Help:    "Time from reading a Redis-protocol command to having its reply, by command.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12),
		}, []string{"cmd"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "idemgate_resp_connections", Help: "Open Redis-protocol connections.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "idemgate_resp_connections_refused_total",
			Help: "Redis-protocol connections refused: over the per-address limit.",
		}),
		budgetClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "idemgate_resp_budget_closed_total",
			Help: "Redis-protocol connections closed because the listener's client buffer budget (limits.max_client_buffer) could not hold what they sent or asked for.",
		}),
	}
	m.initSeries()
	return m
}

// initSeries makes every command's series exist at 0 before its first
// use, as client_golang advises for known label values: an alert on
// increase() of a series that does not exist yet never sees its first
// event. The names are those observe is given: the table's, the
// unsupported commands', "unknown" and "protocol".
func (m *metrics) initSeries() {
	for name := range commands {
		m.commands.WithLabelValues(name, "ok")
		m.commands.WithLabelValues(name, "error")
	}
	// These are refused, never run: only "error".
	for _, name := range append([]string{"unknown", "protocol"}, unsupported...) {
		m.commands.WithLabelValues(name, "error")
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.commands, m.duration, m.conns, m.refused, m.budgetClosed, m.buffered} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// observe counts one answered command.
func (m *metrics) observe(cmd string, failed bool, since time.Time) {
	result := "ok"
	if failed {
		result = "error"
	}
	m.commands.WithLabelValues(cmd, result).Inc()
	m.duration.WithLabelValues(cmd).Observe(time.Since(since).Seconds())
}
