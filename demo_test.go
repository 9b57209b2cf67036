package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDemoSmall replays the incident with few users, the leader killed
// partway: every user must be charged exactly once, and the run without
// idemgate must show the double charges.
func TestDemoSmall(t *testing.T) {
	var out bytes.Buffer
	ok, err := runDemo(demoFlags{users: 80, nodes: 3, concurrency: 32, without: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || !strings.Contains(out.String(), "charged exactly once") {
		t.Fatalf("demo failed:\n%s", out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "users double-charged") {
			f := strings.Fields(line)
			if f[len(f)-1] != "0" || f[len(f)-2] == "0" {
				t.Fatalf("double charges without/with idemgate: %q", line)
			}
		}
	}
}

func TestDemoFlags(t *testing.T) {
	for _, args := range [][]string{{"--users", "0"}, {"--nodes", "9"}, {"--bogus"}, {"--concurrency", "-1"}} {
		var stdout, stderr bytes.Buffer
		if code := demoCmd(args, &stdout, &stderr); code != 2 || strings.Count(stderr.String(), "\n") != 1 {
			t.Fatalf("demo %v = exit %d, stderr %q; want 2 and one line", args, code, stderr.String())
		}
	}
}
