package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// File is the cluster file as written.
type File struct {
	Nodes    []Node   `yaml:"nodes"`
	DataDir  string   `yaml:"data_dir"`
	Upstream string   `yaml:"upstream"`
	Tokens   Tokens   `yaml:"tokens"`
	Routes   []Route  `yaml:"routes"`
	Raft     Raft     `yaml:"raft"`
	Expiry   Expiry   `yaml:"expiry"`
	Limits   Limits   `yaml:"limits"`
	Scripts  Scripts  `yaml:"scripts"`
	Suspects Suspects `yaml:"suspects"`
	Once     Once     `yaml:"once"`
	TLS      *TLS     `yaml:"tls"`
	API      API      `yaml:"api"`
	// Tracing is the OpenTelemetry export (tracing.go); off when left out.
	Tracing Tracing `yaml:"tracing"`
	// TrustedProxies are the client addresses (CIDRs, or single addresses)
	// that may send a route's tenant header (tenant: header:NAME): the
	// proxy in front of the gateway that sets it from the credential it
	// checked. Absent: loopback only; []: nobody.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// UntrustedTenant is what a route's tenant header from any other
	// address gets: "reject" (400) or "ignore" (dropped before the record
	// and the upstream see it).
	UntrustedTenant string `yaml:"untrusted_tenant"`
	// JWT verifies bearer JWTs at the gateway (jwt.go); nil: none.
	JWT *JWT `yaml:"jwt"`
	// TrustedPrefixes is TrustedProxies parsed (set by validation; nil
	// when the file leaves trusted_proxies out).
	TrustedPrefixes []netip.Prefix `yaml:"-"`
	// Insecure allows non-loopback Raft and API addresses without tls and
	// api.tokens (logged at every start).
	Insecure bool `yaml:"insecure"`
	// MemoryLimit is the node's soft memory limit (Go's, on the heap and
	// the runtime's own memory; the mmapped data file is not in it). 0:
	// node.DefaultMemoryLimit. The environment's GOMEMLIMIT wins.
	MemoryLimit Size `yaml:"memory_limit"`

	// Name is the file's path as given to Load, for errors ("" for Parse
	// and the embedded default).
	Name string `yaml:"-"`
	// Dir is the directory of the file: relative paths in it (data_dir,
	// certificates, secret files) are relative to it. Empty for Parse and
	// the embedded default: relative to the working directory.
	Dir string `yaml:"-"`
	// lines maps each field path the file sets to its line, for errors.
	lines map[string]int
}

// Node is one member of the cluster.
type Node struct {
	ID     string `yaml:"id"`
	Raft   string `yaml:"raft"`
	API    string `yaml:"api"`
	Listen string `yaml:"listen"`
	// AdvertiseRaft and AdvertiseAPI are what the other nodes dial (and
	// what /v1/cluster shows) when that is not the bind address: a node
	// binding 0.0.0.0, or behind NAT. Empty: the bind address.
	AdvertiseRaft string `yaml:"advertise_raft"`
	AdvertiseAPI  string `yaml:"advertise_api"`
	// Resp is the address of the node's Redis-protocol listener; empty:
	// none.
	Resp string `yaml:"resp"`
}

// RaftAddr is the Raft address the other nodes dial.
func (n Node) RaftAddr() string {
	if n.AdvertiseRaft != "" {
		return n.AdvertiseRaft
	}
	return n.Raft
}

// APIAddr is the API address the other nodes and clients are told.
func (n Node) APIAddr() string {
	if n.AdvertiseAPI != "" {
		return n.AdvertiseAPI
	}
	return n.API
}

// Tokens configures form tokens.
type Tokens struct {
	TTL Duration `yaml:"ttl"`
}

