package gateway

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// outcome is the label of idemgate_requests_total.
type outcome int

// The outcomes (docs/gateway.md lists them): the first eleven are the documented
// answers of an idempotent route; the rest are the other answers it can
// give (503 fail-closed, replay-unavailable, suspected-duplicate, a
// malformed request, an alias of a route refused as ambiguous, a tenant
// header from a client that may not send one).
const (
	outFirst outcome = iota
	outReplayed
	outInProgress
	outKeyReuse
	outMissingKey
	outInvalidKey
	outMissingToken
	outTokenUsed
	outUpstreamError
	outOutcomeUnknown
	outPassthrough
	outUnavailable
	outReplayUnavailable
	outSuspected
	outBadRequest
	outAmbiguous
	outUntrustedTenant
	outUnauthorized
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"first", "replayed", "in_progress", "key_reuse", "missing_key",
	"invalid_key", "missing_token", "token_used", "upstream_error", "outcome_unknown", "passthrough",
	"unavailable", "replay_unavailable", "suspected_duplicate", "bad_request", "ambiguous_path", "untrusted_tenant",
	"unauthorized"}

// metrics are the gateway listener's collectors.
type metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	upstream  *prometheus.HistogramVec
	suspected *prometheus.CounterVec
	waits     *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemgate_requests_total", Help: "Gateway requests by route and outcome.",
		}, []string{"route", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "idemgate_request_duration_seconds", Help: "Gateway request latency by route and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
		}, []string{"route", "outcome"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "idemgate_upstream_duration_seconds", Help: "Upstream call latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}, []string{"route"}),
		suspected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemgate_suspected_duplicates_total", Help: "Requests that looked like a duplicate under a new key, by route.",
		}, []string{"route"}),
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemgate_in_flight_waits_total", Help: "Duplicates that waited for the first request to finish (on_in_flight: wait), by route.",
		}, []string{"route"}),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.upstream, m.suspected, m.waits} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// routeMetrics are one route's series, resolved once so the hot path does
// no label lookups.
type routeMetrics struct {
	count     [numOutcomes]prometheus.Counter
	latency   [numOutcomes]prometheus.Observer
	upstream  prometheus.Observer
	suspected prometheus.Counter
	waits     prometheus.Counter
}

func (m *metrics) forRoute(name string) *routeMetrics {
	rm := &routeMetrics{upstream: m.upstream.WithLabelValues(name), suspected: m.suspected.WithLabelValues(name),
		waits: m.waits.WithLabelValues(name)}
	for o := outcome(0); o < numOutcomes; o++ {
		rm.count[o] = m.requests.WithLabelValues(name, outcomeNames[o])
		rm.latency[o] = m.duration.WithLabelValues(name, outcomeNames[o])
	}
	return rm
}

func (rm *routeMetrics) done(o outcome, start time.Time) {
	rm.count[o].Inc()
	rm.latency[o].Observe(time.Since(start).Seconds())
}
