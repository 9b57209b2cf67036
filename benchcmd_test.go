package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/bench"
)

// TestBenchShort runs every scenario briefly against a cluster the bench
// starts, without the external baselines: each exactly-once check passes.
func TestBenchShort(t *testing.T) {
	var out, progress bytes.Buffer
	f := benchFlags{nodes: 3, clients: 8, duration: 500 * time.Millisecond, requests: 300, redis: "off", etcd: "off"}
	results, err := runBench(f, bench.Scenarios, &out, &progress)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range results {
		names[r.Name] = true
		if r.Skipped != "" {
			if strings.Contains(r.Name, "baseline") {
				continue
			}
			t.Fatalf("%s skipped: %s", r.Name, r.Skipped)
		}
		if r.Errors != 0 || r.Ops == 0 {
			t.Fatalf("%s: %d ops, %d errors (%s)", r.Name, r.Ops, r.Errors, r.FirstError)
		}
		if r.Check != "" && !r.CheckOK {
			t.Fatalf("%s: check failed: %s", r.Name, r.Check)
		}
	}
	for _, want := range []string{"passthrough (baseline)", "unique (first requests)", "replay (completed keys)",
		"hotkey (one key)", "tokens (consume)", "kv SETNX", "kv GETDEL"} {
		if !names[want] {
			t.Fatalf("no result for %s", want)
		}
	}
	var table bytes.Buffer
	bench.WriteTable(&table, results)
	if !strings.Contains(table.String(), "ok: 1 upstream executions of the hot key") {
		t.Fatalf("table:\n%s", table.String())
	}
}

// TestBenchTLS runs first requests and SETNX on a cluster with TLS
// everywhere (mutual on Raft): the checks pass and the results are marked.
func TestBenchTLS(t *testing.T) {
	var out, progress bytes.Buffer
	f := benchFlags{nodes: 3, clients: 8, duration: 500 * time.Millisecond, requests: 200, redis: "off", etcd: "off", tls: "on"}
	results, err := runBench(f, []string{"unique", "kv"}, &out, &progress)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Skipped != "" {
			continue
		}
		if !strings.HasSuffix(r.Name, " [tls]") || r.Errors != 0 || r.Ops == 0 || (r.Check != "" && !r.CheckOK) {
			t.Fatalf("%s: %d ops, %d errors (%s), check %q", r.Name, r.Ops, r.Errors, r.FirstError, r.Check)
		}
	}
	if !strings.Contains(progress.String(), "mutual TLS on Raft") {
		t.Fatalf("progress does not say the cluster is secured:\n%s", progress.String())
	}
}

func TestBenchFlags(t *testing.T) {
	for _, args := range [][]string{{"--scenario", "nope"}, {"--clients", "0"}, {"--target", "http://127.0.0.1:1"},
		{"--duration", "-1s"}, {"--target", "http://10.0.0.1:80", "--api", "http://10.0.0.1:81"},
		{"--tls", "maybe"}, {"--tls", "on", "--target", "http://127.0.0.1:1", "--api", "http://127.0.0.1:2"}} {
		var stdout, stderr bytes.Buffer
		code := benchCmd(args, &stdout, &stderr)
		if code == 0 || strings.Count(stderr.String(), "\n") != 1 {
			t.Fatalf("bench %v = exit %d, stderr %q", args, code, stderr.String())
		}
	}
}
