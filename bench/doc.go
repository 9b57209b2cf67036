// Package bench is the code behind `idemgate demo` and `idemgate bench`:
// the demo's payment upstream and its replay of the incident, the load
// scenarios, latency histograms and the baselines they are compared with.
//
// It is a client: it speaks HTTP (and Redis's and etcd's protocols to the
// baselines) and never imports the gateway or the store. Package main starts
// the clusters it drives. Every load it sends goes to loopback addresses and
// stops by itself, bounded in count and time.
package bench
