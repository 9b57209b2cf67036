package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestPathReadings: how a path that is not plain is read, the way servers
// may read it, decoded or not, and by a chain of hops.
func TestPathReadings(t *testing.T) {
	tests := []struct {
		raw            string
		plain, dotted  bool
		decoded, as_is string
		hop, hopExt    string // hopReadings[4] and [5]: dropped space, cut
	}{
		{"/pay", true, false, "", "", "", ""},
		{"/pay/", true, false, "", "", "", ""},
		{"/a.b/.c/d", true, false, "", "", "", ""},
		{"/a.b/.c/..d", true, false, "", "", "", ""},
		{"/a.b/.c/d.e", true, true, "", "", "/a.b/.c/d.e", "/a.b/.c/d"},
		{"/pay.", true, true, "", "", "/pay", "/pay"},
		{"/pay./x", true, true, "", "", "/pay/x", "/pay/x"},
		{"/pay.json", true, true, "", "", "/pay.json", "/pay"},
		{"/pay.json/", true, true, "", "", "/pay.json/", "/pay/"},
		{"/p%61y", false, false, "/pay", "/p%61y", "/pay", "/pay"},
		{"/p%2561y", false, false, "/p%61y", "/p%2561y", "/pay", "/pay"},
		{"/p%252561y", false, false, "/p%2561y", "/p%252561y", "/pay", "/pay"},
		{"/p%6", false, false, "/p%6", "/p%6", "/p%6", "/p%6"},
		{"/pay;x=1", false, false, "/pay", "/pay", "/pay", "/pay"},
		{"/pay%3Bx=1", false, false, "/pay", "/pay%3Bx=1", "/pay", "/pay"},
		{"/pay/;x=1", false, false, "/pay/", "/pay/", "/pay/", "/pay/"},
		{"/x/../pay", false, false, "/pay", "/pay", "/pay", "/pay"},
		{"/x/%2e%2e/pay", false, false, "/pay", "/x/%2e%2e/pay", "/pay", "/pay"},
		{"/x/%252e%252e/pay", false, false, "/x/%2e%2e/pay", "/x/%252e%252e/pay", "/pay", "/pay"},
		{"/orders/..;/pay", false, false, "/pay", "/pay", "/pay", "/pay"},
		{"/../../pay", false, false, "/pay", "/pay", "/pay", "/pay"},
		{"//pay", false, false, "/pay", "/pay", "/", "/"},
		{"/pay/.", false, false, "/pay/", "/pay/", "/pay/", "/pay/"},
		{"/pay/..", false, false, "/", "/", "/", "/"},
		{"/pay\\", false, false, "/pay/", "/pay\\", "/pay/", "/pay/"},
		{"pay", false, false, "/pay", "/pay", "/pay", "/pay"},
		{"/pay%20", false, false, "/pay ", "/pay%20", "/pay", "/pay"},
		{"/pay%00", false, false, "/pay\x00", "/pay%00", "/pay", "/pay"},
		{"/pay%3F", false, false, "/pay?", "/pay%3F", "/pay", "/pay"},
		{"/pay%23x", false, false, "/pay#x", "/pay%23x", "/pay", "/pay"},
		{"/pay%2e", false, false, "/pay.", "/pay%2e", "/pay", "/pay"},
		{"/pa%09y", false, false, "/pa\ty", "/pa%09y", "/pay", "/pay"},
		{"/pay%01", false, false, "/pay\x01", "/pay%01", "/pay", "/pay"},
		{"/%2F%2Fx/pay", false, false, "/x/pay", "/%2F%2Fx/pay", "/pay", "/pay"},
		{"/%5Cx/pay", false, false, "/x/pay", "/%5Cx/pay", "/pay", "/pay"},
		{"/", true, false, "", "", "", ""},
	}
	for _, tt := range tests {
		raw := []byte(tt.raw)
		if got := plainPath(raw); got != tt.plain {
			t.Errorf("plainPath(%q) = %v", tt.raw, got)
		}
		if tt.plain {
			if got := dotted(raw); got != tt.dotted {
				t.Errorf("dotted(%q) = %v", tt.raw, got)
			}
			if !tt.dotted {
				continue
			}
		} else {
			if got, _ := readPath(raw, strictReadings[0]); string(got) != tt.decoded {
				t.Errorf("readPath(%q, decoded) = %q, want %q", tt.raw, got, tt.decoded)
			}
			if got, _ := readPath(raw, strictReadings[1]); string(got) != tt.as_is {
				t.Errorf("readPath(%q, as is) = %q, want %q", tt.raw, got, tt.as_is)
			}
		}
		if got, _ := readPath(raw, hopReadings[4]); string(got) != tt.hop {
			t.Errorf("readPath(%q, hop) = %q, want %q", tt.raw, got, tt.hop)
		}
		if got, _ := readPath(raw, hopReadings[5]); string(got) != tt.hopExt {
			t.Errorf("readPath(%q, hop, extension) = %q, want %q", tt.raw, got, tt.hopExt)
		}
	}
	// A path encoded deeper than maxDecodes: no reading.
	deep := "/p%" + strings.Repeat("25", maxDecodes) + "61y"
	if got, ok := readPath([]byte(deep), hopReadings[0]); ok {
		t.Errorf("readPath(%q, hop) = %q, true; want no reading", deep, got)
	}
	for _, tt := range []struct {
		target string
		ok     bool
	}{
		{"/pay", true}, {"/pay?x=//y#", false}, {"/pay?x=//y", true}, {"/", true},
		{"//x/pay", false}, {"/\\x/pay", false}, {"http://x/pay", false}, {"*", false},
		{"/pay#x", false}, {"", false},
	} {
		if got := originForm([]byte(tt.target)); got != tt.ok {
			t.Errorf("originForm(%q) = %v, want %v", tt.target, got, tt.ok)
		}
	}
}

