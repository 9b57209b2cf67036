//go:build ignore

// load is run.sh's client: CLIENTS closed-loop clients of Go's net/http
// (kept alive, an idle connection each) sending to one node for DURATION:
//
//	go run load.go setnx|gw|pass|once|once-nokey BASE_URL CLIENTS DURATION
//	go run load.go once-resp HOST:PORT CLIENTS DURATION
//
// setnx: PUT /v1/kv/{fresh key}?nx=1 (201); gw: POST /pay with a fresh
// Idempotency-Key and a body of its own (201); pass: POST /pay-direct;
// once: a once pair as idemgate bench sends it, POST
// /v1/once/bench/{fresh key}/begin?lease=30s (201), then .../complete with
// its fence, each under an Idempotency-Key of its own; once-nokey: the
// same pair without the keys, so under request ids the store makes (what
// the memory of the hashed keys costs is the difference); once-resp: the same
// pair over the Redis protocol (IDEM.BEGIN, IDEM.COMPLETE), a connection
// per client. An op is a request, or a pair.
// It prints "ops N errors N ops/s N [first error]".
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	mode, base := os.Args[1], os.Args[2]
	clients, _ := strconv.Atoi(os.Args[3])
	dur, _ := time.ParseDuration(os.Args[4])
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxIdleConns: clients}
	cl := &http.Client{Transport: tr}
	conns := make([]respConn, clients)
	var ops, errs atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for seq := 0; time.Now().Before(deadline); seq++ {
				var req *http.Request
				want := 201
				key := fmt.Sprintf("%s-%d-%d", tag, c, seq)
				if mode == "once" || mode == "once-nokey" || mode == "once-resp" {
					var err error
					if mode != "once-resp" {
						err = oncePair(cl, base, key, mode == "once")
					} else {
						err = respPair(&conns[c], base, key)
					}
					if err != nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						continue
					}
					ops.Add(1)
					continue
				}
				switch mode {
				case "setnx":
					req, _ = http.NewRequest("PUT", base+"/v1/kv/"+key+"?nx=1", bytes.NewReader([]byte("v")))
				case "gw":
					req, _ = http.NewRequest("POST", base+"/pay", bytes.NewReader([]byte(`{"amount":1,"order":"`+key+`"}`)))
					req.Header.Set("Idempotency-Key", key)
					req.Header.Set("Content-Type", "application/json")
				case "pass":
					req, _ = http.NewRequest("POST", base+"/pay-direct", bytes.NewReader([]byte(`{"amount":1}`)))
				}
				resp, err := cl.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != want {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ops.Add(1)
			}
		}(c)
	}
	wg.Wait()
	fe, _ := firstErr.Load().(string)
	fmt.Printf("ops %d errors %d ops/s %.0f %s\n", ops.Load(), errs.Load(), float64(ops.Load())/dur.Seconds(), fe)
}

var oncePayload = []byte(`{"to":"+4912345","text":"welcome"}`)

// oncePair begins key's claim over the HTTP API and completes it, each
// call under an Idempotency-Key of its own when withKeys.
func oncePair(cl *http.Client, base, key string, withKeys bool) error {
	u := base + "/v1/once/bench/" + key
	kb, kc := key+"-b", key+"-c"
	if !withKeys {
		kb, kc = "", ""
	}
	body, err := post(cl, u+"/begin?lease=30s", kb, "", oncePayload, 201)
	if err != nil {
		return err
	}
	var b struct {
		Fence uint64 `json:"fence"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Fence == 0 {
		return fmt.Errorf("begin: %s", body)
	}
	complete := fmt.Sprintf(`{"fence":%d,"result":%q}`, b.Fence, base64.StdEncoding.EncodeToString([]byte("sms-"+key)))
	_, err = post(cl, u+"/complete", kc, "application/json", []byte(complete), 200)
	return err
}

func post(cl *http.Client, url, key, contentType string, body []byte, want int) ([]byte, error) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != want {
		err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return b, err
}

// respConn is a client's Redis-protocol connection, dialled at its first
// pair.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

// respPair is oncePair over the Redis protocol: IDEM.BEGIN, then
// IDEM.COMPLETE with the fence it answered.
func respPair(rc *respConn, addr, key string) error {
	if rc.c == nil {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		rc.c, rc.r = c, bufio.NewReader(c)
	}
	lines, err := rc.do(4, "IDEM.BEGIN", "bench", key, "30000", string(oncePayload))
	if err != nil {
		return err
	}
	// *3, $5, begun, :fence, $-1
	if len(lines) < 4 || lines[2] != "begun" || !strings.HasPrefix(lines[3], ":") {
		return fmt.Errorf("IDEM.BEGIN answered %q", lines)
	}
	lines, err = rc.do(1, "IDEM.COMPLETE", "bench", key, lines[3][1:], "sms-"+key)
	if err == nil && lines[0] != "+OK" {
		err = fmt.Errorf("IDEM.COMPLETE answered %q", lines)
	}
	return err
}

// do sends one command and reads n reply lines, plus a nil bulk after a
// begin's fence.
func (rc *respConn) do(n int, args ...string) ([]string, error) {
	var b []byte
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := rc.c.Write(b); err != nil {
		return nil, err
	}
	var lines []string
	for len(lines) < n {
		l, err := rc.r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		l = strings.TrimRight(l, "\r\n")
		if strings.HasPrefix(l, "-") {
			return nil, fmt.Errorf("%s: %s", args[0], l)
		}
		lines = append(lines, l)
	}
	if args[0] == "IDEM.BEGIN" { // the result: nil for a begun claim
		if l, err := rc.r.ReadString('\n'); err != nil || l != "$-1\r\n" {
			return nil, fmt.Errorf("IDEM.BEGIN's result %q %v", l, err)
		}
	}
	return lines, nil
}
