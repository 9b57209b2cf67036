package faults

import (
	"bufio"
	"net"
	"testing"
	"time"
)

func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, timeout time.Duration) bool {
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "ping\n"
}

func TestProxyModes(t *testing.T) {
	p, err := NewProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, _ := net.Dial("tcp", p.Addr())
	if !roundTrip(c, time.Second) {
		t.Fatal("pass: no echo")
	}
	p.SetMode(Blackhole)
	if roundTrip(c, 300*time.Millisecond) {
		t.Fatal("blackhole: echo got through")
	}
	p.SetMode(Pass) // heals by dropping the blackholed connection
	c2, _ := net.Dial("tcp", p.Addr())
	if !roundTrip(c2, time.Second) {
		t.Fatal("healed: no echo on a new connection")
	}
	p.SetDelay(200 * time.Millisecond)
	start := time.Now()
	if !roundTrip(c2, 2*time.Second) || time.Since(start) < 350*time.Millisecond {
		t.Fatalf("delay: round trip took %s, want about 400ms", time.Since(start))
	}
	p.SetDelay(0)
	p.SetMode(Reset)
	if roundTrip(c2, 300*time.Millisecond) {
		t.Fatal("reset: connection survived")
	}
}
