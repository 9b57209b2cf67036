package resp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestStreamGroupsHostile: the groups' bounds and their edges, each with
// the exact answer: names past MaxGroupName, unknown groups and
// consumers, huge and negative counts, XCLAIM and XAUTOCLAIM of entries
// deleted from the stream, a group on keys of every other kind. (A group
// of 10^5 pending entries: fsm's TestStreamGroupPendingBig.)
func TestStreamGroupsHostile(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", nil)
	c := dialRaw(t, srv.Addr())
	long := strings.Repeat("n", 8<<10+1)
	tooLong := "-ERR consumer group or consumer name too long: at most 8192 bytes\r\n"
	noGroup := func(k, g string) string {
		return fmt.Sprintf("-NOGROUP No such key '%s' or consumer group '%s'\r\n", k, g)
	}
	table := []struct {
		args []string
		want string
	}{
		{[]string{"XADD", "h:s", "1-1", "f", "v"}, "$3\r\n1-1\r\n"},
		{[]string{"XADD", "h:s", "2-1", "f", "v"}, "$3\r\n2-1\r\n"},
		{[]string{"XGROUP", "CREATE", "h:s", long, "0"}, tooLong},
		{[]string{"XGROUP", "CREATE", "h:s", "g", "0"}, "+OK\r\n"},
		{[]string{"XGROUP", "CREATECONSUMER", "h:s", "g", long}, tooLong},
		{[]string{"XREADGROUP", "GROUP", "g", long, "STREAMS", "h:s", ">"}, tooLong},
		{[]string{"XCLAIM", "h:s", "g", long, "0", "1-1"}, tooLong},
		{[]string{"XAUTOCLAIM", "h:s", long, "c", "0", "0"}, tooLong},
		{[]string{"XPENDING", "h:s", "g", "-", "+", "1", long}, tooLong},
		// unknown groups and consumers
		{[]string{"XREADGROUP", "GROUP", "nog", "c", "STREAMS", "h:s", ">"}, "-NOGROUP No such key 'h:s' or consumer group 'nog' in XREADGROUP with GROUP option\r\n"},
		{[]string{"XCLAIM", "h:s", "nog", "c", "0", "1-1"}, noGroup("h:s", "nog")},
		{[]string{"XAUTOCLAIM", "h:s", "nog", "c", "0", "0"}, noGroup("h:s", "nog")},
		{[]string{"XPENDING", "h:s", "nog"}, noGroup("h:s", "nog")},
		{[]string{"XPENDING", "h:s", "g", "-", "+", "10", "nobody"}, "*0\r\n"},
		{[]string{"XGROUP", "DELCONSUMER", "h:s", "g", "nobody"}, ":0\r\n"},
		{[]string{"XACK", "h:s", "nog", "1-1"}, ":0\r\n"},
		{[]string{"XINFO", "CONSUMERS", "h:s", "nog"}, "-NOGROUP No such consumer group 'nog' for key name 'h:s'\r\n"},
		// huge and negative counts
		{[]string{"XREADGROUP", "GROUP", "g", "c", "COUNT", "9223372036854775807", "STREAMS", "h:s", ">"},
			"*1\r\n*2\r\n$3\r\nh:s\r\n*2\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "COUNT", "9223372036854775808", "STREAMS", "h:s", ">"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "COUNT", "-9223372036854775808", "STREAMS", "h:s", "0"},
			"*1\r\n*2\r\n$3\r\nh:s\r\n*2\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{[]string{"XPENDING", "h:s", "g", "-", "+", "9223372036854775807"}, "*2\r\n*4\r\n$3\r\n1-1\r\n$1\r\nc\r\n:0\r\n:2\r\n*4\r\n$3\r\n2-1\r\n$1\r\nc\r\n:0\r\n:2\r\n"},
		{[]string{"XAUTOCLAIM", "h:s", "g", "d", "9223372036854775807", "0", "COUNT", "576460752303423487"}, "-ERR Insufficient memory, failed allocating transient memory, COUNT too high.\r\n"},
		{[]string{"XAUTOCLAIM", "h:s", "g", "d", "9223372036854775807", "0", "COUNT", "576460752303423488"}, "-ERR COUNT must be > 0\r\n"},
		{[]string{"XAUTOCLAIM", "h:s", "g", "d", "9223372036854775807", "0", "COUNT", "1000000000000"}, "*3\r\n$3\r\n0-0\r\n*0\r\n*0\r\n"},
		{[]string{"XCLAIM", "h:s", "g", "d", "-9223372036854775808", "1-1", "IDLE", "-9223372036854775808", "RETRYCOUNT", "-1", "JUSTID"}, "*1\r\n$3\r\n1-1\r\n"},
		{[]string{"XCLAIM", "h:s", "g", "d", "0", "1-1", "TIME", "9223372036854775807", "RETRYCOUNT", "9223372036854775807", "JUSTID"}, "*1\r\n$3\r\n1-1\r\n"},
		{[]string{"XPENDING", "h:s", "g", "-", "+", "1"}, "*1\r\n*4\r\n$3\r\n1-1\r\n$1\r\nd\r\n:0\r\n:9223372036854775807\r\n"},
		// entries deleted from the stream
		{[]string{"XDEL", "h:s", "1-1"}, ":1\r\n"},
		{[]string{"XCLAIM", "h:s", "g", "e", "0", "1-1", "FORCE"}, "*0\r\n"},
		{[]string{"XPENDING", "h:s", "g"}, "*4\r\n:1\r\n$3\r\n2-1\r\n$3\r\n2-1\r\n*1\r\n*2\r\n$1\r\nc\r\n$1\r\n1\r\n"},
		{[]string{"XCLAIM", "h:s", "g", "e", "0", "9-9", "FORCE"}, "*0\r\n"},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "h:s", "0"}, "*1\r\n*2\r\n$3\r\nh:s\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{[]string{"XDEL", "h:s", "2-1"}, ":1\r\n"},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "h:s", "0"}, "*1\r\n*2\r\n$3\r\nh:s\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*-1\r\n"},
		{[]string{"XAUTOCLAIM", "h:s", "g", "e", "0", "0"}, "*3\r\n$3\r\n0-0\r\n*0\r\n*1\r\n$3\r\n2-1\r\n"},
		{[]string{"XPENDING", "h:s", "g"}, "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n"},
		// a group on keys of every other kind
		{[]string{"SET", "h:str", "v"}, "+OK\r\n"},
		{[]string{"RPUSH", "h:l", "v"}, ":1\r\n"},
		{[]string{"HSET", "h:h", "f", "v"}, ":1\r\n"},
		{[]string{"SADD", "h:set", "m"}, ":1\r\n"},
		{[]string{"ZADD", "h:z", "1", "m"}, ":1\r\n"},
	}
	for _, k := range []string{"h:str", "h:l", "h:h", "h:set", "h:z"} {
		for _, args := range [][]string{{"XGROUP", "CREATE", k, "g", "0", "MKSTREAM"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", k, ">"},
			{"XACK", k, "g", "1-1"}, {"XPENDING", k, "g"}, {"XCLAIM", k, "g", "c", "0", "1-1"}, {"XAUTOCLAIM", k, "g", "c", "0", "0"},
			{"XINFO", "GROUPS", k}} {
			table = append(table, struct {
				args []string
				want string
			}{args, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"})
		}
	}
	for _, tc := range table {
		c.send(array(tc.args...))
		if got := c.replies(1)[0]; maskGroupTimes(t, got, tc.args) != maskGroupTimes(t, tc.want, tc.args) {
			t.Errorf("%.120q:\n got  %.300q\n want %.300q", tc.args, got, tc.want)
		}
	}
}
