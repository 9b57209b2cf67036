package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemgate/idemgate/internal/democluster"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/node"
)

// The timings the consumers run with: an ack wait shorter than the lease,
// so JetStream delivers a message again while its first delivery still
// holds the claims, and a lease long enough to outlive a leader election
// between two renews.
const (
	testAckWait = time.Second
	testLease   = 5 * time.Second
)

// fault is what the service or the API proxy does to a message's first
// call of one side effect.
type fault int

const (
	// killBefore: the service holds the call, kills its consumer and
	// counts nothing: killed before the side effect.
	killBefore fault = iota + 1
	// slow: the service answers after more than the ack wait and the
	// lease: the message is delivered again while the first holder runs
	// and renews.
	slow
	// killAfterComplete (points only, at the API proxy): the complete is
	// stored, its answer never reaches the consumer, which is killed: the
	// ack is never sent.
	killAfterComplete
	// huge: the service answers 2 MiB, more than a claim's result may
	// hold.
	huge
	// pause: the service holds the call and stops its consumer (SIGSTOP),
	// counting nothing, until the consumer gives the call up.
	pause
)

// service is the SMS and points service: it counts every call it takes,
// per message id and side effect.
type service struct {
	rig    *rig
	mu     sync.Mutex
	counts map[string]map[string]int // "sms"/"points" -> id -> calls
	faults map[string]fault          // "sms/id" -> what its first call meets
	fired  map[string]bool
	total  atomic.Int64
	// paused receives the name of a consumer a pause stopped; after
	// resumed is closed, held receives whether the consumer gave its call
	// up (uncounted) within 20 s, or the service went on and counted it.
	paused  chan string
	resumed chan struct{}
	held    chan bool
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Read the body first: only then does the server watch the connection,
	// and cancel r's context when the caller gives the call up.
	io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	effect := strings.TrimPrefix(r.URL.Path, "/")
	id := r.Header.Get("X-Message-Id")
	if r.Method != http.MethodPost || (effect != "sms" && effect != "points") || id == "" ||
		r.Header.Get("X-Idempotency-Key") != effect+":"+id {
		http.Error(w, "bad call", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	f := s.faults[effect+"/"+id]
	if f != 0 && f != killAfterComplete && !s.fired[effect+"/"+id] {
		s.fired[effect+"/"+id] = true
	} else if f != killAfterComplete {
		f = 0
	}
	if f == killBefore {
		s.mu.Unlock()
		s.rig.kill(r.UserAgent())
		return
	}
	if f == pause {
		s.mu.Unlock()
		s.rig.signal(r.UserAgent(), syscall.SIGSTOP)
		s.paused <- r.UserAgent()
		<-s.resumed
		select {
		case <-r.Context().Done(): // the consumer, resumed, gave the call up
			s.held <- true
			return
		case <-time.After(20 * time.Second): // it did not: the SMS goes out
			s.held <- false
		}
	}
	s.mu.Unlock()
	if f == slow {
		time.Sleep(testLease + testAckWait)
	}
	s.mu.Lock()
	s.counts[effect][id]++
	s.mu.Unlock()
	s.total.Add(1)
	if f == huge {
		w.Write(bytes.Repeat([]byte("x"), 2<<20))
		return
	}
	fmt.Fprintf(w, "%s sent for %s", effect, id)
}

func (s *service) count(effect, id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[effect][id]
}

// proc is one consumer's process.
type proc struct {
	name  string
	mu    sync.Mutex
	cmd   *exec.Cmd
	log   testsupport.Buffer
	kills int
}

// rig is a 3-node idemgate cluster behind one API proxy per node, an
// embedded NATS server with JetStream, the service, and consumers.
type rig struct {
	t        *testing.T
	nodes    []*node.Node
	proxies  []string
	js       jetstream.JetStream
	svc      *service
	bin      string
	natsURL  string
	stopping atomic.Bool
	start    func(name string) // starts a consumer and keeps it running
	wg       sync.WaitGroup
	// mu guards procs and completes: the ids whose points complete kills
	// its consumer once stored.
	mu        sync.Mutex
	procs     map[string]*proc
	completes map[string]bool
	stopped   map[*node.Node]bool // the nodes the test stopped
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, procs: map[string]*proc{}, completes: map[string]bool{}, stopped: map[*node.Node]bool{}}
	r.svc = &service{rig: r, counts: map[string]map[string]int{"sms": {}, "points": {}}, faults: map[string]fault{}, fired: map[string]bool{},
		paused: make(chan string, 1), resumed: make(chan struct{}), held: make(chan bool, 1)}
	dir := t.TempDir()
	r.bin = filepath.Join(dir, "smsconsumer")
	if out, err := exec.Command("go", "build", "-o", r.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the consumer: %v\n%s", err, out)
	}
	// idemgate: the gateway is not used; its upstream is a port nobody
	// listens on.
	free, err := loopback.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	nodes, _, err := democluster.Start(filepath.Join(dir, "idemgate"), 3, free[0], false)
	if err != nil {
		t.Fatal(err)
	}
	r.nodes = nodes
	t.Cleanup(func() {
		for _, n := range nodes {
			r.mu.Lock()
			skip := r.stopped[n]
			r.mu.Unlock()
			if !skip {
				n.Stop(time.Second)
			}
		}
	})
	for _, n := range nodes {
		r.proxies = append(r.proxies, r.proxy(t, "http://"+n.API.Addr()))
	}
	// NATS with JetStream, on loopback, its store in the temp dir.
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: filepath.Join(dir, "nats"), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats is not ready")
	}
	r.natsURL = ns.ClientURL()
	nc, err := nats.Connect(r.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if r.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	// A short duplicates window: the hostile test publishes an id again,
	// with another body, after it.
	if _, err := r.js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "SIGNUPS",
		Subjects: []string{"signups.>"}, Duplicates: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r.svc, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	svcURL := "http://" + l.Addr().String()
	r.start = func(name string) { r.startProc(name, svcURL) }
	t.Cleanup(r.stop)
	return r
}

// proxy forwards to one node's API. A node that is down aborts the
// connection, as the node itself would, so the client goes to the next.
// A points complete of an id in r.completes, once stored, kills its
// consumer before the answer leaves.
func (r *rig) proxy(t *testing.T, target string) string {
	u, _ := url.Parse(target)
	p := httputil.NewSingleHostReverseProxy(u)
	p.ErrorHandler = func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) }
	p.ModifyResponse = func(resp *http.Response) error {
		path := resp.Request.URL.Path
		id, ok := strings.CutPrefix(path, "/v1/once/points/")
		if !ok || !strings.HasSuffix(id, "/complete") || resp.StatusCode != http.StatusOK {
			return nil
		}
		id = strings.TrimSuffix(id, "/complete")
		r.mu.Lock()
		hit := r.completes[id]
		delete(r.completes, id)
		r.mu.Unlock()
		if !hit {
			return nil
		}
		r.kill(resp.Request.UserAgent())
		return errors.New("the consumer was killed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// kill SIGKILLs the consumer name (a User-Agent); its supervisor starts it
// again.
func (r *rig) kill(name string) { r.signal(name, syscall.SIGKILL) }

// signal sends sig to the consumer name's process.
func (r *rig) signal(name string, sig syscall.Signal) {
	r.mu.Lock()
	p := r.procs[name]
	r.mu.Unlock()
	if p == nil {
		r.t.Errorf("signal: no consumer %q", name)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if sig == syscall.SIGKILL {
		p.kills++
	}
	p.cmd.Process.Signal(sig)
}

// startProc starts the consumer name and starts it again whenever it
// dies, until the rig stops.
func (r *rig) startProc(name, svcURL string) {
	p := &proc{name: name}
	r.mu.Lock()
	r.procs[name] = p
	r.mu.Unlock()
	run := func() error {
		cmd := exec.Command(r.bin, "-name", name, "-nats", r.natsURL, "-stream", "SIGNUPS", "-consumer", "welcome",
			"-apis", strings.Join(r.proxies, ","), "-service", svcURL, "-lease", testLease.String(), "-ack-wait", testAckWait.String(),
			"-call-timeout", time.Minute.String()) // longer than any pause: a call is given up because the claim was lost
		p.mu.Lock()
		cmd.Stdout, cmd.Stderr = &p.log, &p.log
		p.cmd = cmd
		err := cmd.Start()
		p.mu.Unlock()
		if err != nil {
			return err
		}
		return cmd.Wait()
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for !r.stopping.Load() {
			err := run()
			fmt.Fprintf(&p.log, "--- %s exited: %v\n", name, err)
		}
	}()
}

// stop ends every consumer (SIGTERM) and waits for them.
func (r *rig) stop() {
	if r.stopping.Swap(true) {
		return
	}
	for _, p := range r.procs {
		p.mu.Lock()
		if p.cmd != nil && p.cmd.Process != nil {
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
		p.mu.Unlock()
	}
	r.wg.Wait()
	if r.t.Failed() {
		for _, p := range r.procs {
			r.t.Logf("consumer %s's log:\n%s", p.name, p.log.String())
		}
	}
}

// publish publishes body under the id.
func (r *rig) publish(id, body string) {
	if _, err := r.js.Publish(context.Background(), "signups.new", []byte(body), jetstream.WithMsgID(id)); err != nil {
		r.t.Fatalf("publish %s: %v", id, err)
	}
}

// acked reports whether the consumer acked every message of the stream.
func (r *rig) acked(n uint64) bool {
	c, err := r.js.Consumer(context.Background(), "SIGNUPS", "welcome")
	if err != nil {
		return false
	}
	info, err := c.Info(context.Background())
	return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.AckFloor.Stream == n
}

// claim reads a once claim through a live node.
func (r *rig) claim(scope, id string) (state string, result []byte) {
	for _, p := range r.proxies {
		resp, err := http.Get(p + "/v1/once/" + scope + "/" + id)
		if err != nil {
			continue
		}
		var c struct {
			State  string `json:"state"`
			Result []byte `json:"result"`
		}
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err == nil && resp.StatusCode == 200 {
			return c.State, c.Result
		}
	}
	return "", nil
}

// TestExactlyOnceAcrossCrashes: 40 sign-ups consumed by two consumer
// processes while they are killed before a side effect, between the SMS
// and the points, after the points' complete and before the ack (the ack
// lost), while a side effect outlasts the ack wait (a second delivery
// runs beside the first), while each killed consumer restarts, and while
// idemgate's leader is stopped halfway. At the end every message's SMS
// was sent once and its points added once, and the stream is fully acked.
func TestExactlyOnceAcrossCrashes(t *testing.T) {
	r := newRig(t)
	const n = 40
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("signup-%03d", i)
	}
	r.svc.faults["sms/"+ids[3]] = killBefore
	r.svc.faults["sms/"+ids[17]] = killBefore
	r.svc.faults["points/"+ids[8]] = killBefore
	r.svc.faults["points/"+ids[26]] = killBefore
	r.svc.faults["sms/"+ids[5]] = slow
	r.svc.faults["points/"+ids[30]] = slow
	r.completes[ids[12]] = true
	r.completes[ids[33]] = true
	for _, id := range ids {
		r.publish(id, fmt.Sprintf(`{"user":%q,"phone":"+4912345"}`, id))
	}
	// The leader stops once half the side effects are done.
	var leaderStopped atomic.Bool
	leaderDone := make(chan struct{})
	go func() {
		defer close(leaderDone)
		for r.svc.total.Load() < n && !r.stopping.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		for _, nd := range r.nodes {
			if nd.Store.IsLeader() {
				r.mu.Lock()
				r.stopped[nd] = true
				r.mu.Unlock()
				nd.Stop(time.Second)
				leaderStopped.Store(true)
				return
			}
		}
	}()
	r.start("c1")
	r.start("c2")
	testsupport.WaitFor(t, "every side effect and every ack", 3*time.Minute, func() bool {
		for _, id := range ids {
			if r.svc.count("sms", id) == 0 || r.svc.count("points", id) == 0 {
				return false
			}
		}
		return r.acked(n)
	})
	r.stop()
	<-leaderDone
	for _, id := range ids {
		for _, effect := range []string{"sms", "points"} {
			if got := r.svc.count(effect, id); got != 1 {
				t.Errorf("%s of %s: %d calls, want 1", effect, id, got)
			}
			if state, _ := r.claim(effect, id); state != "completed" {
				t.Errorf("claim %s/%s: %q", effect, id, state)
			}
		}
	}
	if !r.acked(n) {
		t.Error("the stream is not fully acked after the consumers stopped")
	}
	if !leaderStopped.Load() {
		t.Error("the leader was not stopped")
	}
	kills := r.procs["c1"].kills + r.procs["c2"].kills
	r.svc.mu.Lock()
	fired := len(r.svc.fired)
	r.svc.mu.Unlock()
	r.mu.Lock()
	left := len(r.completes)
	r.mu.Unlock()
	if kills != 6 || fired != 6 || left != 0 {
		t.Errorf("%d kills, %d service faults fired (want 6 and 6), %d kills after complete left", kills, fired, left)
	}
	t.Logf("%d messages, %d consumer kills, leader stopped", n, kills)
}

// TestConsumerHostile: what the consumer meets from its publisher and its
// service. An id published again with another body is the publisher's bug:
// the claim refuses it (key reuse), no side effect runs, and the message is
// terminated, not redelivered forever. A service answering 2 MiB (more
// than a claim's result may hold) is called once and the message acked:
// the claim stores the answer's first 64 KiB. Neither scope has a
// retention configured: the default keeps the claims.
func TestConsumerHostile(t *testing.T) {
	r := newRig(t)
	r.svc.faults["sms/huge-1"] = huge
	r.publish("reused-1", `{"user":"a"}`)
	r.publish("huge-1", `{"user":"b"}`)
	r.start("c1")
	testsupport.WaitFor(t, "the first two messages", time.Minute, func() bool { return r.acked(2) })
	time.Sleep(300 * time.Millisecond) // past the stream's duplicates window
	r.publish("reused-1", `{"user":"someone else"}`)
	r.publish("after-1", `{"user":"c"}`)
	testsupport.WaitFor(t, "the reused id terminated and the next message acked", time.Minute, func() bool { return r.acked(4) })
	r.stop()
	for _, c := range []struct {
		effect, id string
		want       int
	}{{"sms", "reused-1", 1}, {"points", "reused-1", 1}, {"sms", "huge-1", 1}, {"points", "huge-1", 1}, {"sms", "after-1", 1}} {
		if got := r.svc.count(c.effect, c.id); got != c.want {
			t.Errorf("%s of %s: %d calls, want %d", c.effect, c.id, got, c.want)
		}
	}
	if state, result := r.claim("sms", "huge-1"); state != "completed" || len(result) != 64<<10 {
		t.Errorf("claim sms/huge-1: %q with %d bytes", state, len(result))
	}
	if state, result := r.claim("sms", "reused-1"); state != "completed" || string(result) != "sms sent for reused-1" {
		t.Errorf("claim sms/reused-1: %q %q", state, result)
	}
	if log := r.procs["c1"].log.String(); !strings.Contains(log, "key reuse, terminated") {
		t.Errorf("the consumer's log does not say it terminated the reused id:\n%s", log)
	}
}

// TestPausedHolder: a consumer stopped (SIGSTOP) in the middle of its SMS
// call, past its lease, as a long GC pause or a frozen VM would: the
// message's next delivery takes the claim over and sends the SMS; the
// paused consumer, resumed, finds its renew refused (the claim is another's
// now) and gives its call up (its context cancelled) before the SMS service
// gets to it; a consumer that went on would have its SMS sent, 20 s later.
// One SMS, the takeover's result stored, and the resumed consumer goes on.
func TestPausedHolder(t *testing.T) {
	r := newRig(t)
	r.svc.faults["sms/paused-1"] = pause
	r.publish("paused-1", `{"user":"p"}`)
	r.start("c1")
	r.start("c2")
	var stopped string
	select {
	case stopped = <-r.svc.paused:
	case <-time.After(time.Minute):
		t.Fatal("no consumer took paused-1's SMS")
	}
	testsupport.WaitFor(t, "the other consumer to send the SMS and ack", 2*time.Minute, func() bool {
		return r.svc.count("sms", "paused-1") == 1 && r.svc.count("points", "paused-1") == 1 && r.acked(1)
	})
	r.signal(stopped, syscall.SIGCONT)
	close(r.svc.resumed)
	if gaveUp := <-r.svc.held; !gaveUp {
		t.Errorf("%s, resumed, did not give its SMS call up: its renew was refused, yet it went on", stopped)
	}
	r.publish("after-1", `{"user":"q"}`)
	testsupport.WaitFor(t, "the next message", time.Minute, func() bool { return r.acked(2) })
	r.stop()
	if got := r.svc.count("sms", "paused-1"); got != 1 {
		t.Errorf("sms of paused-1: %d calls, want 1", got)
	}
	if state, result := r.claim("sms", "paused-1"); state != "completed" || string(result) != "sms sent for paused-1" {
		t.Errorf("claim sms/paused-1: %q %q", state, result)
	}
	if got := r.svc.count("sms", "after-1"); got != 1 {
		t.Errorf("sms of after-1: %d calls, want 1", got)
	}
}

// TestDocsShowTheCode: docs/client.md's excerpt of handle is the code, as
// it is in main.go.
func TestDocsShowTheCode(t *testing.T) {
	doc, err := os.ReadFile("../../docs/client.md")
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- smsconsumer: handle -->\n```go\n")
	if !ok {
		t.Fatal("docs/client.md has no smsconsumer excerpt")
	}
	block, _, ok = strings.Cut(block, "```\n")
	if !ok || strings.Count(block, "\n") < 5 {
		t.Fatalf("docs/client.md's smsconsumer excerpt is not closed or is empty: %q", block)
	}
	if !strings.Contains(string(code), block) {
		t.Errorf("docs/client.md's excerpt is not main.go's code:\n%s", block)
	}
}
