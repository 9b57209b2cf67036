package cmd

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/idemgate/idemgate/backup"
	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/node"
	"github.com/idemgate/idemgate/raftstore"
)

const snapshotUsage = `usage:
  idemgate snapshot save FILE --api URL [--token T | --token-file F] [--ca CA.pem]
  idemgate snapshot restore FILE --config FILE --node ID [--data-dir DIR]
  idemgate snapshot status FILE [--json]
`

// snapshotCmd is `idemgate snapshot save|restore`.
func snapshotCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "idemgate snapshot: want save, restore or status\n%s", snapshotUsage)
		return 2
	}
	switch args[0] {
	case "save":
		return snapshotSaveCmd(args[1:], stdout, stderr)
	case "restore":
		return snapshotRestoreCmd(args[1:], stdout, stderr)
	case "status":
		return snapshotStatusCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, snapshotUsage)
		return 0
	}
	fmt.Fprintf(stderr, "idemgate snapshot: unknown subcommand %q: want save, restore or status\n%s", args[0], snapshotUsage)
	return 2
}

// saveFlags are the command line of `idemgate snapshot save`.
type saveFlags struct {
	file, api, token, tokenFile, ca string
}

func snapshotSaveCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate snapshot save FILE --api URL [--token T | --token-file F] [--ca CA.pem]"
	var f saveFlags
	fs := flag.NewFlagSet("snapshot save", flag.ContinueOnError)
	fs.StringVar(&f.api, "api", "", "a node's API listener: http://host:port, https://host:port, or host:port (required)")
	fs.StringVar(&f.token, "token", "", "an admin bearer token")
	fs.StringVar(&f.tokenFile, "token-file", "", "a file holding an admin bearer token (kept out of the process list)")
	fs.StringVar(&f.ca, "ca", "", "the cluster CA (PEM) to verify a TLS API listener with; implies https")
	file, code, ok := commandLine(fs, "snapshot save", usage, "FILE", args, stdout, stderr)
	if !ok {
		return code
	}
	f.file = file
	req, err := f.request()
	if err != nil {
		fmt.Fprintf(stderr, "idemgate snapshot save: %v\n", err)
		return 2
	}
	client, err := f.client()
	if err != nil {
		fmt.Fprintf(stderr, "idemgate snapshot save: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	meta, size, err := saveSnapshot(ctx, client, req.WithContext(ctx), f.file)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate snapshot save: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "saved %s: index %d, term %d, %d bytes, taken by %s at %s (cluster: %s)\n",
		f.file, meta.Index, meta.Term, size, meta.Node, meta.CreatedAt.Format(time.RFC3339), serverList(meta.Servers))
	return 0
}

// request is the GET of the snapshot, with its token; an error names the
// flag at fault.
func (f saveFlags) request() (*http.Request, error) {
	if f.api == "" {
		return nil, errors.New("--api: required (a node's API listener, e.g. http://127.0.0.1:9001)")
	}
	raw := f.api
	if !strings.Contains(raw, "://") {
		scheme := "http://"
		if f.ca != "" {
			scheme = "https://"
		}
		raw = scheme + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("--api: %q: want http://host:port, https://host:port or host:port", f.api)
	}
	if f.ca != "" && u.Scheme != "https" {
		return nil, fmt.Errorf("--ca: given with a plain http:// --api %q", f.api)
	}
	u.Path = "/v1/snapshot"
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("--api: %v", err)
	}
	token, err := readToken(f.token, f.tokenFile)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req, nil
}

// client is the HTTP client: the cluster CA when given. The backup is
// taken and spooled before the answer starts, so the header may take a
// while; the body then streams at the network's pace, without a deadline.
func (f saveFlags) client() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 5 * time.Minute
	if f.ca != "" {
		pool, err := caPool(f.ca)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr}, nil
}

// saveSnapshot fetches the snapshot into path: verified while it is written
// to path.tmp, then fsynced and renamed, so path is a whole, checked backup
// or untouched.
func saveSnapshot(ctx context.Context, client *http.Client, req *http.Request, path string) (backup.Meta, int64, error) {
	resp, err := client.Do(req)
	if err != nil {
		return backup.Meta{}, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return backup.Meta{}, 0, fmt.Errorf("GET %s: %s", req.URL, problemLine(resp))
	}
	tmp := path + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600) // it holds every stored body and token
	if err != nil {
		return backup.Meta{}, 0, err
	}
	meta, size, err := writeVerified(out, resp.Body)
	if err == nil {
		err = ctx.Err()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return meta, size, err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return meta, size, nil
}

