package testsupport

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path"
	"time"
)

// MustDo is Do that fails t on an error.
func MustDo(t Failer, method, url, body string, hdr ...string) Reply {
	t.Helper()
	r, err := Do(method, url, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// MustPostJSON is MustDo for the JSON endpoints, which refuse a body not
// declared application/json.
func MustPostJSON(t Failer, url, body string, hdr ...string) Reply {
	t.Helper()
	return MustDo(t, "POST", url, body, append([]string{"Content-Type", "application/json"}, hdr...)...)
}

// ProblemType is the slug of the problem document r carries (the last
// path element of its type); it fails t when r is no problem document.
func (r Reply) ProblemType(t Failer) string {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("error answer has Content-Type %q, body %s", ct, r.Body)
	}
	var p struct{ Type string }
	if err := json.Unmarshal([]byte(r.Body), &p); err != nil {
		t.Fatalf("problem document %q: %v", r.Body, err)
	}
	return path.Base(p.Type)
}

// RawExchange writes raw bytes to addr and reads one response: its status,
// problem type and body. status 0 means the connection was closed without
// an answer.
func RawExchange(t Failer, addr, raw string, pause time.Duration) (int, string, string) {
	t.Helper()
	r, ok := RawReply(t, addr, raw, pause)
	if !ok {
		return 0, "", ""
	}
	ptype := ""
	if r.Header.Get("Content-Type") == "application/problem+json" {
		var p struct{ Type string }
		if json.Unmarshal([]byte(r.Body), &p) == nil && p.Type != "" {
			ptype = path.Base(p.Type)
		}
	}
	return r.Status, ptype, r.Body
}

// RawReply writes raw bytes to addr and reads one whole response, for
// requests net/http will not send (whitespace it would trim, headers it
// would refuse); false means the connection was closed without an answer.
// With a pause, it sends raw, then stays silent that long (a slowloris).
func RawReply(t Failer, addr, raw string, pause time.Duration) (Reply, bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if pause > 0 { // slowloris: part of the request, then silence
		c.Write([]byte(raw))
		time.Sleep(pause)
	} else if _, err := c.Write([]byte(raw)); err != nil {
		return Reply{}, false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return Reply{}, false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return Reply{resp.StatusCode, resp.Header, string(body)}, true
}
