// Package reconcile holds a day's records (the body of GET
// /v1/records/export) against the payment provider's statement (a CSV
// file): the last line of defence the gateway cannot be for itself. What
// it let through twice, and what the provider did that it has no record
// of, show up here; so do records under different keys that look like one
// request (the same charge id, or one fingerprint close together).
//
// It runs beside the cluster, from files, and never calls a node: `idemgate
// reconcile` is its command line, and the demo's --reconcile its example.
// A run that cannot trust its input refuses it whole rather than report
// over part of it; with a metrics file, every run is recorded for
// node_exporter's textfile collector (deploy/reconcile-alerts.yaml alerts
// on it).
package reconcile
