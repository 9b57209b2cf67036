package testsupport

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// Reply is an HTTP answer, read whole.
type Reply struct {
	Status int
	Header http.Header
	Body   string
}

var client = &http.Client{Timeout: 10 * time.Second}

// Do sends one request (hdr: name, value, name, value...) and reads the
// answer whole. A "Host" in hdr is sent as the request's Host.
func Do(method, url, body string, hdr ...string) (Reply, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return Reply{}, err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}, err
}

// CloseIdle closes the helper's idle keep-alive connections (a server's
// Shutdown waits for them).
func CloseIdle() { client.CloseIdleConnections() }
