package main

// The deploy files (deploy/alerts.yaml, deploy/systemd/idemgate.service)
// kept true: every metric an alert names is one a node registers, and the
// unit is one systemd accepts.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/idemgate/idemgate/node"
)

// alertRules is the part of a Prometheus rule file the checks read.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

var (
	metricName      = regexp.MustCompile(`\bidemgate_[a-z0-9_]+`)
	promDuration    = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	descName        = regexp.MustCompile(`fqName: "([^"]+)"`)
	histogramSuffix = regexp.MustCompile(`_(bucket|sum|count)$`)
)

// alertMetrics reads the rule file: every rule complete, and the idemgate_
// metric names the expressions use.
func alertMetrics(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var names []string
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			switch {
			case r.Alert == "" || strings.TrimSpace(r.Expr) == "":
				t.Errorf("%s: group %s: a rule without alert or expr: %+v", path, g.Name, r)
			case r.For != "" && !promDuration.MatchString(r.For):
				t.Errorf("%s: %s: for %q is not a Prometheus duration", path, r.Alert, r.For)
			case r.Labels["severity"] == "" || r.Annotations["summary"] == "":
				t.Errorf("%s: %s: want labels.severity and annotations.summary", path, r.Alert)
			}
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				if !slices.Contains(names, m) {
					names = append(names, m)
				}
			}
		}
	}
	if n == 0 || len(names) == 0 {
		t.Fatalf("%s: %d rules naming %d idemgate metrics", path, n, len(names))
	}
	return names
}

// TestAlertsNameRegisteredMetrics starts a 3-node cluster (the node
// package's wiring, real Raft on loopback) and checks that every metric
// deploy/alerts.yaml names is registered on a node's registry: described
// by its collectors, so labelled counters that have no series yet count.
func TestAlertsNameRegisteredMetrics(t *testing.T) {
	names := alertMetrics(t, filepath.Join("deploy", "alerts.yaml"))
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	nodes, _, err := node.StartLocal(t.TempDir(), 3, "127.0.0.1:1", false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, n := range nodes {
			n.Stop(time.Second)
		}
	}()
	registered := map[string]bool{}
	ch := make(chan *prometheus.Desc)
	go func() {
		nodes[0].Reg.Describe(ch)
		close(ch)
	}()
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			registered[m[1]] = true
		}
	}
	if len(registered) < 10 {
		t.Fatalf("a node registers %d metrics: %v", len(registered), registered)
	}
	for _, name := range names {
		if registered[name] || registered[histogramSuffix.ReplaceAllString(name, "")] {
			continue
		}
		t.Errorf("deploy/alerts.yaml uses %s, which a node does not register", name)
	}
}

// TestSystemdUnitVerifies runs systemd-analyze verify on the unit, with
// ExecStart pointed at a binary that exists (systemd checks that it does).
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	unit, err := os.ReadFile(filepath.Join("deploy", "systemd", "idemgate.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Restart=on-failure", "User=idemgate", "LimitNOFILE=", "ExecReload=/bin/kill -HUP $MAINPID",
		"ProtectSystem=strict", "ReadWritePaths=/var/lib/idemgate", "RestartPreventExitStatus=2"} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("deploy/systemd/idemgate.service: no %q", want)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "idemgate")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "idemgate.service")
	if err := os.WriteFile(path, bytes.ReplaceAll(unit, []byte("/usr/local/bin/idemgate"), []byte(bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	// Lines about the host (no systemd running, a user that does not
	// exist here) are not the unit's; anything naming the file is.
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, path) || strings.Contains(l, "idemgate.service:") {
			t.Errorf("systemd-analyze verify: %s", l)
		}
	}
	if err != nil && !t.Failed() {
		t.Logf("systemd-analyze verify exited %v (not about the unit):\n%s", err, out)
	}
}