// recordingUpstream is a real HTTP server, read by hand so that it sees
// the request target byte for byte: it answers every request 201 and
// records the target and whether the gateway sent it as a route's
// (with an Idempotency-Key).
type recordingUpstream struct {
	addr string
	mu   sync.Mutex
	got  []upstreamRequest
}

type upstreamRequest struct {
	target string
	keyed  bool
}

func startRecordingUpstream(t *testing.T) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{}
	u.addr = serveLoopback(t, u.serve)
	return u
}

func (u *recordingUpstream) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		parts := strings.Split(strings.TrimRight(line, "\r\n"), " ")
		if len(parts) != 3 {
			return
		}
		req := upstreamRequest{target: parts[1]}
		length := 0
		for {
			h, err := br.ReadString('\n')
			if err != nil {
				return
			}
			h = strings.TrimRight(h, "\r\n")
			if h == "" {
				break
			}
			name, value, _ := strings.Cut(h, ":")
			switch strings.ToLower(name) {
			case "idempotency-key":
				req.keyed = true
			case "content-length":
				length, _ = strconv.Atoi(strings.TrimSpace(value))
			}
		}
		if _, err := br.Discard(length); err != nil {
			return
		}
		u.mu.Lock()
		u.got = append(u.got, req)
		u.mu.Unlock()
		c.Write([]byte("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"))
	}
}

func (u *recordingUpstream) requests() []upstreamRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamRequest(nil), u.got...)
}