// writeVerified copies a backup from r to out, checking it as it goes,
// and fsyncs out.
func writeVerified(out *os.File, r io.Reader) (backup.Meta, int64, error) {
	w := bufio.NewWriterSize(out, 256<<10)
	meta, size, err := backup.Verify(io.TeeReader(r, w))
	if errors.Is(err, backup.ErrInvalid) {
		err = fmt.Errorf("the answer was cut off or damaged in transit, nothing saved: %w", err)
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = out.Sync()
	}
	return meta, size, err
}

// problemLine is an error answer in one line: its status, and the problem
// document's detail when it is one.
func problemLine(resp *http.Response) string {
	var p struct{ Title, Detail string }
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(body, &p) == nil && (p.Title != "" || p.Detail != "") {
		return fmt.Sprintf("%s: %s: %s", resp.Status, p.Title, oneLine(p.Detail))
	}
	return resp.Status
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func serverList(servers []backup.Server) string {
	var ids []string
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	return strings.Join(ids, ", ")
}

// nodeFlags are what the offline commands (restore, recover, compact) need to find
// a node: the cluster file, the node's id, and the data directory when it
// is not the file's.
type nodeFlags struct {
	configPath, nodeID, dataDir string
}

func (n *nodeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.configPath, "config", "", "the cluster file (required)")
	fs.StringVar(&n.nodeID, "node", "", "this node's id in the cluster file (required)")
	fs.StringVar(&n.dataDir, "data-dir", "", "the node's data directory (default: the file's data_dir; give it when serve is given --data-dir)")
}

// store resolves the node's store config from the cluster file, as serve
// does (node.StoreConfig); an error names the flag or field (a bad command
// line: exit 2).
func (n nodeFlags) store() (raftstore.Config, error) {
	switch {
	case n.configPath == "":
		return raftstore.Config{}, errors.New("--config: required")
	case n.nodeID == "":
		return raftstore.Config{}, errors.New("--node: required")
	}
	file, err := config.Load(n.configPath)
	if err != nil {
		return raftstore.Config{}, errors.New(config.Detail(err))
	}
	nd, err := file.Node(n.nodeID)
	if err != nil {
		return raftstore.Config{}, errors.New(config.Detail(err))
	}
	s := node.Settings{File: file, Node: nd, DataDir: file.DataDirFor(nd.ID)}
	if n.dataDir != "" {
		s.DataDir = n.dataDir
	}
	cfg, err := node.StoreConfig(s)
	if err != nil {
		return raftstore.Config{}, errors.New(config.Detail(err))
	}
	return cfg, nil
}

// offlineError is an offline operation's error in the operator's words:
// without the package prefix (the command names itself).
func offlineError(err error) string {
	msg := err.Error()
	for _, prefix := range []string{"backup: ", "datadir: "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return msg
}

func snapshotRestoreCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate snapshot restore FILE --config FILE --node ID [--data-dir DIR]"
	var n nodeFlags
	fs := flag.NewFlagSet("snapshot restore", flag.ContinueOnError)
	n.register(fs)
	file, code, ok := commandLine(fs, "snapshot restore", usage, "FILE", args, stdout, stderr)
	if !ok {
		return code
	}
	cfg, err := n.store()
	if err != nil {
		fmt.Fprintf(stderr, "idemgate snapshot restore: %v\n", err)
		return 2
	}
	meta, err := backup.Restore(cfg.Offline(), file, raftstore.Voters(cfg.Peers))
	if err != nil {
		fmt.Fprintf(stderr, "idemgate snapshot restore: %s: %s\n", file, offlineError(err))
		return 1
	}
	var voters []string
	for _, p := range cfg.Peers {
		voters = append(voters, p.ID)
	}
	fmt.Fprintf(stdout, "restored %s (index %d, taken by %s at %s) into %s: node %s of a new cluster of %s\n",
		file, meta.Index, meta.Node, meta.CreatedAt.Format(time.RFC3339), cfg.DataDir, cfg.NodeID, strings.Join(voters, ", "))
	fmt.Fprintf(stdout, "restore every node of the file from the same snapshot, then start each: idemgate serve --config %s --node ID\n", n.configPath)
	return 0
}
