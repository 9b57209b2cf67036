package node

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestReloadRevokesOpenConnections: SIGHUP's Reload with a token removed
// and another made read-only closes, before it returns, the Redis-protocol
// connections that authenticated with them, while the one whose token
// stays goes on; the API's kept-alive connections are checked at every
// request, so the revoked token is refused on the same connection that
// used it a moment before.
func TestReloadRevokesOpenConnections(t *testing.T) {
	addrs, err := loopback.FreeAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	secret := func(name string) string { return "secret-of-" + name + "-0123456789" }
	entry := func(name, role string) string {
		sum := sha256.Sum256([]byte(secret(name)))
		return fmt.Sprintf("    - {name: %s, role: %s, sha256: %q}\n", name, role, hex.EncodeToString(sum[:]))
	}
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	write := func(tokens ...string) {
		f := fmt.Sprintf("nodes: [{id: n1, raft: %q, api: %q, resp: %q}]\napi:\n  tokens:\n%s", addrs[0], addrs[1], addrs[2],
			strings.Join(tokens, ""))
		if err := os.WriteFile(path, []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(entry("stays", "app"), entry("gone", "app"), entry("shrinks", "app"))
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	access, err := APIAccess(f)
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{File: f, Node: f.Nodes[0], DataDir: t.TempDir(), Access: access, ConfigPath: path, Bootstrap: true}
	log := &testsupport.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	n, err := Start(s, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Kill)
	testsupport.WaitFor(t, "a leader", 10*time.Second, n.Store.Ready)

	resp := map[string]*respConn{}
	api := map[string]*http.Client{}
	for _, name := range []string{"stays", "gone", "shrinks"} {
		resp[name] = dialResp(t, addrs[2])
		if r := resp[name].do("AUTH " + secret(name)); r != "+OK" {
			t.Fatalf("AUTH %s = %q", name, r)
		}
		if r := resp[name].do("SET k-" + name + " 1"); r != "+OK" {
			t.Fatalf("SET as %s = %q", name, r)
		}
		api[name] = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
		if code := apiGet(t, api[name], addrs[1], secret(name), false); code != 200 {
			t.Fatalf("GET as %s before the reload = %d", name, code)
		}
	}

	write(entry("stays", "app"), entry("shrinks", "read"))
	s.Reload(n, logger)

	for _, name := range []string{"gone", "shrinks"} {
		if !resp[name].closed() {
			t.Fatalf("the Redis-protocol connection of %q is open after the reload", name)
		}
	}
	if r := resp["stays"].do("GET k-stays"); r != "$1" {
		t.Fatalf("GET on the connection whose token stays = %q", r)
	}
	for name, want := range map[string]int{"stays": 200, "gone": 401, "shrinks": 200} {
		if code := apiGet(t, api[name], addrs[1], secret(name), true); code != want {
			t.Fatalf("GET as %s after the reload = %d, want %d", name, code, want)
		}
	}
	if !strings.Contains(log.String(), "a reload revoked a connection's token") {
		t.Errorf("no log line for the closed connections: %s", log.String())
	}
}

// respConn is a raw Redis-protocol client: one inline command, one reply
// line.
type respConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialResp(t *testing.T, addr string) *respConn {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &respConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// do sends an inline command and returns its reply's first line; a bulk
// reply's value is read and dropped.
func (c *respConn) do(cmd string) string {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, cmd+"\r\n"); err != nil {
		c.t.Fatalf("%s: %v", cmd, err)
	}
	line, err := c.br.ReadString('\n')
	if err != nil {
		c.t.Fatalf("%s: %v", cmd, err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if strings.HasPrefix(line, "$") && line != "$-1" {
		c.br.ReadString('\n')
	}
	return line
}

// closed: the server closed the connection (EOF or a reset), rather than
// the read timing out.
func (c *respConn) closed() bool {
	_, err := c.br.ReadByte()
	ne, ok := err.(net.Error)
	return err != nil && !(ok && ne.Timeout())
}

// apiGet is GET /v1/cluster with a token; again: on the connection the
// client kept alive from the call before.
func apiGet(t *testing.T, c *http.Client, addr, secret string, again bool) int {
	t.Helper()
	reused := false
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+addr+"/v1/cluster", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	r, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if again && !reused {
		t.Fatal("the API client did not keep its connection")
	}
	return r.StatusCode
}
