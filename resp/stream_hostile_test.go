package resp

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestStreamHostile: streams' bad and huge inputs, each answered exactly:
// huge counts, huge and malformed ids, ms-* at the end of a sequence,
// a field past its bound, a command of too many, a stream of 10^5
// entries trimmed ("~" within its default LIMIT, then whole), and two
// hundred readers blocked on one stream, all served by one XADD, and
// readers that leave while blocked.
func TestStreamHostile(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxArgs = 1 << 18 })
	long := strings.Repeat("f", command.MaxFieldLen+1)
	tooLong := "-ERR hash field or set member too long: at most 8192 bytes\r\n"
	tooMany := fmt.Sprintf("-ERR too many fields or members in one command: at most %d\r\n", command.MaxCmdElems)
	badID, notInt := "-ERR Invalid stream ID specified as stream command argument\r\n", "-ERR value is not an integer or out of range\r\n"
	max := "18446744073709551615"
	entry := func(id string) string {
		return fmt.Sprintf("*2\r\n$%d\r\n%s\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n", len(id), id)
	}
	tests := []struct {
		name    string
		send    [][]string
		replies []string
	}{
		{"huge counts", [][]string{{"XADD", "xh:c", "1-1", "f", "v"}, {"XRANGE", "xh:c", "-", "+", "COUNT", "9223372036854775807"},
			{"XRANGE", "xh:c", "-", "+", "COUNT", "9223372036854775808"}, {"XREVRANGE", "xh:c", "+", "-", "COUNT", "-9223372036854775808"},
			{"XREAD", "COUNT", "9223372036854775807", "STREAMS", "xh:c", "0"}, {"XINFO", "STREAM", "xh:c", "FULL", "COUNT", "9223372036854775807"},
			{"XTRIM", "xh:c", "MAXLEN", "9223372036854775807"}, {"XTRIM", "xh:c", "MAXLEN", "9223372036854775808"},
			{"XREAD", "BLOCK", "9223372036854775807", "STREAMS", "xh:c", "0"}, {"XTRIM", "xh:c", "MAXLEN", "~", "0", "LIMIT", "9223372036854775807"}},
			[]string{"$3\r\n1-1\r\n", "*1\r\n" + entry("1-1"), notInt, "*-1\r\n", "*1\r\n*2\r\n$4\r\nxh:c\r\n*1\r\n" + entry("1-1"),
				"*18\r\n$6\r\nlength\r\n:1\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$3\r\n1-1\r\n" +
					"$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:1\r\n$23\r\nrecorded-first-entry-id\r\n$3\r\n1-1\r\n" +
					"$7\r\nentries\r\n*1\r\n" + entry("1-1") + "$6\r\ngroups\r\n*0\r\n",
				":0\r\n", notInt, "*1\r\n*2\r\n$4\r\nxh:c\r\n*1\r\n" + entry("1-1"), ":1\r\n"}},
		{"huge and malformed ids", [][]string{{"XADD", "xh:i", max + "-" + max, "f", "v"}, {"XADD", "xh:i", "*", "f", "v"},
			{"XADD", "xh:i", max + "-*", "f", "v"}, {"XRANGE", "xh:i", max, "+"}, {"XRANGE", "xh:i", "(" + max + "-" + max, "+"},
			{"XADD", "xh:j", "18446744073709551616", "f", "v"}, {"XADD", "xh:j", strings.Repeat("1", 128), "f", "v"},
			{"XADD", "xh:j", "1-2-3", "f", "v"}, {"XADD", "xh:j", "", "f", "v"}, {"XADD", "xh:j", "1-", "f", "v"}, {"XADD", "xh:j", "-1", "f", "v"},
			{"XADD", "xh:j", "1--1", "f", "v"}, {"XADD", "xh:j", "1-**", "f", "v"}, {"XADD", "xh:j", "*-1", "f", "v"}, {"XADD", "xh:j", "1-\x00", "f", "v"},
			{"XADD", "xh:j", "5-" + max, "f", "v"}, {"XADD", "xh:j", "5-*", "f", "v"}, {"XADD", "xh:j", "6-*", "f", "v"},
			{"XADD", "xh:j", "4-*", "f", "v"}, {"XDEL", "xh:j", strings.Repeat("9", 200)}, {"XSETID", "xh:j", "0-0"},
			{"XREAD", "STREAMS", "xh:j", max + "-" + max}, {"EXISTS", "xh:j"}},
			[]string{"$41\r\n" + max + "-" + max + "\r\n", "-ERR The stream has exhausted the last possible ID, unable to add more items\r\n",
				"-ERR The stream has exhausted the last possible ID, unable to add more items\r\n", "*1\r\n" + entry(max+"-"+max),
				"-ERR invalid start ID for the interval\r\n", badID, badID, badID, badID, badID, badID, badID, badID, badID, badID,
				"$22\r\n5-" + max + "\r\n", "-ERR Elements are too large to be stored\r\n", "$3\r\n6-0\r\n",
				"-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n", badID,
				"-ERR The ID specified in XSETID is smaller than the target stream top item\r\n", "*-1\r\n", ":1\r\n"}},
		{"a field past its bound, a command of too many", [][]string{{"XADD", "xh:f", "1-1", long, "v"}, {"XADD", "xh:f", "1-1", "f", long},
			append([]string{"XADD", "xh:f", "1-1"}, manyArgs(command.MaxCmdElems/2+1, 2)...), {"EXISTS", "xh:f"}},
			[]string{tooLong, tooLong, tooMany, ":0\r\n"}},
		{"TYPE, OBJECT ENCODING, SCAN TYPE", [][]string{{"XADD", "xh:t", "1-1", "f", "v"}, {"TYPE", "xh:t"}, {"OBJECT", "ENCODING", "xh:t"},
			{"SCAN", "0", "TYPE", "stream", "MATCH", "xh:t*", "COUNT", "1000"}, {"SCAN", "0", "TYPE", "hash", "MATCH", "xh:t*", "COUNT", "1000"}},
			[]string{"$3\r\n1-1\r\n", "+stream\r\n", "$6\r\nstream\r\n", "*2\r\n$1\r\n0\r\n*1\r\n$4\r\nxh:t\r\n", "*2\r\n$1\r\n0\r\n*0\r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { askEach(t, srv.Addr(), tt.send, tt.replies) })
	}

	t.Run("10^5 entries trimmed", func(t *testing.T) {
		if raceDetector {
			t.Skip("10^5 entries under the race detector outlast the timeouts; run without -race")
		}
		c := dialRaw(t, srv.Addr())
		c.nc.SetDeadline(time.Now().Add(5 * time.Minute))
		const n, chunk = 100000, 1000
		for i := 0; i < n; i += chunk {
			var b strings.Builder
			for j := i; j < i+chunk; j++ {
				b.WriteString(array("XADD", "xh:big", strconv.Itoa(j+1)+"-1", "f", "v"))
			}
			c.send(b.String())
			for k, r := range c.replies(chunk) {
				if want := "$" + strconv.Itoa(len(strconv.Itoa(i+k+1))+2) + "\r\n" + strconv.Itoa(i+k+1) + "-1\r\n"; r != want {
					t.Fatalf("XADD %d: %q, want %q", i+k+1, r, want)
				}
			}
		}
		steps := []struct{ req, want string }{
			{array("XTRIM", "xh:big", "MAXLEN", "~", "1000"), ":10000\r\n"}, // the default LIMIT: 100 nodes
			{array("XTRIM", "xh:big", "MAXLEN", "~", "1000", "LIMIT", "0"), ":89000\r\n"},
			{array("XTRIM", "xh:big", "MAXLEN", "10"), ":990\r\n"},
			{array("XRANGE", "xh:big", "-", "+", "COUNT", "1"), "*1\r\n" + entry("99991-1")},
			{array("XTRIM", "xh:big", "MINID", "99995"), ":4\r\n"},
			{array("XLEN", "xh:big"), ":6\r\n"},
		}
		for _, s := range steps {
			c.send(s.req)
			if got := c.replies(1)[0]; got != s.want {
				t.Fatalf("%q: %q, want %q", s.req, got, s.want)
			}
		}
	})

	t.Run("many blocked readers", func(t *testing.T) {
		const readers = 200
		conns := make([]*rawConn, readers)
		for i := range conns {
			conns[i] = dialRaw(t, srv.Addr())
			conns[i].send(array("XREAD", "BLOCK", "0", "STREAMS", "xh:b", "$"))
		}
		waitBlocked(t, srv, readers)
		for _, c := range conns[:50] { // they leave while blocked
			c.nc.Close()
		}
		waitBlocked(t, srv, readers-50)
		mustAsk(t, srv.Addr(), array("XADD", "xh:b", "3-3", "f", "v"), "$3\r\n3-3\r\n")
		var wg sync.WaitGroup
		errs := make(chan string, readers)
		for _, c := range conns[50:] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got := waitAnswer(c); got != "*1\r\n*2\r\n$4\r\nxh:b\r\n*1\r\n"+entry("3-3") {
					errs <- got
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatalf("a blocked reader got %q", e)
		}
		testsupport.WaitFor(t, "no reader blocked", 30*time.Second, func() bool { w, _ := blocked(srv); return w == 0 })
	})
}
