package bench

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Report is one bench run as JSON, a document a CI job can keep and
// compare: what ran, on what, and what it measured.
type Report struct {
	Date    string            `json:"date"` // RFC 3339, UTC, when the run ended
	Machine Machine           `json:"machine"`
	Flags   map[string]string `json:"flags,omitempty"` // every flag of the run, defaults included
	Results []Stats           `json:"results"`
	// Sweep is the --plot measurement: SweepScenario on every system at
	// each of SweepClients clients.
	SweepScenario string  `json:"sweep_scenario,omitempty"`
	Sweep         []Stats `json:"sweep,omitempty"`
	// Budgets is the --breakdown measurement.
	Budgets []Budget `json:"budgets,omitempty"`
}

// Machine is what the figures were measured on.
type Machine struct {
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	GoVersion  string `json:"go_version"`
	// Revision is the git commit of the build ("" when unknown); Modified
	// says its tree had uncommitted changes.
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// ThisMachine describes the running process: the build's VCS stamp, or,
// for `go run` (which stamps none), the git checkout of the working
// directory when there is one.
func ThisMachine() Machine {
	m := Machine{GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), GOOS: runtime.GOOS,
		GOARCH: runtime.GOARCH, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				m.Revision = s.Value
			case "vcs.modified":
				m.Modified = s.Value == "true"
			}
		}
	}
	if m.Revision == "" {
		if rev, err := git("rev-parse", "HEAD"); err == nil {
			changes, err := git("status", "--porcelain", "--untracked-files=no")
			m.Revision, m.Modified = rev, err == nil && changes != ""
		}
	}
	return m
}

func git(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", args...).Output()
	return strings.TrimSpace(string(out)), err
}

// WriteJSON writes r as one indented JSON document.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
