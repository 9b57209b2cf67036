package checkout_test

// TestCheckoutInChromium drives the checkout page in a real headless
// Chromium against a real 3-node cluster (Raft over TCP on loopback, bbolt
// files in a temp dir), with the real examples/payments binary as the
// upstream, and counts the charges the upstream made.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/node"
)

// chromium returns the path of a Chromium (or Chrome) binary, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// startPayments builds and runs examples/payments on a free port.
func startPayments(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "payments")
	build := exec.Command("go", "build", "-o", bin, "github.com/idemgate/idemgate/examples/payments")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build examples/payments: %v\n%s", err, out)
	}
	addrs, err := loopback.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-listen", addrs[0])
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testsupport.WaitFor(t, "the payments service", 20*time.Second, func() bool {
		r, err := http.Get("http://" + addrs[0] + "/charges")
		if err == nil {
			r.Body.Close()
		}
		return err == nil && r.StatusCode == 200
	})
	return addrs[0]
}

// startCluster starts 3 nodes whose route pay takes form tokens and
// fingerprints its body as JSON, in front of upstream.
func startCluster(t *testing.T, dir, upstream string) []*node.Node {
	t.Helper()
	ports, err := loopback.FreeAddrs(9)
	if err != nil {
		t.Fatal(err)
	}
	var y strings.Builder
	y.WriteString("nodes:\n")
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&y, "  - {id: n%d, raft: %q, api: %q, listen: %q}\n", i+1, ports[3*i], ports[3*i+1], ports[3*i+2])
	}
	fmt.Fprintf(&y, `data_dir: %q
upstream: http://%s
raft: {heartbeat_timeout: 500ms, election_timeout: 500ms}
routes:
  - {name: pay, path: /pay, tenant: "header:X-User-Id", token: required, fingerprint: json, processing_timeout: 20s}
`, filepath.Join(dir, "{id}"), upstream)
	file, err := config.Parse([]byte(y.String()))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var nodes []*node.Node
	for _, cn := range file.Nodes {
		n, err := node.Start(node.Settings{File: file, Node: cn, DataDir: file.DataDirFor(cn.ID), Bootstrap: true}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		t.Cleanup(func() { n.Stop(2 * time.Second) })
	}
	testsupport.WaitFor(t, "a leader, every node ready", 30*time.Second, func() bool {
		for _, n := range nodes {
			if !n.Store.Ready() {
				return false
			}
		}
		return true
	})
	return nodes
}

// pageResult is what the page's result element shows.
type pageResult struct {
	Status     string `json:"status"`
	IdemStatus string `json:"idemStatus"`
	Key        string `json:"key"`
	Replayed   string `json:"replayed"`
	Text       string `json:"text"`
}

const readResult = `(() => { const o = document.querySelector("output[data-idem-result]");
  return {status: o.getAttribute("data-status") || "", idemStatus: o.getAttribute("data-idem-status") || "",
          key: o.getAttribute("data-key") || "", replayed: o.getAttribute("data-replayed") || "", text: o.textContent}; })()`