// TestAmbiguousPaths: a request target that a parser on the way (see
// pathread.go) reads as a protected route other than the one the gateway
// reads is refused with 400 ambiguous-path, whatever the route's match
// option, and the upstream sees none of them; targets that read the same
// everywhere still reach it, as a route's or passed through.
func TestAmbiguousPaths(t *testing.T) {
	t.Parallel()
	up := startRecordingUpstream(t)
	gc := startGatewaysOver(t, nil, []nodeStore{memstore.New(t)}, up.addr)
	addr := strings.TrimPrefix(gc.gwURLs[0], "http://")
	withKey := func(target string) string { return post(target, "Idempotency-Key: k\r\n", "{}") }
	refused := []struct{ target, why string }{
		// The rows of the audit that passed through unprotected.
		{"//x/pay", "WHATWG URL, urlsplit and url.Parse: host x, path /pay"},
		{"/p%2561y", "decoded by a hop, then by the upstream: /pay"},
		{"/pay.", "Windows drops a trailing dot; Spring's suffix pattern /pay.*"},
		{"/pay%20", "a decoded space ends the path at the next hop; Windows drops it"},
		{"/pay%00", "C stops at the decoded NUL"},
		{"/pay%3F", "a decoded '?' starts the query at the next hop"},
		// The same rules, other spellings.
		{"/\\x/pay", "WHATWG: a backslash is a slash in http URLs: host x"},
		{"///x/pay", "WHATWG skips the extra slashes: host x"},
		{"/%2F%2Fx/pay", "decoded by a hop to //x/pay, then read by WHATWG: host x"},
		{"/%5Cx/pay", "decoded by a hop to /\\x/pay, then read by WHATWG: host x"},
		{"/%2570ay", "a double-encoded first letter"},
		{"/x/%252e%252e/pay", "double-encoded dot segments"},
		{"/pay%2520", "a double-encoded space"},
		{"/pay%253F", "a double-encoded '?'"},
		{"/pay%23frag", "a decoded '#' ends the path"},
		{"/pa%09y", "WHATWG and urlsplit drop a (decoded) tab"},
		{"/pa%0Ay", "WHATWG and urlsplit drop a (decoded) newline"},
		{"/pay%0D%0A", "a decoded CR LF ends the request line"},
		{"/pay%01", "WHATWG strips trailing C0 controls"},
		{"/pay%2e", "a decoded trailing dot"},
		{"/pay..", "Windows drops trailing dots"},
		{"/pay./", "Windows drops the dot, then a trailing slash"},
		{"/pay.json", "Rails' (.:format) and Spring's suffix patterns"},
		{"/PAY.json", "the same, in another case"},
		{"/pay%3Bx", "a decoded ';' is a parameter to Tomcat"},
		{"/orders/x%252F..%252F..%252Fpay?key=k", "leaves the prefix route for another once decoded twice"},
		// Not origin-form: refused whatever they name.
		{"http://x/pay", "an absolute URL: its host would replace Host"},
		{"HTTP://x/PAY", "an absolute URL"},
		{"/pay#frag", "a fragment in a request target"},
		{"/pay?x=1#frag", "a fragment after the query"},
		{"//x/other", "a host for URL parsers, whatever the path"},
	}
	for _, tt := range refused {
		status, ptype, body := rawExchange(t, addr, withKey(tt.target), 0)
		if status != 400 || ptype != "ambiguous-path" {
			t.Errorf("%s (%s): got %d %q %s, want 400 ambiguous-path", tt.target, tt.why, status, ptype, body)
		}
	}
	// The loose route (match: case-insensitive, trailing_slash: ignore)
	// takes case and slash aliases, and refuses these all the same.
	for _, target := range []string{"//x/loose", "/l%256Fose", "/LOOSE.", "/loose%20", "/loose%00", "/loose%3F", "/loose.json"} {
		if status, ptype, body := rawExchange(t, addr, withKey(target), 0); status != 400 || ptype != "ambiguous-path" {
			t.Errorf("%s on a case-insensitive route: got %d %q %s, want 400 ambiguous-path", target, status, ptype, body)
		}
	}
	if got := up.requests(); len(got) != 0 {
		t.Fatalf("refused requests reached the upstream: %+v", got)
	}
	// These read the same to every parser, or only differ after a prefix
	// route's plainly spelled prefix: forwarded as they were sent.
	served := []struct {
		target string
		keyed  bool
	}{
		{"/pay", true},
		{"/pay?next=%2F%2Fx%2Fpay", true},
		{"/orders/a%20b?key=o1", true},
		{"/orders/1.json?key=o2", true},
		{"/orders/x%3F?key=o3", true},
		{"/LOOSE/", true},
		{"/static/app.js", false},
		{"/other/a%20b", false},
		{"/.well-known/thing", false},
		{"/x/../other", false},
	}
	for i, tt := range served {
		key := ""
		if tt.keyed {
			key = "Idempotency-Key: s" + strconv.Itoa(i) + "\r\n"
		}
		raw := post(tt.target, key, "{}")
		if status, _, body := rawExchange(t, addr, raw, 0); status != 201 {
			t.Errorf("%s: got %d %s, want the upstream's 201", tt.target, status, body)
		}
	}
	got := up.requests()
	if len(got) != len(served) {
		t.Fatalf("the upstream got %d requests, want %d: %+v", len(got), len(served), got)
	}
	for i, tt := range served {
		if got[i].target != tt.target || got[i].keyed != tt.keyed {
			t.Errorf("the upstream got %q (keyed %v), want %q (keyed %v)", got[i].target, got[i].keyed, tt.target, tt.keyed)
		}
	}
}

