package cmd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/idemgate/idemgate/backup"
	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/node"
)

// The offline operator verbs: they read files, never a running node.

// checkConfigCmd is `idemgate check-config FILE`: the checks serve makes
// before it starts, for every node of the file, without starting one.
func checkConfigCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate check-config FILE"
	fs := flag.NewFlagSet("check-config", flag.ContinueOnError)
	path, code, ok := commandLine(fs, "check-config", usage, "FILE", args, stdout, stderr)
	if !ok {
		return code
	}
	file, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate check-config: %s\n", config.Detail(err))
		return 2
	}
	var ids []string
	for _, n := range file.Nodes {
		ids = append(ids, n.ID)
		if err := file.CheckExposure(n); err != nil {
			fmt.Fprintf(stderr, "idemgate check-config: %s\n", config.Detail(err))
			return 2
		}
		// The node's store settings, as serve makes them (what depends on
		// a default or another section is checked there).
		s := node.Settings{File: file, Node: n, DataDir: file.DataDirFor(n.ID)}
		if _, err := node.StoreConfig(s); err != nil {
			fmt.Fprintf(stderr, "idemgate check-config: %s\n", config.Detail(err))
			return 2
		}
		// The node's certificate and key, where this machine has them
		// (a workstation holds every node's; a node only its own).
		if file.TLS != nil {
			if _, err := os.Stat(file.Path(file.TLS.Cert, n.ID)); err != nil {
				continue
			}
		}
		if err := s.LoadTLS(); err != nil {
			fmt.Fprintf(stderr, "idemgate check-config: node %s: %s\n", n.ID, config.Detail(err))
			return 2
		}
	}
	if _, err := node.APIAccess(file); err != nil {
		fmt.Fprintf(stderr, "idemgate check-config: %s\n", config.Detail(err))
		return 2
	}
	// The key and secret files of the jwt section, read as serve reads
	// them (its JWKS URL is not fetched).
	if _, err := node.JWTVerifier(file, nil); err != nil {
		fmt.Fprintf(stderr, "idemgate check-config: %s\n", config.Detail(err))
		return 2
	}
	security := "plaintext (loopback only)"
	if file.TLS != nil {
		security = "mutual TLS"
	}
	fmt.Fprintf(stdout, "%s: ok: nodes %s, %d routes, upstream %s, Raft %s, %d API tokens\n",
		path, strings.Join(ids, ", "), len(file.Routes), dash(file.Upstream), security, len(file.API.Tokens))
	return 0
}

// compactCmd is `idemgate compact`: a stopped node's fsm.db rewritten to
// its live data.
func compactCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate compact --config FILE --node ID [--data-dir DIR]"
	var n nodeFlags
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	n.register(fs)
	if _, code, ok := commandLine(fs, "compact", usage, "", args, stdout, stderr); !ok {
		return code
	}
	cfg, err := n.store()
	if err != nil {
		fmt.Fprintf(stderr, "idemgate compact: %v\n", err)
		return 2
	}
	start := time.Now()
	info, err := backup.Compact(cfg.Offline())
	if err != nil {
		fmt.Fprintf(stderr, "idemgate compact: %s\n", offlineError(err))
		return 1
	}
	fmt.Fprintf(stdout, "compacted %s/fsm.db: %s -> %s (%.0f%% of it) in %s\n", cfg.DataDir, bytesWord(info.Before), bytesWord(info.After),
		100*float64(info.After)/float64(max(info.Before, 1)), time.Since(start).Round(time.Millisecond))
	return 0
}

// snapshotStatusCmd is `idemgate snapshot status FILE`: what a backup holds,
// checked to its end, as etcdutl snapshot status.
func snapshotStatusCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate snapshot status FILE [--json]"
	fs := flag.NewFlagSet("snapshot status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	path, code, ok := commandLine(fs, "snapshot status", usage, "FILE", args, stdout, stderr)
	if !ok {
		return code
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate snapshot status: %v\n", err)
		return 1
	}
	defer f.Close()
	sum := sha256.New()
	meta, size, err := backup.Verify(io.TeeReader(f, sum))
	if err != nil {
		fmt.Fprintf(stderr, "idemgate snapshot status: %s: %s\n", path, offlineError(err))
		return 1
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	if *asJSON {
		json.NewEncoder(stdout).Encode(struct {
			backup.Meta
			Bytes  int64  `json:"bytes"`
			SHA256 string `json:"sha256"`
		}{meta, size, digest})
		return 0
	}
	fmt.Fprintf(stdout, "%s: a whole, checked backup\n  index %d, term %d, taken by %s at %s\n  members %s\n  %s, sha256 %s\n",
		path, meta.Index, meta.Term, meta.Node, meta.CreatedAt.Format(time.RFC3339), serverList(meta.Servers), bytesWord(size), digest)
	return 0
}

// bytesWord is a size for people: 181342 bytes, 12.4 MiB.
func bytesWord(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