// Route is one idempotent route of the gateway.
type Route struct {
	Name       string   `yaml:"name"`
	Methods    []string `yaml:"methods"`
	Path       string   `yaml:"path"`
	Scope      string   `yaml:"scope"`
	Key        string   `yaml:"key"`
	RequireKey *bool    `yaml:"require_key"`
	Tenant     string   `yaml:"tenant"`
	// Auth "jwt" requires a valid bearer JWT (the jwt section) before
	// anything else; tenant: jwt:CLAIM implies it.
	Auth              string   `yaml:"auth"`
	TTL               Duration `yaml:"ttl"`
	ProcessingTimeout Duration `yaml:"processing_timeout"`
	OnInFlight        string   `yaml:"on_in_flight"`
	WaitTimeout       Duration `yaml:"wait_timeout"`
	OnUnknown         string   `yaml:"on_unknown"`
	OnSuspect         string   `yaml:"on_suspect"`
	Token             string   `yaml:"token"`
	MaxStoredBody     *Size    `yaml:"max_stored_body"`
	ReleaseStatuses   []int    `yaml:"release_statuses"`
	ReplayHeaders     []string `yaml:"replay_headers"`
	// Match and TrailingSlash say which aliases of the path the upstream
	// serves as this route: "case-insensitive" (Spring's and Express's
	// default) and "ignore" (a trailing slash) make the gateway take them as
	// the route, with its records; by default ("exact", "strict") it
	// refuses them with 400 rather than pass them through unprotected.
	Match         string `yaml:"match"`
	TrailingSlash string `yaml:"trailing_slash"`
	// Fingerprint says how the body enters a request's fingerprint: "raw"
	// (its bytes) or "json" (canonical JSON: member order and whitespace
	// ignored, and the members FingerprintIgnore points at left out).
	Fingerprint       string   `yaml:"fingerprint"`
	FingerprintIgnore []string `yaml:"fingerprint_ignore"`
	// KeyFormat is "uuid" or a regular expression the whole key must match;
	// KeyMinLength the fewest characters a key may have.
	KeyFormat    string `yaml:"key_format"`
	KeyMinLength int    `yaml:"key_min_length"`
	// DropHeaders are upstream response headers never stored: the first
	// answer carries them, replays do not.
	DropHeaders []string `yaml:"drop_headers"`
	// ReconcileID names the member of the upstream's stored response that
	// identifies what it did (a charge id): "json:/pointer". The records
	// export (GET /v1/records/export) reads it out, so a reconciliation
	// can match records with a provider's statement by that id.
	ReconcileID string `yaml:"reconcile_id"`
}

// Raft tunes the consensus engine. A field left out keeps the default of
// raftstore.DefaultConfig.
type Raft struct {
	// Timing picks the heartbeat and election timeouts, for a network
	// like the cluster's: "default" (hashicorp/raft's, any network), or
	// "lan" (raftstore.LANHeartbeatTimeout and LANElectionTimeout: a
	// failover within a second); heartbeat_timeout and election_timeout
	// override it.
	Timing            string   `yaml:"timing"`
	HeartbeatTimeout  Duration `yaml:"heartbeat_timeout"`
	ElectionTimeout   Duration `yaml:"election_timeout"`
	SnapshotThreshold uint64   `yaml:"snapshot_threshold"`
	SnapshotInterval  Duration `yaml:"snapshot_interval"`
	ApplyTimeout      Duration `yaml:"apply_timeout"`
	// MinFree: below it a node refuses writes, below a quarter of it the
	// node stops (a full disk must never reach Raft's stores).
	MinFree Size `yaml:"min_free"`
	// MaxClockJump: a leader whose clock is further ahead of the
	// replicated clock checks it with the other voters, and refuses to
	// propose (stepping down) unless a quorum agrees.
	MaxClockJump Duration `yaml:"max_clock_jump"`
	// FSMFsync makes the state machine fsync its own file on every commit.
	// Off by default: the Raft log is fsynced (see fsm.Config.NoSync).
	FSMFsync bool `yaml:"fsm_fsync"`
	// LogStore is where the Raft log lives: "boltdb" (raft.db) or "wal"
	// (raft-wal/). Empty: the store the data directory already holds, and
	// "wal" for a new node. A node set to one store whose data directory
	// holds the log in the other refuses to start; `idemgate log migrate`
	// moves it.
	LogStore string `yaml:"log_store"`
	// ApplyCommitEvery and ApplyCommitInterval amortise the state
	// machine's commits (raftstore.Config.ApplyCommitEvery): one
	// transaction of its file gathers up to this many log entries, for at
	// most this long. 1 commits every batch.
	ApplyCommitEvery    int      `yaml:"apply_commit_every"`
	ApplyCommitInterval Duration `yaml:"apply_commit_interval"`
}

