package httpx

import (
	"net"
	"testing"
	"time"
)

// TestWatchClose: over a real loopback connection, gone is called when the
// client closes it and when the server closes it itself (a shutdown, which
// must end what waits on the client), and not when the client sends more
// or the watch is stopped; a peeked byte is still there to be read.
func TestWatchClose(t *testing.T) {
	cases := []struct {
		name     string
		act      func(client, server net.Conn)
		wantGone bool
	}{
		{"client closes", func(c, _ net.Conn) { c.Close() }, true},
		{"server closes its end", func(_, s net.Conn) { s.Close() }, true},
		{"client sends a next request", func(c, _ net.Conn) { c.Write([]byte("x")) }, false},
		{"stopped", func(net.Conn, net.Conn) {}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			gone := make(chan struct{})
			stop := WatchClose(server, func() { close(gone) })
			tc.act(client, server)
			// Waited for when it is due (bounded only against a hang); when
			// it is not, a while for a wrong one to show.
			wait := 200 * time.Millisecond
			if tc.wantGone {
				wait = 30 * time.Second
			}
			select {
			case <-gone:
			case <-time.After(wait):
			}
			stop()
			select {
			case <-gone:
				if !tc.wantGone {
					t.Fatal("gone called, want not")
				}
			default:
				if tc.wantGone {
					t.Fatal("gone not called")
				}
			}
			if tc.name == "client sends a next request" {
				server.SetReadDeadline(time.Now().Add(5 * time.Second))
				var b [1]byte
				if n, err := server.Read(b[:]); n != 1 || b[0] != 'x' {
					t.Fatalf("the next request's byte: %d %q %v", n, b[:n], err)
				}
			}
		})
	}
}
