package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestE2ESecuredCluster: three real processes with mutual TLS on the Raft
// ports and TLS on the API, set up as docs/security.md says (idemgate certs). The
// certificates and an application's API token are rotated while writes run
// (SIGHUP, no restart) and no write fails; then the leader is killed and the
// survivors, dialling each other with the new certificates, carry on.
func TestE2ESecuredCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	dir := t.TempDir()
	up := testsupport.Start(t)
	up.Delay.Store(int64(2 * time.Millisecond)) // a little work, like a bank call
	c := writeCluster(t, dir, "http://"+up.Addr, "routes:\n  - {name: pay, path: /pay}\n"+
		"tls:\n  ca: certs/ca.pem\n  cert: certs/{id}.pem\n  key: certs/{id}-key.pem\n  gateway: \"on\"\n")
	ids, apis, cfgPath := c.ids, c.apis, c.path
	if out, err := exec.Command(bin, "certs", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("idemgate certs: %v\n%s", err, out)
	}
	// API tokens as docs/security.md says: idemgate token prints the secret and the
	// entry for the file.
	base, _ := os.ReadFile(cfgPath)
	newToken := func(role, name string) (secret, entry string) {
		out, err := exec.Command(bin, "token", "--role", role, "--name", name).Output()
		if err != nil {
			t.Fatalf("idemgate token: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return lines[0], lines[1]
	}
	setTokens := func(entries ...string) {
		f := string(base) + "api:\n  tokens:\n"
		for _, e := range entries {
			f += "  " + e + "\n"
		}
		if err := os.WriteFile(cfgPath, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	adminSecret, adminEntry := newToken("admin", "ops")
	appA, appAEntry := newToken("app", "checkout-a")
	appB, appBEntry := newToken("app", "checkout-b")
	setTokens(adminEntry, appAEntry)
	var bearer atomic.Value
	bearer.Store(adminSecret)
	caPEM, _ := os.ReadFile(certs.CAFile(filepath.Join(dir, "certs")))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	// No keep-alive: every request makes a new handshake, so a rotated
	// certificate is seen at once.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	doAs := func(secret, method, url, body string) (int, string, *x509.Certificate, error) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.TLS.PeerCertificates[0], nil
	}
	do := func(method, url, body string) (int, string, *x509.Certificate, error) {
		return doAs(bearer.Load().(string), method, url, body)
	}
	nodes := startNodes(t, bin, cfgPath, ids, apis)
	leader := ""
	waitFor(t, "a leader", 20*time.Second, func() bool {
		code, body, _, err := do("GET", "https://"+apis["n2"]+"/v1/cluster", "")
		var cl struct{ Leader string }
		json.Unmarshal([]byte(body), &cl)
		leader = cl.Leader
		return err == nil && code == 200 && leader != ""
	})
	if code, _, _, err := httpDo("GET", "http://"+apis["n1"]+"/v1/cluster", ""); err == nil && code == 200 {
		t.Fatal("the API answered plaintext HTTP")
	}
	if code, _, _, _ := doAs("", "GET", "https://"+apis["n1"]+"/v1/cluster", ""); code != 401 {
		t.Fatalf("the API without a token = %d, want 401", code)
	}
	if code, _, _, _ := doAs(appA, "DELETE", "https://"+apis["n1"]+"/v1/cluster/nodes/n3", ""); code != 403 {
		t.Fatalf("an app token removing a node = %d, want 403", code)
	}
	bearer.Store(appA)
	// The gateway serves TLS in front of a plain upstream: a payment runs
	// once, its retry on another node is replayed.
	pay := func(id string) (int, string) {
		req, _ := http.NewRequest("POST", "https://"+c.gws[id]+"/pay", strings.NewReader(`{"amount":1}`))
		req.Header.Set("Idempotency-Key", "tls-order-1")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("gateway over TLS: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code1, body1 := pay("n1")
	code2, body2 := pay("n2")
	if code1 != 201 || code2 != 201 || body1 != body2 || up.Executions("tls-order-1") != 1 {
		t.Fatalf("through the TLS gateway: %d %q, retry %d %q, %d upstream executions", code1, body1, code2, body2, up.Executions("tls-order-1"))
	}
	_, _, before, err := do("GET", "https://"+apis["n1"]+"/healthz", "")
	if err != nil {
		t.Fatal(err)
	}

	// Writes run through every node while every certificate is replaced.
	var wg sync.WaitGroup
	var stop atomic.Bool
	var ok, failed atomic.Int64
	var firstFail atomic.Value
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				code, body, _, err := do("PUT", fmt.Sprintf("https://%s/v1/kv/rot-%d-%d?nx=1", apis[ids[w]], w, i), "v")
				if err != nil || code != 201 {
					failed.Add(1)
					firstFail.CompareAndSwap(nil, fmt.Sprintf("%d %s %v", code, body, err))
				} else {
					ok.Add(1)
				}
			}
		}(w)
	}
	hup := func() {
		for _, id := range ids {
			nodes[id].cmd.Process.Signal(syscall.SIGHUP)
		}
	}
	time.Sleep(500 * time.Millisecond)
	// New certificates, and a second application token beside the first.
	if out, err := exec.Command(bin, "certs", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("idemgate certs (rotation): %v\n%s", err, out)
	}
	setTokens(adminEntry, appAEntry, appBEntry)
	hup()
	waitFor(t, "the new token on every node", 10*time.Second, func() bool {
		for _, id := range ids {
			if code, _, _, _ := doAs(appB, "GET", "https://"+apis[id]+"/v1/kv/none", ""); code != 404 {
				return false
			}
		}
		return true
	})
	// The writers move to the new token; then the old one is withdrawn.
	bearer.Store(appB)
	time.Sleep(300 * time.Millisecond)
	setTokens(adminEntry, appBEntry)
	hup()
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	if failed.Load() != 0 || ok.Load() == 0 {
		t.Fatalf("during the rotation: %d writes ok, %d failed (first: %v)", ok.Load(), failed.Load(), firstFail.Load())
	}
	_, _, after, err := do("GET", "https://"+apis["n1"]+"/healthz", "")
	if err != nil || after.SerialNumber.Cmp(before.SerialNumber) == 0 {
		t.Fatalf("after SIGHUP the API still serves the old certificate (%v)", err)
	}
	t.Logf("%d writes during the rotation, none failed", ok.Load())
	waitFor(t, "the old token refused", 10*time.Second, func() bool {
		code, _, _, _ := doAs(appA, "GET", "https://"+apis["n1"]+"/v1/kv/none", "")
		return code == 401
	})

	// Kill the leader: the survivors elect and replicate over new
	// connections, made with the rotated certificates.
	nodes[leader].cmd.Process.Signal(syscall.SIGKILL)
	nodes[leader].cmd.Wait()
	var survivor string
	for _, id := range ids {
		if id != leader {
			survivor = id
		}
	}
	waitFor(t, "a write after the kill", 20*time.Second, func() bool {
		code, _, _, err := do("PUT", "https://"+apis[survivor]+"/v1/kv/after-kill?nx=1", "x")
		return err == nil && code == 201
	})
}