// Expiry tunes the leader's sweeper, which removes what has expired
// (records, tokens, keys: reads already treat them as gone). A field left
// out keeps the default of ttl.DefaultSweeperConfig.
type Expiry struct {
	// Interval is the time between sweeps while nothing is left due.
	Interval Duration `yaml:"interval"`
	// BatchSize is the entries one expire command (one proposal) carries.
	BatchSize int `yaml:"batch_size"`
	// MaxBatches is the commands one sweep proposes, one after another,
	// before it pauses.
	MaxBatches int `yaml:"max_batches"`
	// BacklogPause is the pause between sweeps while entries are still
	// due (a backlog); at most Interval.
	BacklogPause Duration `yaml:"backlog_pause"`
}

// Limits protects the listeners. A field left out keeps the default of
// gateway.DefaultConfig.
type Limits struct {
	ReadTimeout     Duration `yaml:"read_timeout"`
	WriteTimeout    Duration `yaml:"write_timeout"`
	IdleTimeout     Duration `yaml:"idle_timeout"`
	MaxRequestBody  Size     `yaml:"max_request_body"`
	MaxHeaderBytes  Size     `yaml:"max_header_bytes"`
	MaxConnsPerIP   int      `yaml:"max_conns_per_ip"`
	Concurrency     int      `yaml:"concurrency"`
	UpstreamTimeout Duration `yaml:"upstream_timeout"`
	UpstreamConns   int      `yaml:"upstream_conns"`
	MaxResponseBody Size     `yaml:"max_response_body"`
	// MaxResponseHeaderBytes bounds an upstream answer's header block: the
	// gateway reads it into a buffer this size (one per upstream call in
	// flight). fasthttp's own default, 4 KiB, is less than many upstreams
	// send (cookies, CSP, tracing), and an answer that does not fit was
	// lost after the upstream had acted.
	MaxResponseHeaderBytes Size `yaml:"max_response_header_bytes"`
	// MaxBodyBuffer bounds the request-body bytes one listener holds at
	// once, all connections together; beyond it a body gets 503. 0: 64
	// times max_request_body.
	MaxBodyBuffer Size `yaml:"max_body_buffer"`
	// MaxClientBuffer bounds the bytes the Redis-protocol listener holds
	// for its clients at once, all connections together (arguments,
	// queued transactions, values read for replies, invalidations
	// waiting); beyond it a connection is answered an error and closed.
	// 0: 16 times max_request_body.
	MaxClientBuffer Size `yaml:"max_client_buffer"`
}

// Suspects configures live detection of suspected duplicates (the
// suspects: section).
type Suspects struct {
	Window Duration `yaml:"window"`
}

// Defaults the file may leave out.
const (
	DefaultTokenTTL          = 30 * time.Minute
	DefaultRecordTTL         = 24 * time.Hour
	DefaultProcessingTimeout = 30 * time.Second
	DefaultWaitTimeout       = 10 * time.Second
	DefaultMaxStoredBody     = 1 << 20
	DefaultSuspectWindow     = 5 * time.Minute
	// DefaultMaxResponseHeaderBytes is limits.max_response_header_bytes
	// left out: 16 times fasthttp's default, above what upstreams send in
	// practice (nginx and Node refuse request headers over 8-16 KiB).
	DefaultMaxResponseHeaderBytes = 64 << 10
	// MinMemoryLimit is the least memory_limit the file may set.
	MinMemoryLimit = 64 << 20
)

var (
	idRe    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	tokenRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") // RFC 9110 token
)

// checkID validates a name the file gives (a node id, a route's name or
// scope, a token's name): 1-64 letters, digits, '_', '.', '-'.
func checkID(field, v string) error {
	if !idRe.MatchString(v) {
		return fieldErr(field, "%q: want 1-64 letters, digits, '_', '.', '-'", v)
	}
	return nil
}