func TestCheckoutInChromium(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium installed (apt-get install -y chromium; .ci/run installs it): the browser test of the checkout page is skipped")
	}
	dir := t.TempDir()
	payments := startPayments(t, filepath.Join(dir))
	nodes := startCluster(t, filepath.Join(dir, "data"), payments)
	proxy := startCutProxy(t, nodes[0].GW.Addr())
	api := "http://" + nodes[1].API.Addr()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(filepath.Join(dir, "chromium")))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 4*time.Minute)
	defer cancel()

	page := "http://" + proxy.addr() + "/checkout"
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(what, expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	result := func() pageResult {
		t.Helper()
		var r pageResult
		if err := json.Unmarshal([]byte(eval("read the result", "JSON.stringify("+readResult+")")), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// fill sets the form's fields, and clears the result element of the
	// answer before.
	fill := func(user, delay string) {
		t.Helper()
		run("fill the form", chromedp.WaitReady(chromedp.ID("pay")))
		eval("clear the result", `(() => { const o = document.querySelector("output[data-idem-result]");
			  for (const a of ["data-status", "data-idem-status", "data-key", "data-replayed"]) o.removeAttribute(a);
			  o.textContent = ""; return ""; })()`)
		run("fill the form",
			chromedp.SetValue(chromedp.ID("user"), user), chromedp.SetValue(chromedp.ID("amount"), "100"),
			chromedp.SetValue(chromedp.ID("delay"), delay))
	}
	// waitFinal waits until the page shows a final answer.
	waitFinal := func(what string) pageResult {
		t.Helper()
		var r pageResult
		testsupport.WaitFor(t, what, 60*time.Second, func() bool {
			r = result()
			return r.Status != "" && r.Text != "sending…"
		})
		return r
	}
	charges := func(user string) int {
		t.Helper()
		resp, err := http.Get("http://" + payments + "/charges")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]int
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m[user]
	}
	pendingKey := func() string {
		return eval("read the pending key", `(JSON.parse(sessionStorage.getItem("idem:pending:checkout") || "{}").key) || ""`)
	}

	// submitThenReload submits a payment the bank takes 5 s over, and
	// reloads the page once the request holds its record (it reached the
	// gateway; the bank is still at it). It returns the submission's key.
	submitThenReload := func(user string) string {
		t.Helper()
		fill(user, "5s")
		run("submit", chromedp.Click(chromedp.ID("pay")))
		var key string
		testsupport.WaitFor(t, "the submission's key in sessionStorage", 10*time.Second, func() bool {
			key = pendingKey()
			return key != ""
		})
		testsupport.WaitFor(t, "the record of "+key, 10*time.Second, func() bool {
			r, err := http.Get(api + "/v1/records/pay/" + key + "?tenant=" + user)
			if err == nil {
				r.Body.Close()
			}
			return err == nil && r.StatusCode == 200
		})
		run("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("pay")))
		return key
	}

	run("open the page", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("pay")))

	t.Run("double-click on submit: one charge", func(t *testing.T) {
		fill("dora", "2s")
		before := proxy.payPosts.Load()
		// Two clicks, as fast as the DevTools protocol sends them, while
		// the bank takes 2 s: the first disables the button.
		run("double-click", chromedp.Click(chromedp.ID("pay")), chromedp.DoubleClick(chromedp.ID("pay")))
		r := waitFinal("the payment's answer")
		if r.Status != "201" || r.IdemStatus != "created" {
			t.Fatalf("answer = %+v, want 201 created", r)
		}
		if n := charges("dora"); n != 1 {
			t.Fatalf("dora was charged %d times, want 1", n)
		}
		if n := proxy.payPosts.Load() - before; n != 1 {
			t.Errorf("the page sent %d POST /pay, want 1 (the button is disabled in flight)", n)
		}
	})

	t.Run("reload mid-request, resubmit: the same key, the replay", func(t *testing.T) {
		key := submitThenReload("bob")
		if k := pendingKey(); k != key {
			t.Fatalf("after the reload the pending key is %q, want %q", k, key)
		}
		fill("bob", "")
		run("resubmit", chromedp.Click(chromedp.ID("pay")))
		r := waitFinal("the resubmission's answer")
		if r.Status != "201" || r.Key != key || r.Replayed != "true" || r.IdemStatus != "replayed" {
			t.Fatalf("answer = %+v, want the replay of 201 under key %s", r, key)
		}
		if n := charges("bob"); n != 1 {
			t.Fatalf("bob was charged %d times, want 1", n)
		}
	})

	t.Run("reload mid-request, resubmit another amount: key-reuse, stopped", func(t *testing.T) {
		key := submitThenReload("erin")
		fill("erin", "")
		run("change the amount, resubmit", chromedp.SetValue(chromedp.ID("amount"), "999"), chromedp.Click(chromedp.ID("pay")))
		r := waitFinal("the resubmission's answer")
		if r.Status != "422" || r.IdemStatus != "key-reuse" || r.Key != key {
			t.Fatalf("answer = %+v, want 422 key-reuse under key %s", r, key)
		}
		if k := pendingKey(); k != "" {
			t.Errorf("the key %s is still pending after key-reuse: the next submission would reuse it", k)
		}
		testsupport.WaitFor(t, "the first request's charge", 15*time.Second, func() bool { return charges("erin") == 1 })
	})

	var carolKey string
	t.Run("connection cut after the upstream acted: the retry replays", func(t *testing.T) {
		fill("carol", "")
		before := proxy.payPosts.Load()
		proxy.armed.Store(true)
		run("submit", chromedp.Click(chromedp.ID("pay")))
		r := waitFinal("the payment's answer")
		if proxy.cuts.Load() != 1 {
			t.Fatalf("the proxy cut %d answers, want 1", proxy.cuts.Load())
		}
		if r.Status != "201" || r.Replayed != "true" {
			t.Fatalf("answer = %+v, want the replay of 201", r)
		}
		if n := proxy.payPosts.Load() - before; n < 2 {
			t.Errorf("the page sent %d POST /pay, want a retry", n)
		}
		if n := charges("carol"); n != 1 {
			t.Fatalf("carol was charged %d times, want 1", n)
		}
		carolKey = r.Key
	})

	t.Run("a new submission: a new key", func(t *testing.T) {
		if carolKey == "" {
			t.Skip("needs the previous subtest's key")
		}
		fill("carol", "")
		run("submit again", chromedp.Click(chromedp.ID("pay")))
		var r pageResult
		testsupport.WaitFor(t, "the new payment's answer", 60*time.Second, func() bool {
			r = result()
			return r.Key != "" && r.Key != carolKey && r.Status != ""
		})
		if r.Status != "201" || r.IdemStatus != "created" || r.Replayed == "true" {
			t.Fatalf("answer = %+v, want 201 created under a new key", r)
		}
		if n := charges("carol"); n != 2 {
			t.Fatalf("carol was charged %d times, want 2 (two payments)", n)
		}
	})
}
