package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/bench"
)

// TestBenchScaleSmall runs the scale scenario end to end at a small size:
// three real idemgate processes, restored from a bulk-loaded backup, every
// phase measured, no write failing, and the figures in the JSON file say
// so: a follower rebuilt by snapshot install holds a data file, the keys
// due at once expired.
func TestBenchScaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes and loads them for seconds")
	}
	var r bench.ScaleResult
	stdout := runBenchJSON(t, &r, "--scenario", "scale", "--keys", "3000", "--due-keys", "3000",
		"--clients", "8", "--duration", "1s", "--etcd", "off")
	switch {
	case r.Keys != 3000 || r.DueKeys != 3000:
		t.Errorf("keys %d, due keys %d; want 3000 each", r.Keys, r.DueKeys)
	case r.FSMBytes <= 0 || r.LiveBytes <= 0 || r.BackupBytes <= 0 || r.SnapshotBytes <= 0:
		t.Errorf("sizes: fsm.db %d, live %d, backup %d, snapshot %d: want all measured", r.FSMBytes, r.LiveBytes, r.BackupBytes, r.SnapshotBytes)
	case r.Baseline.Requests == 0 || r.Baseline.Errors != 0 || r.BeforeExpiry.Errors != 0:
		t.Errorf("writes %+v, before expiry %+v: want requests and no errors", r.Baseline, r.BeforeExpiry)
	case !r.InstallBySnapshot: // restored nodes hold no log before the backup's index
		t.Errorf("the follower was rebuilt without a snapshot install")
	case r.InstallSeconds <= 0 || r.InstallFSMBytes <= 0 || r.InstallRSS <= 0:
		t.Errorf("install: %.2f s, fsm.db %d, RSS %d: want all measured", r.InstallSeconds, r.InstallFSMBytes, r.InstallRSS)
	case r.ColdRestart <= 0 || len(r.DataDirBytes) != 3 || len(r.FinalFSMBytes) != 3:
		t.Errorf("cold restart %.2f s, data dirs %v, fsm.db %v", r.ColdRestart, r.DataDirBytes, r.FinalFSMBytes)
	}
	for _, want := range []string{"follower rebuilt", "cold restart", "expiry", "snapshot (leader)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
}

// runBenchJSON runs `idemgate bench ARGS --json FILE` (killed after five
// minutes, whatever happens), decodes FILE into res, and returns the
// report it printed.
func runBenchJSON(t *testing.T, res any, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bench.json")
	cmd := exec.Command(idemgateBinary(t), append(append([]string{"bench"}, args...), "--json", out)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(5*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("idemgate bench %v: %v\n%s", args, err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(b, res)
	}
	if err != nil {
		t.Fatalf("the JSON report: %v", err)
	}
	return stdout.String()
}
