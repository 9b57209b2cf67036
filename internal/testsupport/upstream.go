// Package testsupport is what idemgate's tests share: the counting upstream
// in front of which they run the listeners, one HTTP helper, a log capture,
// and waiting for a condition. It never ships in the binary.
package testsupport

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TB is what Start needs of a test (testing.TB has it).
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// Upstream is a real HTTP server on a loopback port that "charges": it
// counts executions per Idempotency-Key and answers with a body unique to
// each execution, so a replay that is not byte-identical, or a second
// execution, is visible.
type Upstream struct {
	Addr  string       // host:port
	Calls atomic.Int64 // requests served
	Delay atomic.Int64 // nanoseconds every request waits (also X-Delay: a Go duration under 5 s)
	// Status, when set for a path, is answered instead of 201.
	Status sync.Map // path -> int

	srv   *http.Server
	mu    sync.Mutex
	byKey map[string]int
}

// Start serves an Upstream until the test ends.
func Start(t TB) *Upstream {
	t.Helper()
	u := &Upstream{byKey: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Addr = ln.Addr().String()
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve), ReadHeaderTimeout: 5 * time.Second}
	go u.srv.Serve(ln)
	t.Cleanup(func() { u.srv.Close() })
	return u
}

// Close stops the upstream at once (an upstream that went down).
func (u *Upstream) Close() { u.srv.Close() }

// Handler serves this upstream's answers and counts (to bring it back on
// another listener: an upstream restarting on its port).
func (u *Upstream) Handler() http.Handler { return http.HandlerFunc(u.serve) }

// Executions is how many times key reached the upstream.
func (u *Upstream) Executions(key string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.byKey[key]
}

// ByKey is a copy of the executions of every key.
func (u *Upstream) ByKey() map[string]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[string]int, len(u.byKey))
	for k, n := range u.byKey {
		out[k] = n
	}
	return out
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := u.Calls.Add(1)
	key := r.Header.Get("Idempotency-Key")
	u.mu.Lock()
	u.byKey[key]++
	u.mu.Unlock()
	if d := u.Delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	if d, err := time.ParseDuration(r.Header.Get("X-Delay")); err == nil && d < 5*time.Second {
		time.Sleep(d)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Execution", strconv.FormatInt(n, 10))
	w.Header().Set("Set-Cookie", "session=secret")
	w.Header().Set("X-Request-Id-Seen", r.Header.Get("X-Request-Id"))
	w.Header().Set("X-Forwarded-For-Seen", strings.Join(r.Header.Values("X-Forwarded-For"), " | "))
	w.Header().Set("X-Forwarded-Proto-Seen", strings.Join(r.Header.Values("X-Forwarded-Proto"), " | "))
	// ?fat=N: N KiB of response headers, in headers of 1 KiB.
	if n, _ := strconv.Atoi(r.URL.Query().Get("fat")); n > 0 {
		for i := range n {
			w.Header().Set(fmt.Sprintf("X-Fat-%d", i), strings.Repeat("f", 1024-len("X-Fat-000: \r\n")))
		}
	}
	status := http.StatusCreated
	if s, ok := u.Status.Load(r.URL.Path); ok {
		status = s.(int)
	}
	if r.URL.Path == "/big" {
		w.WriteHeader(status)
		w.Write([]byte(strings.Repeat("x", 4096)))
		return
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"execution":%d,"key":%q,"user":%q,"body":%q}`, n, key, r.Header.Get("X-User-Id"), body)
}
