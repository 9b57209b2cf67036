package cmd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/idemgate/idemgate/client"
	"github.com/idemgate/idemgate/config"
)

// The operator's verbs: status, members, member add|remove|promote. They
// read the cluster file for the nodes' API addresses and the CA, so no
// curl, --cacert or jq is needed; an admin (or, to read, any) token comes
// from --token-file or --token.

// clusterFlags are the flags every operator verb takes.
type clusterFlags struct {
	configPath, token, tokenFile, ca string
	json                             bool
}

func (f *clusterFlags) register(fs *flag.FlagSet, jsonOut bool) {
	fs.StringVar(&f.configPath, "config", "", "the cluster file (required): the nodes' API addresses and the CA")
	fs.StringVar(&f.token, "token", "", "an API bearer token (visible in the process list: prefer --token-file)")
	fs.StringVar(&f.tokenFile, "token-file", "", "a file holding an API bearer token")
	fs.StringVar(&f.ca, "ca", "", "the CA (PEM) that signed the API listeners' certificates (default: the file's tls.ca)")
	if jsonOut {
		fs.BoolVar(&f.json, "json", false, "print JSON instead of a table")
	}
}

// client is an API client for the file's nodes; an error names the flag
// or field at fault (a bad command line: exit 2).
func (f clusterFlags) client() (*client.Client, *config.File, error) {
	if f.configPath == "" {
		return nil, nil, errors.New("--config: required")
	}
	file, err := config.Load(f.configPath)
	if err != nil {
		return nil, nil, errors.New(config.Detail(err))
	}
	token, err := readToken(f.token, f.tokenFile)
	if err != nil {
		return nil, nil, err
	}
	scheme, caPath := "http://", f.ca
	if file.TLS != nil {
		scheme = "https://"
		if caPath == "" {
			caPath = file.Path(file.TLS.CA, "")
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caPath != "" {
		pool, err := caPool(caPath)
		if err != nil {
			return nil, nil, err
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var apis []string
	for _, n := range file.Nodes {
		apis = append(apis, scheme+n.APIAddr())
	}
	c, err := client.New(client.Config{APIs: apis, APIToken: token, MaxAttempts: 3,
		HTTPClient: &http.Client{Transport: tr, Timeout: 10 * time.Second}})
	return c, file, err
}

// readToken is the token of --token or --token-file ("" for none).
func readToken(token, tokenFile string) (string, error) {
	switch {
	case token != "" && tokenFile != "":
		return "", errors.New("--token-file: give --token or --token-file, not both")
	case tokenFile != "":
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file: %v", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return "", fmt.Errorf("--token-file: %s is empty", tokenFile)
		}
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return "", errors.New("--token: a token has no whitespace inside")
	}
	return token, nil
}

// caPool reads a CA file for --ca.
func caPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ca: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca: %s holds no PEM certificate", path)
	}
	return pool, nil
}

// nodeReport is one node's line of idemgate status.
type nodeReport struct {
	ID       string             `json:"id"`
	Endpoint string             `json:"endpoint"`
	Status   *client.NodeStatus `json:"status,omitempty"`
	Error    string             `json:"error,omitempty"`
}

func statusCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate status --config FILE [--token-file F] [--ca CA.pem] [--json]"
	var f clusterFlags
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	f.register(fs, true)
	if _, code, ok := commandLine(fs, "status", usage, "", args, stdout, stderr); !ok {
		return code
	}
	c, file, err := f.client()
	if err != nil {
		fmt.Fprintf(stderr, "idemgate status: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	reports := make([]nodeReport, len(file.Nodes))
	var wg sync.WaitGroup
	for i, n := range file.Nodes {
		reports[i] = nodeReport{ID: n.ID, Endpoint: c.Endpoints()[i]}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.Cluster.Status(ctx, reports[i].Endpoint)
			if err != nil {
				reports[i].Error = oneLine(err.Error())
				return
			}
			reports[i].Status = st
		}()
	}
	wg.Wait()
	healthy := writeStatus(stdout, reports, f.json)
	if !healthy {
		return 1
	}
	return 0
}

// writeStatus prints the nodes' reports and a summary line; it reports
// whether every node answered, is ready, and all agree on one leader and
// one cluster id.
func writeStatus(w io.Writer, reports []nodeReport, asJSON bool) bool {
	leaders, clusters := map[string]bool{}, map[string]bool{}
	answered, ready, identified := 0, 0, 0
	var leaderLast uint64
	for _, r := range reports {
		if r.Status == nil {
			continue
		}
		answered++
		if r.Status.Ready {
			ready++
		}
		if r.Status.Leader != "" {
			leaders[r.Status.Leader] = true
		}
		if r.Status.ClusterID != "" {
			clusters[r.Status.ClusterID] = true
			identified++
		}
		if r.Status.Role == "leader" {
			leaderLast = r.Status.LastIndex
		}
	}
	n := len(reports)
	healthy := answered == n && ready == n && identified == n && len(leaders) == 1 && len(clusters) == 1
	if asJSON {
		json.NewEncoder(w).Encode(struct {
			Nodes   []nodeReport `json:"nodes"`
			Healthy bool         `json:"healthy"`
		}{reports, healthy})
		return healthy
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tENDPOINT\tROLE\tTERM\tLEADER\tLAST\tCOMMIT\tAPPLIED\tLAG\tREADY\tVERSION")
	for _, r := range reports {
		if r.Status == nil {
			fmt.Fprintf(tw, "%s\t%s\tunreachable\t\t\t\t\t\t\tno\t%s\n", r.ID, r.Endpoint, r.Error)
			continue
		}
		st := r.Status
		lag := "-"
		if leaderLast > 0 {
			lag = fmt.Sprint(leaderLast - min(leaderLast, st.AppliedIndex))
		}
		readyWord := "yes"
		if !st.Ready {
			readyWord = "no: " + st.NotReady
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.ID, r.Endpoint, st.Role, st.Term,
			dash(st.Leader), st.LastIndex, st.CommitIndex, st.AppliedIndex, lag, readyWord, st.Version)
	}
	tw.Flush()
	var ids []string
	for id := range clusters {
		ids = append(ids, id)
	}
	var ls []string
	for l := range leaders {
		ls = append(ls, l)
	}
	summary := fmt.Sprintf("%d of %d nodes answer, %d ready; leader %s; cluster %s", answered, len(reports), ready,
		dash(strings.Join(ls, " and ")), dash(strings.Join(ids, " and ")))
	if len(clusters) > 1 {
		summary += ": THE NODES BELONG TO DIFFERENT CLUSTERS"
	}
	fmt.Fprintln(w, summary)
	return healthy
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func membersCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate members --config FILE [--token-file F] [--ca CA.pem] [--json]"
	var f clusterFlags
	fs := flag.NewFlagSet("members", flag.ContinueOnError)
	f.register(fs, true)
	if _, code, ok := commandLine(fs, "members", usage, "", args, stdout, stderr); !ok {
		return code
	}
	c, _, err := f.client()
	if err != nil {
		fmt.Fprintf(stderr, "idemgate members: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	m, err := c.Cluster.Members(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate members: %s\n", oneLine(err.Error()))
		return 1
	}
	if f.json {
		json.NewEncoder(stdout).Encode(m)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRAFT\tAPI\tVOTER\tSTATE\tREACHABLE\tLAST CONTACT\tMATCH\tLAG")
	for _, n := range m.Members {
		contact := "never"
		if n.LastContactMS >= 0 {
			contact = (time.Duration(n.LastContactMS) * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%v\t%s\t%d\t%d\n", n.ID, n.Raft, dash(n.API), n.Voter, n.State, n.Reachable, contact, n.MatchIndex, n.Lag)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "leader %s, cluster %s, as %s sees it\n", dash(m.Leader), dash(m.ClusterID), dash(m.View))
	return 0
}

func memberCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate member add|remove|promote ID --config FILE [flags]"
	if len(args) == 0 || (args[0] != "add" && args[0] != "remove" && args[0] != "promote") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(stdout, "usage: "+usage)
			return 0
		}
		fmt.Fprintf(stderr, "idemgate member: want add, remove or promote (usage: %s)\n", usage)
		return 2
	}
	verb := args[0]
	name := "member " + verb
	var f clusterFlags
	var raftAddr, apiAddr string
	var nonvoter, force bool
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	f.register(fs, false)
	use := "idemgate " + name + " ID --config FILE [--token-file F]"
	switch verb {
	case "add":
		fs.StringVar(&raftAddr, "raft", "", "the node's Raft address (default: the file's, for a node it names)")
		fs.StringVar(&apiAddr, "api", "", "the node's API address (default: the file's)")
		fs.BoolVar(&nonvoter, "nonvoter", false, "add it as a non-voter: it catches up without counting for the quorum; promote it after")
		use += " [--raft ADDR] [--api ADDR] [--nonvoter]"
	default:
		fs.BoolVar(&force, "force", false, "skip the safety check (a removal that leaves no quorum of reachable voters; a promotion before the node caught up)")
		use += " [--force]"
	}
	id, code, ok := commandLine(fs, name, use, "ID", args[1:], stdout, stderr)
	if !ok {
		return code
	}
	c, file, err := f.client()
	if err != nil {
		fmt.Fprintf(stderr, "idemgate %s: %v\n", name, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch verb {
	case "add":
		if n, err := file.Node(id); err == nil {
			if raftAddr == "" {
				raftAddr = n.RaftAddr()
			}
			if apiAddr == "" {
				apiAddr = n.APIAddr()
			}
		}
		if raftAddr == "" {
			fmt.Fprintf(stderr, "idemgate %s: --raft: required: %s is not in %s\n", name, id, f.configPath)
			return 2
		}
		err = c.Cluster.Add(ctx, id, raftAddr, apiAddr, !nonvoter)
	case "remove":
		err = c.Cluster.Remove(ctx, id, force)
	case "promote":
		err = c.Cluster.Promote(ctx, id, force)
	}
	if err != nil {
		fmt.Fprintf(stderr, "idemgate %s %s: %s\n", name, id, oneLine(err.Error()))
		return 1
	}
	switch verb {
	case "add":
		kind := "a voter"
		if nonvoter {
			kind = "a non-voter"
		}
		fmt.Fprintf(stdout, "added %s (raft %s) as %s\n", id, raftAddr, kind)
	case "remove":
		fmt.Fprintf(stdout, "removed %s: its certificates are refused from now on; to add it again, give it a new one (idemgate certs --config %s --node %s)\n", id, f.configPath, id)
	case "promote":
		fmt.Fprintf(stdout, "%s is a voter\n", id)
	}
	return 0
}
