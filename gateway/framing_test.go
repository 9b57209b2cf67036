package gateway

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestRequestTransferCoding: a request whose Transfer-Encoding is anything
// but chunked as its only coding has no framing the gateway can trust
// (RFC 9112 6.3: 400, and the connection closed), on a route and on a
// passthrough path alike; it never reaches the upstream. chunked, in any
// case, is read as it should be.
func TestRequestTransferCoding(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	addr := strings.TrimPrefix(gc.gwURLs[0], "http://")
	req := func(path, te, rest string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: x\r\nIdempotency-Key: te-k\r\nX-User-Id: u\r\nTransfer-Encoding: " + te + "\r\n" + rest
	}
	for _, tc := range []struct {
		name, raw string
		detail    string // "": fasthttp's own refusal, "malformed request"
	}{
		{"identity, a body after it", req("/pay", "identity", "\r\n{}"), "only chunked"},
		{"identity, nothing after it", req("/pay", "identity", "\r\n"), "only chunked"},
		{"IDENTITY", req("/pay", "IDENTITY", "\r\n"), "only chunked"},
		{"identity, passthrough path", req("/anything", "identity", "\r\n"), "only chunked"},
		{"identity beside Content-Length", req("/pay", "identity", "Content-Length: 2\r\n\r\n{}"), "Content-Length"},
		{"identity, a key-less passthrough GET", "GET /anything HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n", "only chunked"},
		{"gzip", req("/pay", "gzip", "\r\n{}"), "malformed request"},
		{"gzip, chunked", req("/pay", "gzip, chunked", "\r\n2\r\n{}\r\n0\r\n\r\n"), "malformed request"},
		{"chunked, identity", req("/pay", "chunked, identity", "\r\n2\r\n{}\r\n0\r\n\r\n"), "malformed request"},
		{"identity then chunked, two fields", req("/pay", "identity", "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"), "malformed request"},
		{"empty", req("/pay", "", "\r\n"), "malformed request"},
	} {
		status, body, closed := exchangeThenEOF(t, addr, tc.raw)
		if status != 400 || !strings.Contains(body, "/bad-request") || !strings.Contains(body, tc.detail) || !closed {
			t.Errorf("%s: %d %s, closed %v; want 400 bad-request naming %q, and the connection closed", tc.name, status, body, closed, tc.detail)
		}
	}
	if n := gc.up.Calls.Load(); n != 0 {
		t.Fatalf("requests with a bad Transfer-Encoding reached the upstream %d times", n)
	}
	for _, te := range []string{"chunked", "Chunked", "CHUNKED"} {
		r, ok := testsupport.RawReply(t, addr, req("/pay", te, "\r\n2\r\n{}\r\n0\r\n\r\n"), 0)
		if !ok || r.Status != 201 {
			t.Errorf("Transfer-Encoding: %s: %d %s, want 201", te, r.Status, r.Body)
		}
	}
}

// exchangeThenEOF writes raw to addr, reads one answer, and reports
// whether the gateway then closed the connection (EOF within 5 s).
func exchangeThenEOF(t *testing.T, addr, raw string) (status int, body string, closed bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err.Error(), false
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp.StatusCode, string(b), errors.Is(err, io.EOF)
}

// FuzzBadFraming: any raw header block is read without a panic; a block
// with one Transfer-Encoding: chunked and no Content-Length passes, and
// one that adds a Transfer-Encoding line of another coding does not.
func FuzzBadFraming(f *testing.F) {
	f.Add("Host: x\r\n", "chunked")
	f.Add("Content-Length: 3\r\n", "identity")
	f.Add("", " gzip, chunked")
	f.Add("transfer-encoding:chunked\n", "")
	f.Fuzz(func(t *testing.T, block, coding string) {
		badFraming([]byte(block))
		if strings.Contains(strings.ToLower(block), "transfer-encoding:") || strings.Contains(strings.ToLower(block), "content-length:") {
			return
		}
		if block != "" && !strings.HasSuffix(block, "\n") {
			block += "\r\n" // a line of its own
		}
		ok := "Host: x\r\nTransfer-Encoding: chunked\r\n" + block
		if got := badFraming([]byte(ok)); got != "" {
			t.Fatalf("badFraming(%q) = %q, want \"\"", ok, got)
		}
		if strings.EqualFold(strings.TrimSpace(coding), "chunked") || strings.ContainsAny(coding, "\r\n") {
			return
		}
		bad := ok + "Transfer-Encoding: " + coding + "\r\n"
		if got := badFraming([]byte(bad)); got != detailBadCoding {
			t.Fatalf("badFraming(%q) = %q, want %q", bad, got, detailBadCoding)
		}
	})
}