// pathCorpus spells the protected paths /pay and /orders/1 every way the
// rules of pathread.go vary: letters encoded once, twice or three times,
// in either case; a host, slashes, backslashes and dot segments before;
// dots, spaces, controls, '?', '#', ';', extensions and slashes after,
// encoded or not; absolute URLs.
func pathCorpus() []string {
	var words []string
	for _, w := range []string{"pay", "orders/1"} {
		words = append(words, "/"+w, "/"+strings.ToUpper(w[:1])+w[1:])
		for i := 0; i < 3; i++ {
			c := w[i]
			for _, enc := range []string{"%%%02x", "%%%02X", "%%25%02x", "%%2525%02X"} {
				words = append(words, "/"+w[:i]+fmt.Sprintf(enc, c)+w[i+1:])
			}
		}
	}
	words = append(words, "/orders%2F1", "/orders%252F1", "/orders;x/1", "/orders/./1", "/orders//1")
	before := []string{"", "//x", "///x", "/\\x", "\\\\x", "/%2Fx", "/%2F%2Fx", "/%5Cx", "/%5C%5Cx", "/%252F%252Fx",
		"/x/..", "/x/%2e%2e", "/x/.%2e", "/x/%2E.", "/x/%252e%252e", "/x/..;", "/x;/..", "/.", "/%2e", "//",
		"/x%2F..", "/x/..%2F", "/x%3F/..", "http://x", "HTTP://x", "/x/..%5C"}
	after := []string{"", "/", "//", ".", "..", "./", "%2e", "%2E", "%252e", "%20", "%2520", "%09", "%0a",
		"%0d%0a", "%00", "%2500", "%01", "%1f", "%3f", "%3F", "%253F", "%23", "%2523", ";x=1", "%3Bx", "/;x",
		".json", "%2ejson", ".json/", "/.", "/..", "/x/..", "/x/%2e%2e", "\\", "%5c", "%2f", "%2F", "%252F",
		"#frag", "%3F/../x", "%20HTTP/1.1", "%2e%2e", "...", "%2e%20"}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, w := range words {
		for _, a := range after {
			add(w + a)
		}
	}
	for _, b := range before {
		for _, w := range words[:6] {
			for _, a := range after[:20] {
				add(b + w + a)
			}
		}
	}
	return out
}

// parserReadings are the paths real URL parsers read in each target (and
// in each target once decoded, as a hop before them would hand it on):
// Go's net/url here, and Node's WHATWG URL and legacy url.parse and
// Python's urllib.parse.urlsplit (each with the decoding its frameworks
// apply after) in their own processes. Each reading is "parser: path".
func parserReadings(t *testing.T, targets []string) map[string][]string {
	t.Helper()
	var inputs []string
	for _, tg := range targets {
		inputs = append(inputs, tg, string(percentDecode([]byte(tg))))
	}
	out := map[string][]string{}
	add := func(i int, parser, p string) {
		tg := targets[i/2]
		if i%2 == 1 {
			parser += " after a decoding hop"
		}
		out[tg] = append(out[tg], parser+": "+p)
	}
	for i, in := range inputs {
		if u, err := url.ParseRequestURI(in); err == nil {
			add(i, "Go url.ParseRequestURI", u.Path)
		}
		if u, err := url.Parse(in); err == nil {
			add(i, "Go url.Parse", u.Path)
		}
	}
	payload, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, tool string }{{"node", "node"}, {"python", "python3"}} {
		if _, err := exec.LookPath(p.tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed: the differential test needs it (.ci/run installs it)", p.tool)
			}
			t.Logf("%s is not installed: its readings are left out (not under CI)", p.tool)
			continue
		}
		var cmd *exec.Cmd
		if p.name == "node" {
			cmd = exec.Command(p.tool, "-e", nodeReadings)
		} else {
			cmd = exec.Command(p.tool, "-c", pythonReadings)
		}
		cmd.Stdin = bytes.NewReader(payload)
		res, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", p.tool, err)
		}
		var readings [][][2]string // per input: (parser, path) pairs
		if err := json.Unmarshal(res, &readings); err != nil || len(readings) != len(inputs) {
			t.Fatalf("%s answered %d readings for %d inputs (%v): %.200s", p.tool, len(readings), len(inputs), err, res)
		}
		for i, rs := range readings {
			for _, r := range rs {
				add(i, r[0], r[1])
			}
		}
	}
	return out
}

// nodeReadings prints, for each target, WHATWG URL's pathname against an
// http base (Node's new URL, as browsers read it) and legacy url.parse's,
// each as it is and decoded as routers decode it.
const nodeReadings = `
const url = require('url');
const rows = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const dec = s => { try { return decodeURIComponent(s) } catch (e) { return s } };
const out = rows.map(r => {
  const rs = [];
  try { const p = new URL(r, 'http://upstream.test').pathname; rs.push(['WHATWG URL', p], ['WHATWG URL, decoded', dec(p)]) } catch (e) {}
  try { const p = url.parse(r).pathname || ''; rs.push(['Node url.parse', p], ['Node url.parse, decoded', dec(p)]) } catch (e) {}
  return rs;
});
process.stdout.write(JSON.stringify(out));
`

