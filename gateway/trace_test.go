package gateway

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testcluster"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/tracing"
)

// traceUpstream answers 201 and keeps the trace context each request
// brought, by Idempotency-Key (or by X-Probe for requests without one).
type traceUpstream struct {
	addr  string
	mu    sync.Mutex
	seen  map[string][]http.Header
	holds map[string]upstreamHold
	calls int
}

// upstreamHold keeps a request in the upstream: arrived is closed when it
// comes, and it is answered once release is closed.
type upstreamHold struct{ arrived, release chan struct{} }

func startTraceUpstream(t testing.TB) *traceUpstream {
	u := &traceUpstream{seen: map[string][]http.Header{}, holds: map[string]upstreamHold{}}
	u.addr = serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Idempotency-Key") + r.Header.Get("X-Probe")
		u.mu.Lock()
		u.calls++
		u.seen[id] = append(u.seen[id], r.Header.Clone())
		h, held := u.holds[id]
		delete(u.holds, id)
		u.mu.Unlock()
		if held {
			close(h.arrived)
			select {
			case <-h.release:
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"ok":%q}`, id)
	}))
	return u
}

// hold makes the upstream keep the next request with id until release is
// called (or 10 s pass); arrived is closed when that request has come.
// The test's end releases it too.
func (u *traceUpstream) hold(t testing.TB, id string) (arrived <-chan struct{}, release func()) {
	h := upstreamHold{make(chan struct{}), make(chan struct{})}
	u.mu.Lock()
	u.holds[id] = h
	u.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(h.release) }) }
	t.Cleanup(release)
	return h.arrived, release
}

// got is the headers of the requests with id the upstream saw.
func (u *traceUpstream) got(id string) []http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[id]
}

func serveHTTP(t testing.TB, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// tracedGateways starts a gateway over each store, each node with its own
// provider exporting to endpoint at ratio, in front of up.
func tracedGateways(t testing.TB, c *testcluster.Cluster, stores []nodeStore, up string, endpoint string, ratio float64,
	tweak func(*tracing.Config)) (*gwCluster, []*tracing.Provider) {
	t.Helper()
	var provs []*tracing.Provider
	var gc *gwCluster
	for i, s := range stores {
		p := testsupport.NewTracing(t, endpoint, fmt.Sprint("n", i+1), ratio, tweak)
		provs = append(provs, p)
		if rs, ok := s.(interface{ SetTracer(trace.Tracer) }); ok { // a cluster's store: the spans of applies forwarded to it
			rs.SetTracer(p.Tracer("raftstore"))
		}
		one := startGatewaysOver(t, c, []nodeStore{s}, up, func(cfg *Config) { cfg.Tracer = p.Tracer("gateway") })
		if gc == nil {
			gc = one
			continue
		}
		gc.gws, gc.gwURLs, gc.apiURLs = append(gc.gws, one.gws...), append(gc.gwURLs, one.gwURLs...), append(gc.apiURLs, one.apiURLs...)
	}
	return gc, provs
}

// tracedPost posts a JSON body to url with headers (name, value pairs; a name
// may repeat) and returns the status.
func tracedPost(t testing.TB, url string, headers ...string) int {
	t.Helper()
	code, err := tracedSend(url, `{"amount":1}`, headers...)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// tracedSend is tracedPost with the body given, off the test's goroutine
// too.
func tracedSend(url, body string, headers ...string) (int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod("POST")
	req.Header.Set("X-User-Id", "u1")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	req.SetBodyString(body)
	if err := fasthttp.DoTimeout(req, resp, 10*time.Second); err != nil {
		return 0, err
	}
	return resp.StatusCode(), nil
}

// parent parses a traceparent: trace id, parent id, flags.
func parent(t testing.TB, tp string) (traceID, spanID, flags string) {
	t.Helper()
	p := strings.Split(tp, "-")
	if len(p) != 4 || p[0] != "00" || len(p[1]) != 32 || len(p[2]) != 16 {
		t.Fatalf("the upstream got traceparent %q, want 00-<trace id>-<span id>-<flags>", tp)
	}
	return p[1], p[2], p[3]
}

// tree checks a trace's spans against want: each "name<-parent name"
// (parent "^" for the root; "remote" for a root whose parent came from
// elsewhere), each exactly once, and nothing more.
func tree(t testing.TB, spans []testsupport.Span, remote string, want ...string) map[string]testsupport.Span {
	t.Helper()
	byID := map[string]testsupport.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var got []string
	out := map[string]testsupport.Span{}
	for _, s := range spans {
		p := "^"
		switch {
		case s.ParentID == remote && remote != "":
			p = "remote"
		case s.ParentID != "":
			ps, ok := byID[s.ParentID]
			if !ok {
				t.Errorf("span %s has parent %s, which is not in the trace", s.Name, s.ParentID)
				continue
			}
			p = ps.Name
		}
		got = append(got, s.Name+"<-"+p)
		out[s.Name+"<-"+p] = s
	}
	if strings.Join(sortStrings(got), " ") != strings.Join(sortStrings(want), " ") {
		t.Errorf("spans (name<-parent):\n got %v\nwant %v", sortStrings(got), sortStrings(want))
	}
	return out
}

func sortStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// noKey fails when any attribute of spans holds key.
func noKey(t testing.TB, spans []testsupport.Span, key string) {
	t.Helper()
	for _, s := range spans {
		for k, v := range s.Attrs {
			if strings.Contains(v, key) {
				t.Errorf("span %s attribute %s = %q holds the idempotency key", s.Name, k, v)
			}
		}
	}
}

// TestTraceSpans: on a 3-node cluster, a first request to the leader's
// gateway, its replay, a first request to a follower's gateway and one
// without a traceparent give the spans and parent links the docs show,
// and the upstream is told the trace it belongs to with the gateway's
// upstream span as its parent. A write the follower forwards is committed
// in a span of the leader's, the child of the follower's raft.forward.
// The gateway span's idempotency status is each one a request can get
// here: created, replayed, in-progress (the key's first request still at
// the upstream) and key-reuse (the key with another body); its key's
// digest is the same for every request of one key, and no attribute holds
// the key.
func TestTraceSpans(t *testing.T) {
	col := testsupport.StartCollector(t)
	up := startTraceUpstream(t)
	c := testcluster.Start(t, 3, nil)
	var stores []nodeStore
	for _, s := range c.Stores {
		stores = append(stores, s)
	}
	gc, provs := tracedGateways(t, c, stores, up.addr, col.URL, 1, nil)
	leader := c.WaitLeader(5 * time.Second)
	follower := (leader + 1) % 3
	const (
		tid  = "4bf92f3577b34da6a3ce929d0e0e4736"
		pid  = "00f067aa0ba902b7"
		tid2 = "5bf92f3577b34da6a3ce929d0e0e4737"
		tid3 = "6bf92f3577b34da6a3ce929d0e0e4738"
		tid4 = "7bf92f3577b34da6a3ce929d0e0e4739"
		tid5 = "8bf92f3577b34da6a3ce929d0e0e473a"
		tid6 = "9bf92f3577b34da6a3ce929d0e0e473b"
	)

	t.Run("first request to the leader", func(t *testing.T) {
		if code := tracedPost(t, gc.gwURLs[leader]+"/pay", "Idempotency-Key", "trace-first-key", "traceparent", "00-"+tid+"-"+pid+"-01", "tracestate", "vendor=abc"); code != 201 {
			t.Fatalf("first = %d", code)
		}
		testsupport.FlushTraces(t, provs...)
		spans := col.Trace(tid)
		s := tree(t, spans, pid, "gateway pay<-remote", "store.begin<-gateway pay", "raft.commit<-store.begin",
			"upstream<-gateway pay", "store.complete<-gateway pay", "raft.commit<-store.complete")
		gw := s["gateway pay<-remote"]
		if gw.Kind != "SPAN_KIND_SERVER" || gw.Attrs[attrRoute] != "pay" || gw.Attrs[attrStatus] != "created" ||
			len(gw.Attrs[attrKeyHash]) != 32 || gw.Attrs["http.response.status_code"] != "201" || gw.Node != fmt.Sprint("n", leader+1) {
			t.Errorf("gateway span = %+v", gw)
		}
		noKey(t, spans, "trace-first-key")
		seen := up.got("trace-first-key")
		if len(seen) != 1 {
			t.Fatalf("the upstream saw the key %d times", len(seen))
		}
		gotTrace, gotParent, flags := parent(t, seen[0].Get("traceparent"))
		if gotTrace != tid || gotParent != s["upstream<-gateway pay"].SpanID || gotParent == pid || flags != "01" {
			t.Errorf("upstream got traceparent %q, want trace %s, parent %s (the upstream span), sampled", seen[0].Get("traceparent"), tid, s["upstream<-gateway pay"].SpanID)
		}
		if ts := seen[0].Get("tracestate"); ts != "vendor=abc" {
			t.Errorf("upstream got tracestate %q, want vendor=abc", ts)
		}
	})

	t.Run("replay", func(t *testing.T) {
		if code := tracedPost(t, gc.gwURLs[leader]+"/pay", "Idempotency-Key", "trace-first-key", "traceparent", "00-"+tid2+"-"+pid+"-01"); code != 201 {
			t.Fatalf("replay = %d", code)
		}
		testsupport.FlushTraces(t, provs...)
		spans := col.Trace(tid2)
		s := tree(t, spans, pid, "gateway pay<-remote")
		if st := s["gateway pay<-remote"].Attrs[attrStatus]; st != "replayed" {
			t.Errorf("replay's idempotency status = %q, want replayed", st)
		}
		noKey(t, spans, "trace-first-key")
		if n := len(up.got("trace-first-key")); n != 1 {
			t.Errorf("the upstream saw the key %d times, want 1", n)
		}
	})

	t.Run("in progress", func(t *testing.T) {
		const key = "trace-busy-key"
		arrived, release := up.hold(t, key)
		first := make(chan error, 1)
		go func() {
			code, err := tracedSend(gc.gwURLs[leader]+"/pay", `{"amount":1}`, "Idempotency-Key", key, "traceparent", "00-"+tid4+"-"+pid+"-01")
			if err == nil && code != 201 {
				err = fmt.Errorf("status %d, want 201", code)
			}
			first <- err
		}()
		select {
		case <-arrived:
		case err := <-first:
			t.Fatalf("the first request ended before it reached the upstream: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("the first request did not reach the upstream in 10 s")
		}
		if code := tracedPost(t, gc.gwURLs[leader]+"/pay", "Idempotency-Key", key, "traceparent", "00-"+tid5+"-"+pid+"-01"); code != 409 {
			t.Errorf("the key's second request while the first runs = %d, want 409", code)
		}
		release()
		if err := <-first; err != nil { // bounded: tracedSend's 10 s
			t.Fatalf("the first request: %v", err)
		}
		testsupport.FlushTraces(t, provs...)
		busy := col.Trace(tid5)
		s := tree(t, busy, pid, "gateway pay<-remote", "store.begin<-gateway pay", "raft.commit<-store.begin")
		ran := col.Trace(tid4)
		s1 := tree(t, ran, pid, "gateway pay<-remote", "store.begin<-gateway pay", "raft.commit<-store.begin",
			"upstream<-gateway pay", "store.complete<-gateway pay", "raft.commit<-store.complete")
		gw, gw1 := s["gateway pay<-remote"], s1["gateway pay<-remote"]
		if gw.Attrs[attrStatus] != "in-progress" || gw.Attrs["http.response.status_code"] != "409" || gw.Attrs[attrRoute] != "pay" {
			t.Errorf("in-progress gateway span = %+v, want idempotency status in-progress, 409", gw)
		}
		if gw1.Attrs[attrStatus] != "created" || len(gw.Attrs[attrKeyHash]) != 32 || gw.Attrs[attrKeyHash] != gw1.Attrs[attrKeyHash] {
			t.Errorf("the first request's span %+v, want created and the key digest of the in-progress one %+v", gw1, gw)
		}
		noKey(t, append(busy, ran...), key)
		if n := len(up.got(key)); n != 1 {
			t.Errorf("the upstream saw the key %d times, want 1", n)
		}
	})

	t.Run("key reuse", func(t *testing.T) {
		code, err := tracedSend(gc.gwURLs[leader]+"/pay", `{"amount":2}`, "Idempotency-Key", "trace-first-key", "traceparent", "00-"+tid6+"-"+pid+"-01")
		if err != nil || code != 422 {
			t.Fatalf("the key with another body = %d %v, want 422", code, err)
		}
		testsupport.FlushTraces(t, provs...)
		spans := col.Trace(tid6)
		s := tree(t, spans, pid, "gateway pay<-remote")
		if gw := s["gateway pay<-remote"]; gw.Attrs[attrStatus] != "key-reuse" || gw.Attrs["http.response.status_code"] != "422" || len(gw.Attrs[attrKeyHash]) != 32 {
			t.Errorf("key-reuse gateway span = %+v, want idempotency status key-reuse, 422", gw)
		}
		noKey(t, spans, "trace-first-key")
		if n := len(up.got("trace-first-key")); n != 1 {
			t.Errorf("the upstream saw the key %d times, want 1", n)
		}
	})

	t.Run("first request to a follower", func(t *testing.T) {
		if code := tracedPost(t, gc.gwURLs[follower]+"/pay", "Idempotency-Key", "trace-follower-key", "traceparent", "00-"+tid3+"-"+pid+"-01"); code != 201 {
			t.Fatalf("first = %d", code)
		}
		testsupport.FlushTraces(t, provs...)
		spans := col.Trace(tid3)
		s := tree(t, spans, pid, "gateway pay<-remote", "store.begin<-gateway pay", "raft.forward<-store.begin",
			"upstream<-gateway pay", "store.complete<-gateway pay", "raft.forward<-store.complete",
			"raft.commit<-raft.forward", "raft.commit<-raft.forward")
		for _, name := range []string{"raft.forward<-store.begin", "raft.forward<-store.complete"} {
			if sp := s[name]; sp.Attrs["idemgate.leader"] != c.Stores[leader].NodeID() || sp.Node != fmt.Sprint("n", follower+1) || sp.Kind != "SPAN_KIND_CLIENT" {
				t.Errorf("%s = %+v, want the leader %s named, made on the follower", name, sp, c.Stores[leader].NodeID())
			}
		}
		// The leader's commit of each forwarded write: its own span, a
		// child of that write's raft.forward (tree checked the parent's
		// name; here each forward has one commit, made on the leader).
		forwards := map[string]int{s["raft.forward<-store.begin"].SpanID: 0, s["raft.forward<-store.complete"].SpanID: 0}
		for _, sp := range spans {
			if sp.Name != "raft.commit" {
				continue
			}
			forwards[sp.ParentID]++
			if sp.Node != fmt.Sprint("n", leader+1) || sp.Kind != "SPAN_KIND_SERVER" || sp.Attrs["idemgate.forwarded"] != "true" {
				t.Errorf("raft.commit of a forwarded write = %+v, want a server span made on the leader n%d", sp, leader+1)
			}
		}
		for id, n := range forwards {
			if n != 1 {
				t.Errorf("raft.forward %s has %d raft.commit children on the leader, want 1", id, n)
			}
		}
		seen := up.got("trace-follower-key")
		if len(seen) != 1 {
			t.Fatalf("the upstream saw the key %d times", len(seen))
		}
		if gotTrace, gotParent, _ := parent(t, seen[0].Get("traceparent")); gotTrace != tid3 || gotParent != s["upstream<-gateway pay"].SpanID {
			t.Errorf("upstream got traceparent %q", seen[0].Get("traceparent"))
		}
	})

	t.Run("no traceparent: a trace of its own", func(t *testing.T) {
		if code := tracedPost(t, gc.gwURLs[leader]+"/pay", "Idempotency-Key", "trace-fresh-key"); code != 201 {
			t.Fatalf("first = %d", code)
		}
		testsupport.FlushTraces(t, provs...)
		seen := up.got("trace-fresh-key")
		if len(seen) != 1 {
			t.Fatalf("the upstream saw the key %d times", len(seen))
		}
		gotTrace, gotParent, _ := parent(t, seen[0].Get("traceparent"))
		s := tree(t, col.Trace(gotTrace), "", "gateway pay<-^", "store.begin<-gateway pay", "raft.commit<-store.begin",
			"upstream<-gateway pay", "store.complete<-gateway pay", "raft.commit<-store.complete")
		if s["upstream<-gateway pay"].SpanID != gotParent {
			t.Errorf("upstream's parent %s is not the upstream span %s", gotParent, s["upstream<-gateway pay"].SpanID)
		}
	})
}

// TestTraceHostileContext: a traceparent that does not parse is ignored
// whole (the request starts a trace of its own), a tracestate that does
// not parse is dropped and its traceparent kept, a long one is cut as the
// W3C recommendation says; every request is answered as without tracing.
func TestTraceHostileContext(t *testing.T) {
	col := testsupport.StartCollector(t)
	up := startTraceUpstream(t)
	gc, provs := tracedGateways(t, nil, []nodeStore{memstore.New(t)}, up.addr, col.URL, 1, nil)
	const (
		tid = "4bf92f3577b34da6a3ce929d0e0e4736"
		pid = "00f067aa0ba902b7"
	)
	good := "00-" + tid + "-" + pid + "-01"
	member := func(i, n int) string {
		return fmt.Sprintf("v%d=%s", i, strings.Repeat("x", n-len(fmt.Sprintf("v%d=", i))))
	}
	list := func(n, size int) string {
		var m []string
		for i := range n {
			m = append(m, member(i, size))
		}
		return strings.Join(m, ",")
	}
	tests := []struct {
		name    string
		headers []string
		kept    bool   // the trace continues the one sent (else a trace of its own)
		state   string // the tracestate the upstream gets
		sampled bool
	}{
		{"valid", []string{"traceparent", good}, true, "", true},
		{"valid, not sampled", []string{"traceparent", "00-" + tid + "-" + pid + "-00"}, true, "", false},
		{"all-zero trace id", []string{"traceparent", "00-" + strings.Repeat("0", 32) + "-" + pid + "-01"}, false, "", true},
		{"all-zero parent id", []string{"traceparent", "00-" + tid + "-" + strings.Repeat("0", 16) + "-01"}, false, "", true},
		{"version ff", []string{"traceparent", "ff-" + tid + "-" + pid + "-01"}, false, "", true},
		{"upper-case hex", []string{"traceparent", "00-" + strings.ToUpper(tid) + "-" + pid + "-01"}, false, "", true},
		{"short trace id", []string{"traceparent", "00-" + tid[:30] + "-" + pid + "-01"}, false, "", true},
		{"version 00 with a fifth field", []string{"traceparent", good + "-extra"}, false, "", true},
		{"not hex", []string{"traceparent", "00-" + strings.Repeat("z", 32) + "-" + pid + "-01"}, false, "", true},
		{"garbage", []string{"traceparent", "hello"}, false, "", true},
		{"empty", []string{"traceparent", ""}, false, "", true},
		{"huge", []string{"traceparent", strings.Repeat("0", 2000)}, false, "", true},
		{"two traceparents", []string{"traceparent", good, "traceparent", "00-" + tid + "-1111111111111111-01"}, false, "", true},
		{"a later version's extra fields", []string{"traceparent", "01-" + tid + "-" + pid + "-01-extra"}, true, "", true},
		{"tracestate kept", []string{"traceparent", good, "tracestate", "a=1,b=2"}, true, "a=1,b=2", true},
		{"two tracestates are one list", []string{"traceparent", good, "tracestate", "a=1", "tracestate", "b=2"}, true, "a=1,b=2", true},
		{"malformed tracestate dropped", []string{"traceparent", good, "tracestate", "a=1,=x,b"}, true, "", true},
		{"33 members dropped", []string{"traceparent", good, "tracestate", list(33, 5)}, true, "", true},
		{"long members dropped first", []string{"traceparent", good, "tracestate", "a=1," + list(3, 200) + ",b=2"}, true, "a=1,b=2", true},
		{"cut from the end to 512", []string{"traceparent", good, "tracestate", list(8, 100)}, true, list(5, 100), true},
		{"tracestate without traceparent", []string{"tracestate", "a=1"}, false, "", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each case a trace id of its own, so that its spans are its own.
			tid := fmt.Sprintf("%s%04x", tid[:28], i)
			var headers []string
			for _, h := range tt.headers {
				h = strings.ReplaceAll(h, "4bf92f3577b34da6a3ce929d0e0e4736", tid)
				headers = append(headers, strings.ReplaceAll(h, strings.ToUpper("4bf92f3577b34da6a3ce929d0e0e4736"), strings.ToUpper(tid)))
			}
			probe := fmt.Sprint("probe-", i)
			if code := tracedPost(t, gc.gwURLs[0]+"/other", append(headers, "X-Probe", probe)...); code != 201 {
				t.Fatalf("status %d, want 201", code)
			}
			seen := up.got(probe)
			if len(seen) != 1 {
				t.Fatalf("the upstream saw %d requests", len(seen))
			}
			if n := len(seen[0].Values("traceparent")); n != 1 {
				t.Fatalf("the upstream got %d traceparent headers", n)
			}
			gotTrace, gotParent, flags := parent(t, seen[0].Get("traceparent"))
			if (gotTrace == tid) != tt.kept || gotParent == pid {
				t.Errorf("upstream's traceparent %q: continued the trace sent = %v, want %v (with a parent of the gateway's)", seen[0].Get("traceparent"), gotTrace == tid, tt.kept)
			}
			if want := map[bool]string{true: "01", false: "00"}[tt.sampled]; flags != want {
				t.Errorf("upstream's flags %s, want %s", flags, want)
			}
			if got := strings.Join(seen[0].Values("tracestate"), ","); got != tt.state {
				t.Errorf("upstream's tracestate %q, want %q", got, tt.state)
			}
			testsupport.FlushTraces(t, provs...)
			spans := col.Trace(gotTrace)
			if !tt.sampled {
				if len(spans) != 0 {
					t.Errorf("an unsampled trace exported %d spans", len(spans))
				}
				return
			}
			remote := ""
			if tt.kept {
				remote = pid
			}
			root := "^"
			if tt.kept {
				root = "remote"
			}
			tree(t, spans, remote, "gateway<-"+root, "upstream<-gateway")
		})
	}
}

// TestTraceCollectorTrouble: a collector that does not answer, or cannot
// be reached, costs spans (dropped at the full queue, or lost with a
// failed export, and counted) and never a request: every one is answered.
func TestTraceCollectorTrouble(t *testing.T) {
	small := func(c *tracing.Config) {
		c.QueueSize, c.BatchSize, c.BatchTimeout, c.ExportTimeout = 4, 2, 10*time.Millisecond, 300*time.Millisecond
	}
	t.Run("slow collector", func(t *testing.T) {
		col := testsupport.StartCollector(t)
		col.Hold()
		up := startTraceUpstream(t)
		gc, provs := tracedGateways(t, nil, []nodeStore{memstore.New(t)}, up.addr, col.URL, 1, func(c *tracing.Config) {
			small(c)
			c.ExportTimeout = time.Minute // held longer than the test
		})
		for i := range 40 {
			if code := tracedPost(t, gc.gwURLs[0]+"/pay", "Idempotency-Key", fmt.Sprint("slow-", i)); code != 201 {
				t.Fatalf("request %d: status %d", i, code)
			}
		}
		// Requests answered: 40 gateway spans, and as many upstream spans,
		// store.begin and store.complete ones; a queue of 4 behind a held
		// export can have taken at most 4 + 2 of them.
		st := provs[0].Stats()
		if st.Dropped < 40*4-6 || st.Exported != 0 {
			t.Errorf("stats %+v: want at least %d dropped, none exported", st, 40*4-6)
		}
		if col.Exports.Load() == 0 {
			t.Error("no export reached the collector")
		}
	})
	t.Run("unreachable collector", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		endpoint := "http://" + ln.Addr().String() + "/v1/traces"
		ln.Close() // nothing listens there now
		up := startTraceUpstream(t)
		gc, provs := tracedGateways(t, nil, []nodeStore{memstore.New(t)}, up.addr, endpoint, 1, small)
		for i := range 20 {
			if code := tracedPost(t, gc.gwURLs[0]+"/pay", "Idempotency-Key", fmt.Sprint("gone-", i)); code != 201 {
				t.Fatalf("request %d: status %d", i, code)
			}
		}
		testsupport.FlushTraces(t, provs...)
		if st := provs[0].Stats(); st.Exported != 0 || st.Dropped+st.Failed != 20*4 {
			t.Errorf("stats %+v: want every one of %d spans dropped or failed, none exported", st, 20*4)
		}
	})
}
