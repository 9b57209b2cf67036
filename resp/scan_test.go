package resp

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// scanRefusals are SCAN's argument errors, and scans of an empty keyspace
// (which every cursor and option answers alike): replies byte for byte
// Redis 7's.
var scanRefusals = [][]string{
	{"SELECT", "6"}, {"SCAN"}, {"SCAN", "x"}, {"SCAN", " 1"}, {"SCAN", "1 "}, {"SCAN", "1x"}, {"SCAN", "0x10"}, {"SCAN", "-"},
	{"SCAN", "+"}, {"SCAN", "18446744073709551616"}, {"SCAN", "99999999999999999999999"}, {"SCAN", "1.5"},
	{"SCAN", "x", "COUNT", "0"}, {"SCAN", "0", "COUNT", "0"}, {"SCAN", "0", "COUNT", "-1"}, {"SCAN", "0", "COUNT", "x"},
	{"SCAN", "0", "COUNT", "1.5"}, {"SCAN", "0", "COUNT", "9223372036854775808"}, {"SCAN", "0", "COUNT"}, {"SCAN", "0", "MATCH"},
	{"SCAN", "0", "TYPE"}, {"SCAN", "0", "FOO"}, {"SCAN", "0", "FOO", "bar"}, {"SCAN", "0", "COUNT", "5", "MATCH"},
	{"SCAN", "0"}, {"SCAN", "-1"}, {"SCAN", "+7"}, {"SCAN", "-0"}, {"SCAN", "01"}, {"SCAN", ""}, {"SCAN", "18446744073709551615"},
	{"SCAN", "-18446744073709551615"}, {"SCAN", "0", "TYPE", "foo"}, {"SCAN", "0", "COUNT", "2147483648"},
	{"SCAN", "0", "COUNT", "9223372036854775807"}, {"SCAN", "0", "match", "*", "count", "5", "type", "string"},
	{"SCAN", "0", "TYPE", "string", "TYPE", "hash"}, {"SCAN", "0", "COUNT", "1", "COUNT", "0"}, {"SCAN", "0", "MATCH", "a", "MATCH", "b"},
}

// TestScanAgainstRedis: SCAN's refusals answer as redis-server's do; and
// whole scans (go-redis's Scan and ScanType, which parse the cursor as a
// 64-bit number) of two keyspaces, with COUNT, MATCH and TYPE, answer the
// same set of keys as redis-server's, each key once, on a follower and
// on the leader.
func TestScanAgainstRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startPatientCluster(t)
	leader := tc.rc.WaitLeader(time.Minute)
	rc, ic := dialRaw(t, redisAddr), dialRaw(t, tc.addrs[(leader+1)%3])
	for _, cmd := range scanRefusals {
		rc.send(array(cmd...))
		ic.send(array(cmd...))
		if want, got := rc.replies(1)[0], ic.replies(1)[0]; got != want {
			t.Errorf("%q:\n idemgate %q\n redis    %q", cmd, got, want)
		}
	}
	ctx := context.Background() // each step is bounded by the listener; the test by -timeout
	for _, db := range []int{0, 3} {
		fill := client(t, redisAddr, func(o *redis.Options) { o.DB = db })
		ifill := client(t, tc.addrs[leader], func(o *redis.Options) { o.DB = db }, patient)
		for _, c := range []*redis.Client{fill, ifill} {
			var kv []any
			for i := 0; i < 700; i++ {
				kv = append(kv, fmt.Sprintf("db%d:user:%d", db, i), "v")
			}
			kv = append(kv, "", "empty", "a\x00b", "nul", "\xff\xfe", "bin")
			if err := c.MSet(ctx, kv...).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.RPush(ctx, fmt.Sprintf("db%d:list", db), "x").Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, db := range []int{0, 3} {
		for _, scan := range []struct {
			match, typ string
			count      int64
		}{{"", "", 0}, {"", "", 7}, {"*", "", 1000}, {"db?:user:1*", "", 13}, {"*:5?", "", 1}, {"nomatch*", "", 50},
			{"", "string", 30}, {"", "STRING", 30}, {"", "hash", 30}, {"*0", "string", 3}, {"", "list", 20}, {"*list", "LIST", 1}} {
			want := fullScan(t, client(t, redisAddr, func(o *redis.Options) { o.DB = db }), scan.match, scan.typ, scan.count)
			for _, node := range []int{leader, (leader + 1) % 3} {
				got := fullScan(t, client(t, tc.addrs[node], func(o *redis.Options) { o.DB = db }, patient), scan.match, scan.typ, scan.count)
				if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
					t.Errorf("db %d SCAN MATCH %q TYPE %q COUNT %d on node %d: %d keys, redis %d", db, scan.match, scan.typ, scan.count, node, len(got), len(want))
				}
			}
		}
	}
}

// fullScan scans from cursor 0 to the end and returns the keys, sorted;
// a key answered twice fails the test (Redis may do it while the keyspace
// grows or rehashes, and neither does here). The scan is bounded by its
// calls, each by c's own timeouts, not by a window for all of them: a
// scan of COUNT 1 is hundreds of linearizable reads.
func fullScan(t *testing.T, c *redis.Client, match, typ string, count int64) []string {
	t.Helper()
	ctx := context.Background()
	seen := map[string]bool{}
	var cursor uint64
	for calls := 0; ; calls++ {
		var (
			keys []string
			err  error
		)
		if typ != "" {
			keys, cursor, err = c.ScanType(ctx, cursor, match, count, typ).Result()
		} else {
			keys, cursor, err = c.Scan(ctx, cursor, match, count).Result()
		}
		if err != nil {
			t.Fatalf("SCAN: %v", err)
		}
		for _, k := range keys {
			if seen[k] {
				t.Fatalf("SCAN answered %q twice", k)
			}
			seen[k] = true
		}
		if cursor == 0 {
			break
		}
		if calls > 10000 {
			t.Fatal("the scan does not end")
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