func (f *File) validate() error {
	if len(f.Nodes) == 0 {
		return fieldErr("nodes", "at least one node is required")
	}
	ids, addrs := map[string]bool{}, map[string]string{}
	for i, n := range f.Nodes {
		at := fmt.Sprintf("nodes[%d]", i)
		if err := checkID(at+".id", n.ID); err != nil {
			return err
		}
		if ids[n.ID] {
			return fieldErr(at+".id", "duplicate node id %q", n.ID)
		}
		ids[n.ID] = true
		for _, a := range []struct{ name, v string }{{"raft", n.Raft}, {"api", n.API}, {"listen", n.Listen}, {"resp", n.Resp}} {
			if a.name == "listen" && a.v == "" && !f.Gateway() {
				continue // store-only: no gateway; a listen given is checked, and ignored (node.Start warns)
			}
			if a.name == "resp" && a.v == "" {
				continue // no Redis-protocol listener
			}
			if err := checkHostPort(a.v); err != nil {
				return fieldErr(at+"."+a.name, "%v", err)
			}
			// A wildcard bind (0.0.0.0:8001 on every machine) is not a
			// clash: each node binds it on its own host.
			if other, dup := addrs[a.v]; dup && !wildcard(a.v) {
				return fieldErr(at+"."+a.name, "address %s is already used by %s", a.v, other)
			}
			addrs[a.v] = at + "." + a.name
		}
		for _, a := range []struct{ name, v string }{{"advertise_raft", n.AdvertiseRaft}, {"advertise_api", n.AdvertiseAPI}} {
			if a.v == "" {
				continue
			}
			if err := checkHostPort(a.v); err != nil {
				return fieldErr(at+"."+a.name, "%v", err)
			}
			if wildcard(a.v) {
				return fieldErr(at+"."+a.name, "%q binds every interface: advertise an address the other nodes can dial", a.v)
			}
		}
		if len(f.Nodes) > 1 && wildcard(n.Raft) && n.AdvertiseRaft == "" {
			return fieldErr(at+".advertise_raft", "required: raft %s binds every interface, and the other nodes must be told what to dial", n.Raft)
		}
	}
	if f.DataDir == "" {
		f.DataDir = "./idemgate-data/{id}"
	}
	if len(f.Nodes) > 1 && !strings.Contains(f.DataDir, "{id}") {
		// Nodes on one machine must not share a directory; on separate
		// machines this is harmless, so it is not an error.
		f.DataDir = strings.TrimRight(f.DataDir, "/") + "/{id}"
	}
	if f.Upstream != "" {
		u, err := url.Parse(f.Upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fieldErr("upstream", "%q: want an http:// or https:// URL", f.Upstream)
		}
	}
	if f.Tokens.TTL == 0 {
		f.Tokens.TTL = Duration(DefaultTokenTTL)
	}
	names := map[string]bool{}
	for i := range f.Routes {
		if err := f.Routes[i].validate(fmt.Sprintf("routes[%d]", i), names); err != nil {
			return err
		}
	}
	if err := f.validateTrust(); err != nil {
		return err
	}
	if err := f.validateJWT(); err != nil {
		return err
	}
	if len(f.Routes) > 0 && f.Upstream == "" {
		return fieldErrAt("upstream", "routes", "required when routes are configured (without upstream and routes, a node runs the store and the API only)")
	}
	if err := f.Raft.validate(); err != nil {
		return err
	}
	if err := f.Expiry.validate(); err != nil {
		return err
	}
	if err := f.Limits.validate(); err != nil {
		return err
	}
	if f.MemoryLimit != 0 && f.MemoryLimit < MinMemoryLimit {
		return fieldErr("memory_limit", "%d is too small (minimum 64MiB: a node's heap at rest is tens of megabytes)", f.MemoryLimit)
	}
	if err := f.Scripts.validate(); err != nil {
		return err
	}
	if f.Suspects.Window == 0 {
		f.Suspects.Window = Duration(DefaultSuspectWindow)
	}
	if err := f.Once.validate(); err != nil {
		return err
	}
	if err := f.Tracing.validate(); err != nil {
		return err
	}
	return f.validateSecurity()
}

// validateTrust parses trusted_proxies and checks untrusted_tenant.
func (f *File) validateTrust() error {
	var err error
	if f.UntrustedTenant, err = oneOf("untrusted_tenant", f.UntrustedTenant, "reject", "ignore"); err != nil {
		return err
	}
	if f.TrustedProxies == nil {
		return nil
	}
	f.TrustedPrefixes = []netip.Prefix{}
	for i, s := range f.TrustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return fieldErr(fmt.Sprintf("trusted_proxies[%d]", i), "%q: want an address or a CIDR (10.0.0.0/24, 192.0.2.7, ::1)", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		f.TrustedPrefixes = append(f.TrustedPrefixes, p.Masked())
	}
	return nil
}

