package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestMain runs the tests from the module root, where the repository's
// files have the paths README and docs/ give them, and removes the
// binaries built for the run afterwards.
func TestMain(m *testing.M) {
	root, err := moduleRoot()
	if err == nil {
		err = os.Chdir(root)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}

// moduleRoot is the nearest directory at or above the working directory
// (go test's: this package's) that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = parent
	}
}

// builds are the idemgate binaries built in this run, one per build tag
// set: every test of a run drives the same binary.
var builds struct {
	sync.Mutex
	dir  string
	bins map[string]string
	errs map[string]error
}

// idemgateBinary builds the idemgate command of the module root (with
// tags, e.g. "chaos" for the injectable clock, if given) once per test
// run and returns its path.
func idemgateBinary(t *testing.T, tags ...string) string {
	t.Helper()
	key := fmt.Sprint(tags)
	builds.Lock()
	defer builds.Unlock()
	if builds.bins == nil {
		builds.bins, builds.errs = map[string]string{}, map[string]error{}
	}
	if _, done := builds.bins[key]; !done {
		builds.bins[key], builds.errs[key] = build(tags)
	}
	if err := builds.errs[key]; err != nil {
		t.Fatal(err)
	}
	return builds.bins[key]
}

func build(tags []string) (string, error) {
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "idemgate-e2e-bin")
		if err != nil {
			return "", err
		}
		builds.dir = dir
	}
	bin := filepath.Join(builds.dir, fmt.Sprintf("idemgate-%d", len(builds.bins)))
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	// "." is the module root: TestMain changed to it.
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %v: %v\n%s", args, err, out)
	}
	return bin, nil
}