// pythonReadings prints, for each target, urlsplit's path as it is and
// unquoted, as WSGI servers and frameworks read it.
const pythonReadings = `
import sys, json
from urllib.parse import urlsplit, unquote
out = []
for r in json.load(sys.stdin):
    try:
        p = urlsplit(r).path
        out.append([["Python urlsplit", p], ["Python urlsplit, unquoted", unquote(p)]])
    except ValueError:
        out.append([])
print(json.dumps(out))
`

// protectedName reports whether an upstream that reads its path as p
// serves it as one of the test's protected routes, with the leniency of
// common routers: dot segments and duplicate slashes resolved, letter case
// and a trailing slash ignored, an extension (/pay.json) dropped.
func protectedName(p string) bool {
	if p == "" {
		return false
	}
	p = strings.ToLower(path.Clean("/" + p))
	seg := strings.LastIndexByte(p, '/') + 1
	if dot := strings.IndexByte(p[seg:], '.'); dot > 0 {
		p = p[:seg+dot]
	}
	return p == "/pay" || p == "/orders" || strings.HasPrefix(p, "/orders/")
}

// TestPathDifferential: every spelling of pathCorpus is sent to the
// gateway without a key; whatever reaches the upstream without one (passed
// through, no route's checks) is read by real URL parsers, and none may
// read it as a protected route. A request the gateway takes as a route
// (400 missing-key for /pay; forwarded with its key for /orders/*) or
// refuses is safe.
func TestPathDifferential(t *testing.T) {
	t.Parallel()
	up := startRecordingUpstream(t)
	gc := startGatewaysOver(t, nil, []nodeStore{memstore.New(t)}, up.addr)
	addr := strings.TrimPrefix(gc.gwURLs[0], "http://")
	corpus := append(pathCorpus(), "/other", "/other/a%20b", "/static/pay.js")
	if len(corpus) < 1000 {
		t.Fatalf("the corpus holds %d spellings, want at least 1000", len(corpus))
	}
	answered := map[int]int{}
	for i, target := range corpus {
		if strings.Contains(target, "orders") {
			sep := "?"
			if strings.Contains(target, "?") {
				sep = "&"
			}
			target += sep + "key=d" + strconv.Itoa(i)
		}
		status, _, _ := rawExchange(t, addr, post(target, "", "{}"), 0)
		answered[status]++
	}
	got := up.requests()
	var unkeyed []string
	for _, r := range got {
		if !r.keyed {
			unkeyed = append(unkeyed, r.target)
		}
	}
	// The plain passthrough spellings got through, so the upstream's
	// count means something.
	if len(unkeyed) < 3 {
		t.Fatalf("only %d requests passed through (answers by status: %v); want the plain ones at least", len(unkeyed), answered)
	}
	readings := parserReadings(t, unkeyed)
	bad := 0
	for _, target := range unkeyed {
		for _, r := range readings[target] {
			_, p, _ := strings.Cut(r, ": ")
			if protectedName(p) {
				bad++
				t.Errorf("%q reached the upstream without a route's checks; %s", target, r)
			}
		}
	}
	t.Logf("%d spellings: answers by status %v; %d reached the upstream (%d as a route's), %d read as a protected route",
		len(corpus), answered, len(got), len(got)-len(unkeyed), bad)
}

// FuzzReadPath: every reading of any path is absolute, has no dot
// segment or empty segment but a trailing slash, and never panics.
func FuzzReadPath(f *testing.F) {
	for _, s := range []string{"/pay", "//x/pay", "/p%2561y", "/pay.", "/x/%2e%2e/pay", "/a;b/..;/c", "\\\\x\\pay", "/%", "/pay%0D%0A"} {
		f.Add(s)
	}
	modes := append(strictReadings[:], hopReadings[:]...)
	f.Fuzz(func(t *testing.T, raw string) {
		for _, m := range modes {
			p, ok := readPath([]byte(raw), m)
			if !ok {
				continue
			}
			if len(p) == 0 || p[0] != '/' {
				t.Fatalf("readPath(%q, %b) = %q: not absolute", raw, m, p)
			}
			segs := strings.Split(string(p[1:]), "/")
			for i, s := range segs {
				if s == "." || s == ".." || s == "" && i != len(segs)-1 {
					t.Fatalf("readPath(%q, %b) = %q: segment %q", raw, m, p, s)
				}
			}
		}
		plainPath([]byte(raw))
		dotted([]byte(raw))
		originForm([]byte(raw))
	})
}