// Gateway reports whether the nodes run the gateway listener: a file with
// an upstream. Without one (and without routes) the cluster is store-only:
// each node serves the API (KV, tokens, cluster, snapshots) and no client
// traffic.
func (f *File) Gateway() bool { return f.Upstream != "" }

func wildcard(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsUnspecified()
}

func checkHostPort(a string) error {
	if a == "" {
		return errors.New("address is required (host:port)")
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%q is not host:port", a)
	}
	if host == "" {
		return fmt.Errorf("%q: host is required (127.0.0.1, a name, or 0.0.0.0)", a)
	}
	if p, err := net.LookupPort("tcp", port); err != nil || p == 0 {
		return fmt.Errorf("%q: bad port", a)
	}
	return nil
}

func (r *Route) validate(at string, names map[string]bool) error {
	if err := checkID(at+".name", r.Name); err != nil {
		return err
	}
	if names[r.Name] {
		return fieldErr(at+".name", "duplicate route name %q", r.Name)
	}
	names[r.Name] = true
	if len(r.Methods) == 0 {
		r.Methods = []string{"POST"}
	}
	for j, m := range r.Methods {
		up := strings.ToUpper(m)
		if !tokenRe.MatchString(up) {
			return fieldErr(fmt.Sprintf("%s.methods[%d]", at, j), "%q is not an HTTP method", m)
		}
		r.Methods[j] = up
	}
	if !strings.HasPrefix(r.Path, "/") {
		return fieldErr(at+".path", "%q: want an absolute path such as /pay or /orders/*", r.Path)
	}
	if i := strings.Index(r.Path, "*"); i >= 0 && i != len(r.Path)-1 {
		return fieldErr(at+".path", "%q: '*' may only end the path", r.Path)
	}
	if err := checkRoutePath(strings.TrimSuffix(r.Path, "*")); err != nil {
		return fieldErr(at+".path", "%q: %v", r.Path, err)
	}
	if r.Scope == "" {
		r.Scope = r.Name
	}
	if err := checkID(at+".scope", r.Scope); err != nil {
		return err
	}
	if r.Key == "" {
		r.Key = "header:Idempotency-Key"
	}
	if err := checkSource(r.Key, false); err != nil {
		return fieldErr(at+".key", "%v", err)
	}
	if r.RequireKey == nil {
		t := true
		r.RequireKey = &t
	}
	var err error
	if r.Tenant != "" {
		if err := checkSource(r.Tenant, true); err != nil {
			return fieldErr(at+".tenant", "%v", err)
		}
	}
	if strings.HasPrefix(r.Tenant, "jwt:") {
		if r.Auth == "none" {
			return fieldErr(at+".auth", "none, but tenant %s takes the tenant from a verified token", r.Tenant)
		}
		r.Auth = "jwt"
	}
	if r.Auth, err = oneOf(at+".auth", r.Auth, "none", "jwt"); err != nil {
		return err
	}
	if r.TTL == 0 {
		r.TTL = Duration(DefaultRecordTTL)
	}
	if r.ProcessingTimeout == 0 {
		r.ProcessingTimeout = Duration(DefaultProcessingTimeout)
	}
	if r.ProcessingTimeout > r.TTL {
		return fieldErr(at+".processing_timeout", "%s is longer than the route's ttl %s", r.ProcessingTimeout.D(), r.TTL.D())
	}
	if r.WaitTimeout == 0 {
		r.WaitTimeout = Duration(DefaultWaitTimeout)
	}
	if r.OnInFlight, err = oneOf(at+".on_in_flight", r.OnInFlight, "conflict", "wait"); err != nil {
		return err
	}
	if r.OnUnknown, err = oneOf(at+".on_unknown", r.OnUnknown, "reject", "release"); err != nil {
		return err
	}
	if r.OnSuspect, err = oneOf(at+".on_suspect", r.OnSuspect, "flag", "reject"); err != nil {
		return err
	}
	if r.Token, err = oneOf(at+".token", r.Token, "off", "optional", "required"); err != nil {
		return err
	}
	if r.Match, err = oneOf(at+".match", r.Match, "exact", "case-insensitive"); err != nil {
		return err
	}
	if r.TrailingSlash, err = oneOf(at+".trailing_slash", r.TrailingSlash, "strict", "ignore"); err != nil {
		return err
	}
	if r.MaxStoredBody == nil {
		s := Size(DefaultMaxStoredBody)
		r.MaxStoredBody = &s
	}
	if r.ReleaseStatuses == nil {
		r.ReleaseStatuses = []int{429, 503}
	}
	for j, s := range r.ReleaseStatuses {
		if s < 100 || s > 599 {
			return fieldErr(fmt.Sprintf("%s.release_statuses[%d]", at, j), "%d is not an HTTP status", s)
		}
	}
	for j, h := range r.ReplayHeaders {
		if !tokenRe.MatchString(h) {
			return fieldErr(fmt.Sprintf("%s.replay_headers[%d]", at, j), "%q is not a header name", h)
		}
	}
	return r.validateOptions(at)
}

