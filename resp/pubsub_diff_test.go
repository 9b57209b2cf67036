package resp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// psStep is one step of a Pub/Sub transcript: what connection conn sends
// (raw, inline commands one a line; "" sends nothing) and how many replies
// or messages it then reads. skip: the replies differ by server (HELLO's
// map) and are read but not compared. {idN} in raw is connection N's
// CLIENT ID.
type psStep struct {
	conn int
	raw  string
	n    int
	skip bool
}

// TestPubSubAsRedis runs transcripts on redis-server 7.0 and on the
// listener and compares every reply and message byte for byte: each
// command's replies and errors, subscribe mode's refusals in RESP2, RESP3's
// pushes, patterns, shard channels, PUBSUB's subcommands, RESET, and a
// RESP2 tracking redirection's __redis__:invalidate messages.
func TestPubSubAsRedis(t *testing.T) {
	redis := startRedisServer(t)
	srv := startServer(t, memstore.New(t), "mem", nil)
	for _, tc := range []struct {
		name  string
		steps []psStep
	}{
		{"errors and arities", []psStep{
			{0, "SUBSCRIBE", 1, false},
			{0, "PSUBSCRIBE", 1, false},
			{0, "SSUBSCRIBE", 1, false},
			{0, "PUBLISH a", 1, false},
			{0, "PUBLISH a b c", 1, false},
			{0, "SPUBLISH a", 1, false},
			{0, "PUBSUB", 1, false},
			{0, "PUBSUB foo", 1, false},
			{0, "PUBSUB NUMPAT x", 1, false},
			{0, "PUBSUB HELP x", 1, false},
			{0, "PUBSUB CHANNELS a b", 1, false},
			{0, "PUBSUB shardchannels a b", 1, false},
			{0, "PUBSUB HELP", 1, false},
			{0, "RESET x", 1, false},
			{0, "PUBLISH nobody hi", 1, false},
			{0, "SPUBLISH nobody hi", 1, false},
			{0, "PUBSUB NUMSUB", 1, false},
			{0, "PUBSUB NUMSUB a b", 1, false},
			{0, "PUBSUB SHARDNUMSUB a", 1, false},
			{0, "PUBSUB NUMPAT", 1, false},
			{0, "PUBSUB CHANNELS", 1, false},
		}},
		{"unsubscribe with none", []psStep{
			{0, "UNSUBSCRIBE", 1, false},
			{0, "PUNSUBSCRIBE", 1, false},
			{0, "SUNSUBSCRIBE", 1, false},
			{0, "UNSUBSCRIBE a b", 2, false},
			{0, "GET k", 1, false},
		}},
		{"RESP2 subscribe mode", []psStep{
			{0, "SUBSCRIBE a b a", 3, false},
			{0, "GET k", 1, false},
			{0, "SET k v", 1, false},
			{0, "CLIENT LIST", 1, false},
			{0, "CONFIG GET maxmemory", 1, false},
			{0, "PUBSUB NUMSUB a", 1, false},
			{0, "MULTI", 1, false},
			{0, "HELLO 3", 1, false},
			{0, "PUBLISH a x", 1, false},
			{0, "NOSUCH", 1, false},
			{0, "GET", 1, false},
			{0, "PING", 1, false},
			{0, "PING hi", 1, false},
			{0, "PING a b", 1, false},
			{0, "PSUBSCRIBE p* q?", 2, false},
			{0, "SSUBSCRIBE s1 s2", 2, false},
			{1, "PUBSUB NUMSUB a b c", 1, false},
			{1, "PUBSUB NUMPAT", 1, false},
			{1, "PUBSUB CHANNELS [a]", 1, false}, // (more than one: Redis's order is its hash table's)
			{1, "PUBSUB CHANNELS ?x", 1, false},
			{1, "PUBSUB SHARDCHANNELS s[!2]", 1, false},
			{1, "PUBSUB SHARDCHANNELS *2", 1, false},
			{1, "PUBSUB SHARDNUMSUB s1 s3", 1, false},
			{1, "PUBLISH a hello", 1, false},
			{0, "", 1, false},
			{1, "PUBLISH pa p1", 1, false},
			{0, "", 1, false},
			{1, "PUBLISH b both", 1, false},
			{0, "", 1, false},
			{1, "SPUBLISH s2 shard", 1, false},
			{0, "", 1, false},
			{1, "SPUBLISH a notshard", 1, false},
			{1, "PUBLISH s1 notglobal", 1, false},
			{0, "UNSUBSCRIBE a", 1, false},
			{0, "PUNSUBSCRIBE", 2, false},
			{0, "SUNSUBSCRIBE s1", 1, false},
			{0, "UNSUBSCRIBE", 1, false},
			{0, "GET k", 1, false},
			{0, "SUNSUBSCRIBE", 1, false},
			{0, "GET k", 1, false},
			{1, "PUBSUB NUMPAT", 1, false},
			{1, "PUBSUB CHANNELS", 1, false},
		}},
		{"a subscriber publishes to itself", []psStep{
			{0, "HELLO 3", 1, true},
			{0, "PSUBSCRIBE *", 1, false},
			{0, "SUBSCRIBE self", 1, false},
			{0, "PUBLISH self me", 3, false},
			{0, "GET k", 1, false},
		}},
		{"RESP3 pushes", []psStep{
			{0, "HELLO 3", 1, true},
			{0, "UNSUBSCRIBE", 1, false},
			{0, "SUBSCRIBE a", 1, false},
			{0, "PSUBSCRIBE a*", 1, false},
			{0, "SSUBSCRIBE a", 1, false},
			{0, "GET k", 1, false},
			{0, "PING", 1, false},
			{0, "PUBSUB NUMSUB a", 1, false},
			{1, "PUBLISH a x", 1, false},
			{0, "", 2, false},
			{1, "SPUBLISH a y", 1, false},
			{0, "", 1, false},
			{0, "PUNSUBSCRIBE", 1, false},
			{0, "SUNSUBSCRIBE", 1, false},
			{0, "UNSUBSCRIBE", 1, false},
			{0, "UNSUBSCRIBE", 1, false},
		}},
		{"RESET leaves subscribe mode", []psStep{
			{0, "SUBSCRIBE a", 1, false},
			{0, "RESET", 1, false},
			{0, "GET k", 1, false},
			{1, "PUBLISH a x", 1, false},
			{1, "PUBSUB NUMSUB a", 1, false},
		}},
		{"MULTI, then PUBLISH", []psStep{
			{0, "SUBSCRIBE m", 1, false},
			{1, "MULTI", 1, false},
			{1, "PUBLISH m one", 1, false},
			{1, "EXEC", 1, false},
			{0, "", 1, false},
		}},
		{"RESP2 tracking redirected to a subscriber", []psStep{
			{1, "SUBSCRIBE __redis__:invalidate", 1, false},
			{0, "CLIENT TRACKING on REDIRECT {id1}", 1, false},
			{0, "GET tk", 1, false},
			{2, "SET tk 1", 1, false},
			{1, "", 1, false},
			{0, "CLIENT TRACKING on BCAST REDIRECT {id1} PREFIX tb", 1, false},
			{0, "CLIENT TRACKING off", 1, false},
			{0, "CLIENT TRACKING on BCAST REDIRECT {id1} PREFIX tb", 1, false},
			{2, "SET tb1 1", 1, false},
			{1, "", 1, false},
			{0, "CLIENT TRACKING off", 1, false},
			{0, "CLIENT TRACKING on REDIRECT {id3}", 1, false},
			{0, "GET tk", 1, false},
			{2, "SET tk 2", 1, false},
			{3, "PING", 1, false}, // connection 3 never subscribed: it gets nothing
		}},
		{"BCAST gathers a transaction's keys per prefix", []psStep{
			{1, "SUBSCRIBE __redis__:invalidate", 1, false},
			{0, "CLIENT TRACKING on BCAST REDIRECT {id1} PREFIX b: PREFIX a:", 1, false},
			{0, "MULTI\r\nINCR b:2\r\nINCR a:1\r\nINCR c:1\r\nINCR a:2\r\nINCR b:1\r\nINCR a:1\r\nEXEC", 8, false},
			{1, "", 2, false},
			{2, "HELLO 3", 1, true},
			{2, "CLIENT TRACKING on BCAST PREFIX x", 1, false},
			{0, "MSET x1 1 y 2 x0 3", 1, false},
			{2, "", 1, false},
		}},
		{"CLIENT REPLY OFF still pushes", []psStep{
			{0, "HELLO 3", 1, true},
			{0, "CLIENT REPLY OFF\r\nSET rk v\r\nGET rk\r\nSUBSCRIBE ch\r\nPSUBSCRIBE c*\r\nGET rk", 2, false},
			{1, "PUBLISH ch hi", 1, false},
			{0, "", 2, false},
			{0, "CLIENT REPLY ON\r\nGET rk", 2, false},
			{0, "CLIENT REPLY SKIP\r\nGET rk\r\nPING skipped\r\nPING answered", 2, false},
			{0, "CLIENT REPLY SKIP\r\nCLIENT REPLY SKIP\r\nPING skipped\r\nPING answered", 1, false},
			{0, "CLIENT REPLY FOO", 1, false},
			{0, "CLIENT REPLY", 1, false},
			{0, "CLIENT REPLY ON ON", 1, false},
			{0, "CLIENT REPLY OFF\r\nUNSUBSCRIBE ch\r\nMULTI\r\nINCR rc\r\nEXEC\r\nCLIENT REPLY ON\r\nGET rc", 3, false},
		}},
		// A channel of its own: the case before leaves its connection
		// subscribed to c*, and a listener may count that connection
		// until it has seen it close (redis-server, one thread, first).
		{"CLIENT REPLY in RESP2", []psStep{
			{0, "CLIENT REPLY OFF\r\nSET rk v\r\nSUBSCRIBE rch", 1, false},
			{1, "PUBLISH rch hi", 1, false},
			{0, "", 1, false},
			{0, "UNSUBSCRIBE rch\r\nCLIENT REPLY ON", 2, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := psTranscript(t, redis, tc.steps)
			got := psTranscript(t, srv.Addr(), tc.steps)
			for i := range want {
				if i >= len(got) || got[i] != want[i] {
					g := "(none)"
					if i < len(got) {
						g = got[i]
					}
					t.Errorf("step %d %+v:\n listener     %q\n redis-server %q", i, tc.steps[i], g, want[i])
				}
			}
		})
	}
}

// psTranscript runs steps on fresh connections to addr and returns what
// each step read ("" for a skipped one).
func psTranscript(t *testing.T, addr string, steps []psStep) []string {
	t.Helper()
	conns := map[int]*bufio.Reader{}
	ncs := map[int]net.Conn{}
	ids := map[int]string{}
	deadline := time.Now().Add(20 * time.Second)
	get := func(i int) (net.Conn, *bufio.Reader) {
		if nc, ok := ncs[i]; ok {
			return nc, conns[i]
		}
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		nc.SetDeadline(deadline)
		br := bufio.NewReader(nc)
		io.WriteString(nc, "CLIENT ID\r\n")
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = strings.TrimSpace(strings.TrimPrefix(line, ":"))
		ncs[i], conns[i] = nc, br
		return nc, br
	}
	for i := range 4 {
		get(i)
	}
	var out []string
	for _, st := range steps {
		nc, br := get(st.conn)
		if st.raw != "" {
			raw := st.raw
			for i, id := range ids {
				raw = strings.ReplaceAll(raw, fmt.Sprintf("{id%d}", i), id)
			}
			if _, err := io.WriteString(nc, raw+"\r\n"); err != nil {
				t.Fatal(err)
			}
		}
		var b strings.Builder
		for range st.n {
			if err := readFrame(br, &b); err != nil {
				t.Fatalf("%s: step %+v: %v (read %q)", addr, st, err, b.String())
			}
		}
		if st.skip {
			out = append(out, "")
			continue
		}
		out = append(out, b.String())
	}
	return out
}
