package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Config says where the cluster is and how hard to try.
type Config struct {
	// Gateways are the gateway listeners (client traffic) of every node,
	// "http://host:port": Do fails over between them.
	Gateways []string
	// APIs are the API listeners of every node: Tokens and KV use them.
	APIs []string
	// APIToken is the bearer token for the API listeners, if they ask for
	// one.
	APIToken string
	// HTTPClient sends the requests (default: one with a 30 s timeout).
	HTTPClient *http.Client
	// MaxAttempts bounds the requests one call sends (default 10); the
	// context bounds its time.
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the wait between two attempts
	// (default 250 ms and 5 s); a Retry-After beyond MaxBackoff is cut to
	// it.
	MinBackoff, MaxBackoff time.Duration
	// MaxBody bounds an answer's body read into a Response (default
	// 32 MiB, the gateway's own bound).
	MaxBody int64
	// OnceLease is the lease Once holds a claim with (default
	// DefaultOnceLease), renewed at a third of it while its function runs.
	OnceLease time.Duration
}

// Client calls an idemgate cluster. It is safe for concurrent use.
type Client struct {
	cfg      Config
	gateways []string
	apis     []string
	next     atomic.Uint32 // the node the next call starts at
	leader   leaderView    // which node leads, as last learned (leader.go)
	// Tokens issues and consumes form tokens; KV is the linearizable
	// key-value API; Cluster is the operator's (status, membership).
	Tokens  *Tokens
	KV      *KV
	Cluster *Cluster
}

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	c := &Client{cfg: cfg}
	var err error
	if c.gateways, err = checkEndpoints("Gateways", cfg.Gateways); err != nil {
		return nil, err
	}
	if c.apis, err = checkEndpoints("APIs", cfg.APIs); err != nil {
		return nil, err
	}
	if len(c.gateways) == 0 && len(c.apis) == 0 {
		return nil, errors.New("client: Config names no Gateways and no APIs")
	}
	if c.cfg.HTTPClient == nil {
		c.cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if c.cfg.MaxAttempts <= 0 {
		c.cfg.MaxAttempts = 10
	}
	if c.cfg.MinBackoff <= 0 {
		c.cfg.MinBackoff = 250 * time.Millisecond
	}
	if c.cfg.MaxBackoff < c.cfg.MinBackoff {
		c.cfg.MaxBackoff = max(5*time.Second, c.cfg.MinBackoff)
	}
	if c.cfg.MaxBody <= 0 {
		c.cfg.MaxBody = 32 << 20
	}
	c.Tokens, c.KV, c.Cluster = &Tokens{c: c}, &KV{c: c}, &Cluster{c: c}
	return c, nil
}

func checkEndpoints(field string, urls []string) ([]string, error) {
	var out []string
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("client: Config.%s: %q: want http://host:port", field, s)
		}
		out = append(out, strings.TrimSuffix(s, "/"))
	}
	return out, nil
}

// answer is one HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// send sends one request to base+path and reads the answer whole.
func (c *Client) send(ctx context.Context, base, method, path string, header http.Header, body []byte) (*answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	for k, vs := range header {
		req.Header[k] = append([]string(nil), vs...)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxBody+1))
	if err != nil {
		return nil, err // cut in the middle of the body: as if unanswered
	}
	if int64(len(b)) > c.cfg.MaxBody {
		return nil, fmt.Errorf("client: %s %s: answer body over %d bytes", method, path, c.cfg.MaxBody)
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// problem reads an answer's idemgate problem document: its type slug and
// detail; ok is false for any other answer (the upstream's own).
func (a *answer) problem() (slug, detail string, ok bool) {
	if !strings.HasPrefix(a.header.Get("Content-Type"), "application/problem+json") {
		return "", "", false
	}
	var p struct{ Type, Detail string }
	if json.Unmarshal(a.body, &p) != nil || !strings.HasPrefix(p.Type, ProblemBase) {
		return "", "", false
	}
	return strings.TrimPrefix(p.Type, ProblemBase), p.Detail, true
}

// errorOf turns an idemgate problem answer into an *Error.
func (a *answer) errorOf(key string, attempts int) *Error {
	slug, detail, _ := a.problem()
	if slug == "" {
		slug = strings.ToLower(strings.ReplaceAll(http.StatusText(a.status), " ", "-"))
	}
	return &Error{Status: a.status, Type: slug, Detail: detail, Key: key, Attempts: attempts}
}

// start returns the index of the node a call starts at: calls spread over
// the nodes, and a call moves on from a node that failed it.
func (c *Client) start(n int) int { return int(c.next.Add(1)-1) % n }