// checkRoutePath refuses a route path in a form no request names it by
// plainly: the gateway compares a request's path as sent with the route's,
// and refuses as ambiguous any request whose path needs decoding, matrix
// parameters stripped, slashes merged or dot segments resolved to reach a
// route; a route path written that way could never match.
func checkRoutePath(p string) error {
	if i := strings.IndexAny(p, "%;?#\\"); i >= 0 {
		return fmt.Errorf("%q may not appear in a route path", p[i])
	}
	for _, c := range []byte(p) {
		if c <= ' ' || c >= 0x7f {
			return errors.New("want visible ASCII")
		}
	}
	if strings.Contains(p, "//") {
		return errors.New("duplicate slashes")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return errors.New("dot segments")
		}
	}
	return nil
}

// checkSource validates "header:NAME", "query:NAME" (keys only),
// "authorization" or "jwt:CLAIM" (tenants only).
func checkSource(s string, tenant bool) error {
	if tenant && s == "authorization" {
		return nil
	}
	if c, ok := strings.CutPrefix(s, "jwt:"); ok && tenant {
		if !claimRe.MatchString(c) {
			return fmt.Errorf("%q: want jwt:CLAIM, a claim name (1-128 visible ASCII characters) such as jwt:sub", s)
		}
		return nil
	}
	if p, ok := strings.CutPrefix(s, "json:"); ok && !tenant {
		if _, err := ParsePointer(p); err != nil || p == "" {
			return fmt.Errorf("%q: want json:/POINTER, a JSON pointer (RFC 6901) such as json:/idempotency_key", s)
		}
		return nil
	}
	kind, name, ok := strings.Cut(s, ":")
	if !ok || (kind != "header" && (tenant || kind != "query")) || !tokenRe.MatchString(name) {
		if tenant {
			return fmt.Errorf("%q: want header:NAME, authorization or jwt:CLAIM", s)
		}
		return fmt.Errorf("%q: want header:NAME, query:NAME or json:/POINTER", s)
	}
	return nil
}

func oneOf(field, v string, allowed ...string) (string, error) {
	if v == "" {
		return allowed[0], nil
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", fieldErr(field, "%q: want one of %s", v, strings.Join(allowed, ", "))
}

// validate checks the values the file sets; what it leaves out (zero) is
// filled by the package that owns the setting (raftstore.DefaultConfig),
// so each default is defined once, there.
func (r *Raft) validate() error {
	// Checked, not filled in: node.StoreConfig reads "" as the default.
	if _, err := oneOf("raft.timing", r.Timing, "default", "lan"); err != nil {
		return err
	}
	for _, d := range []struct {
		field string
		v     Duration
	}{{"raft.heartbeat_timeout", r.HeartbeatTimeout}, {"raft.election_timeout", r.ElectionTimeout}} {
		if d.v != 0 && d.v.D() < minRaftTimeout {
			return fieldErr(d.field, "%s is too small (minimum %s)", d.v.D(), minRaftTimeout)
		}
	}
	if r.HeartbeatTimeout != 0 && r.ElectionTimeout != 0 && r.ElectionTimeout < r.HeartbeatTimeout {
		return fieldErr("raft.election_timeout", "%s is shorter than raft.heartbeat_timeout %s (Raft refuses it)", r.ElectionTimeout.D(), r.HeartbeatTimeout.D())
	}
	// Checked, not filled in: raftstore.DefaultConfig has the default.
	if _, err := oneOf("raft.log_store", r.LogStore, "boltdb", "wal"); err != nil {
		return err
	}
	if r.MaxClockJump != 0 && r.MaxClockJump.D() < time.Minute {
		return fieldErr("raft.max_clock_jump", "%s is too small (minimum 1m)", r.MaxClockJump.D())
	}
	if r.ApplyCommitEvery < 0 || r.ApplyCommitEvery > maxApplyCommitEvery {
		return fieldErr("raft.apply_commit_every", "%d: want 1 to %d (0 or left out: the default)", r.ApplyCommitEvery, maxApplyCommitEvery)
	}
	if r.ApplyCommitInterval < 0 || r.ApplyCommitInterval.D() > time.Minute {
		return fieldErr("raft.apply_commit_interval", "%s: want more than 0 and at most 1m (0 or left out: the default)", r.ApplyCommitInterval.D())
	}
	return nil
}

// maxApplyCommitEvery is fsm.MaxCommitEvery.
const maxApplyCommitEvery = 1 << 20

// minRaftTimeout is raftstore.MinRaftTimeout, the shortest heartbeat or
// election timeout.
const minRaftTimeout = 10 * time.Millisecond

// The bounds of the expiry fields, as ttl.SweeperConfig.Validate has them.
const (
	minSweepInterval   = 10 * time.Millisecond
	maxSweepInterval   = time.Hour
	maxSweepBatchSize  = 4096
	maxSweepMaxBatches = 1024
)

// validate checks the values the file sets; what it leaves out (zero) is
// filled by ttl.DefaultSweeperConfig. That backlog_pause is at most the
// interval is checked here when the file sets both, and by node.Start
// against the default interval otherwise.
func (e *Expiry) validate() error {
	if e.Interval != 0 && (e.Interval.D() < minSweepInterval || e.Interval.D() > maxSweepInterval) {
		return fieldErr("expiry.interval", "%s: want %s to %s", e.Interval.D(), minSweepInterval, maxSweepInterval)
	}
	if e.BatchSize < 0 || e.BatchSize > maxSweepBatchSize {
		return fieldErr("expiry.batch_size", "%d: want 1 to %d (0 or left out: the default)", e.BatchSize, maxSweepBatchSize)
	}
	if e.MaxBatches < 0 || e.MaxBatches > maxSweepMaxBatches {
		return fieldErr("expiry.max_batches", "%d: want 1 to %d (0 or left out: the default)", e.MaxBatches, maxSweepMaxBatches)
	}
	if e.Interval != 0 && e.BacklogPause > e.Interval {
		return fieldErr("expiry.backlog_pause", "%s is longer than expiry.interval %s", e.BacklogPause.D(), e.Interval.D())
	}
	return nil
}

// validate checks the values the file sets; what it leaves out (zero) is
// filled by gateway.DefaultConfig.
func (l *Limits) validate() error {
	if l.MaxResponseHeaderBytes != 0 && (l.MaxResponseHeaderBytes < 4<<10 || l.MaxResponseHeaderBytes > 1<<20) {
		return fieldErr("limits.max_response_header_bytes", "%d: want 4KiB to 1MiB (every upstream call in flight holds a buffer this size)", l.MaxResponseHeaderBytes)
	}
	// The Redis listener's largest request is two values (resp.Config's
	// MaxRequest); with max_request_body left out, resp checks it.
	if l.MaxClientBuffer != 0 && l.MaxRequestBody != 0 && l.MaxClientBuffer < 2*l.MaxRequestBody {
		return fieldErr("limits.max_client_buffer", "%d is less than two max_request_body (%d): the largest request could not be held", l.MaxClientBuffer, 2*l.MaxRequestBody)
	}
	if l.MaxHeaderBytes != 0 && l.MaxHeaderBytes < 1024 {
		return fieldErr("limits.max_header_bytes", "%d is too small (minimum 1KiB)", l.MaxHeaderBytes)
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"max_conns_per_ip", l.MaxConnsPerIP}, {"concurrency", l.Concurrency}, {"upstream_conns", l.UpstreamConns}} {
		if c.v < 0 {
			return fieldErr("limits."+c.name, "%d: want 0 (the default) or more", c.v)
		}
	}
	return nil
}
