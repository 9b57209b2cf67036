package resp

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestCompareAndSetGoRedis: Redis 8.4's SET IFEQ|IFNE|IFDEQ|IFDNE, DELEX
// and DIGEST through go-redis's own calls for them, on a 3-node cluster,
// as go-redis's test suite exercises them against Redis 8.4 (redis-server
// 7.0.15, the control the other tests use, has none of them), with
// DIGEST's example from Redis's documentation.
func TestCompareAndSetGoRedis(t *testing.T) {
	tc := startCluster(t, nil)
	ctx := ctxT(t, 60*time.Second)
	c := client(t, tc.addrs[1]) // a follower's listener: every write is forwarded
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	value := func(key, want string) {
		t.Helper()
		got, err := c.Get(ctx, key).Result()
		if want == "" && err == redis.Nil {
			return
		}
		if err != nil || got != want {
			t.Fatalf("GET %s = %q, %v; want %q", key, got, err, want)
		}
	}

	must(c.Set(ctx, "key1", "Hello world", 0).Err())
	if d, err := c.Do(ctx, "DIGEST", "key1").Text(); err != nil || d != "b6acb9d84a38ff74" {
		t.Fatalf("DIGEST key1 = %q, %v; want b6acb9d84a38ff74 (redis.io/commands/digest)", d, err)
	}
	if err := c.Digest(ctx, "nonexistent").Err(); err != redis.Nil {
		t.Fatalf("DIGEST of an absent key: %v, want nil", err)
	}

	// SetIFEQ: the state transition guard.
	must(c.Set(ctx, "order:42", "PROCESSING", 0).Err())
	if err := c.SetIFEQ(ctx, "order:42", "PAID", "PENDING", 0).Err(); err != redis.Nil {
		t.Fatalf("SET IFEQ on another state: %v, want nil", err)
	}
	value("order:42", "PROCESSING")
	if v, err := c.SetIFEQ(ctx, "order:42", "PAID", "PROCESSING", 0).Result(); err != nil || v != "OK" {
		t.Fatalf("SET IFEQ on the state seen = %q, %v", v, err)
	}
	value("order:42", "PAID")
	if err := c.SetIFEQ(ctx, "absent", "v", "", 0).Err(); err != redis.Nil {
		t.Fatalf("SET IFEQ creates a key: %v", err)
	}
	value("absent", "")

	// With an expiry and with GET.
	must(c.Set(ctx, "token", "token-123", 0).Err())
	must(c.SetIFEQ(ctx, "token", "token-456", "token-123", 500*time.Millisecond).Err())
	if ttl, err := c.PTTL(ctx, "token").Result(); err != nil || ttl <= 0 || ttl > 500*time.Millisecond {
		t.Fatalf("PTTL after SET IFEQ PX 500 = %v, %v", ttl, err)
	}
	must(c.Set(ctx, "key", "old", 0).Err())
	if v, err := c.SetArgs(ctx, "key", "new", redis.SetArgs{Mode: "IFEQ", MatchValue: "old", Get: true}).Result(); err != nil || v != "old" {
		t.Fatalf("SET IFEQ GET = %q, %v; want old", v, err)
	}
	if v, err := c.SetArgs(ctx, "key", "newer", redis.SetArgs{Mode: "IFEQ", MatchValue: "old", Get: true}).Result(); err != nil || v != "new" {
		t.Fatalf("SET IFEQ GET refused = %q, %v; want the value kept, new", v, err)
	}
	value("key", "new")

	// IFNE creates, and refuses only the value it names.
	if v, err := c.SetIFNE(ctx, "status", "processing", "completed", 0).Result(); err != nil || v != "OK" {
		t.Fatalf("SET IFNE of an absent key = %q, %v", v, err)
	}
	if err := c.SetIFNE(ctx, "status", "x", "processing", 0).Err(); err != redis.Nil {
		t.Fatalf("SET IFNE of the value named: %v, want nil", err)
	}
	value("status", "processing")

	// The digest forms, with DIGEST's answer as the client reads it.
	must(c.Set(ctx, "doc", "value1", 0).Err())
	d, err := c.Digest(ctx, "doc").Result()
	must(err)
	if err := c.SetIFDEQ(ctx, "doc", "value2", d+1, 0).Err(); err != redis.Nil {
		t.Fatalf("SET IFDEQ with another digest: %v", err)
	}
	if v, err := c.SetIFDEQ(ctx, "doc", "value2", d, 0).Result(); err != nil || v != "OK" {
		t.Fatalf("SET IFDEQ with the digest = %q, %v", v, err)
	}
	if err := c.SetIFDNE(ctx, "doc", "value3", d, 0).Err(); err != nil {
		t.Fatalf("SET IFDNE with the old digest: %v", err)
	}
	value("doc", "value3")

	// DELEX: a lock released only by its holder, without a script.
	must(c.Set(ctx, "lock", "token-1", 0).Err())
	for _, tc := range []struct {
		args redis.DelExArgs
		want int64
	}{
		{redis.DelExArgs{Mode: "IFEQ", MatchValue: "token-2"}, 0},
		{redis.DelExArgs{Mode: "IFNE", MatchValue: "token-1"}, 0},
		{redis.DelExArgs{Mode: "IFDEQ", MatchDigest: 12345}, 0},
		{redis.DelExArgs{Mode: "IFEQ", MatchValue: "token-1"}, 1},
		{redis.DelExArgs{Mode: "IFEQ", MatchValue: "token-1"}, 0},
	} {
		if n, err := c.DelExArgs(ctx, "lock", tc.args).Result(); err != nil || n != tc.want {
			t.Fatalf("DELEX lock %+v = %d, %v; want %d", tc.args, n, err, tc.want)
		}
	}
	must(c.Set(ctx, "lock", "token-3", 0).Err())
	ld, err := c.Digest(ctx, "lock").Result()
	must(err)
	if n, err := c.DelExArgs(ctx, "lock", redis.DelExArgs{Mode: "IFDEQ", MatchDigest: ld}).Result(); err != nil || n != 1 {
		t.Fatalf("DELEX IFDEQ with the digest = %d, %v", n, err)
	}
	if n, err := c.Do(ctx, "DELEX", "status").Int(); err != nil || n != 1 {
		t.Fatalf("DELEX without a condition = %d, %v", n, err)
	}
	value("status", "")
}

// TestCompareAndSetHostile: what SET's conditions, DELEX and DIGEST refuse,
// each with its exact answer, and that a refusal changed nothing.
func TestCompareAndSetHostile(t *testing.T) {
	tc := startCluster(t, nil)
	c := dialRaw(t, tc.addrs[0])
	c.send(array("SET", "k", "v"))
	c.expect("SET", []string{"+OK\r\n"})
	for _, h := range []struct {
		req  []string
		want string
	}{
		{[]string{"SET", "k", "x", "IFEQ"}, "-ERR syntax error\r\n"},
		{[]string{"SET", "k", "x", "NX", "IFEQ", "v"}, "-ERR syntax error\r\n"},
		{[]string{"SET", "k", "x", "IFEQ", "v", "XX"}, "-ERR syntax error\r\n"},
		{[]string{"SET", "k", "x", "IFEQ", "v", "IFNE", "w"}, "-ERR syntax error\r\n"},
		{[]string{"SET", "k", "x", "IFDEQ", "xyz"}, "-" + msgBadDigest + "\r\n"},
		{[]string{"SET", "k", "x", "IFDEQ", "00000000000000000"}, "-" + msgBadDigest + "\r\n"},
		{[]string{"SET", "k", "x", "IFDEQ", ""}, "-" + msgBadDigest + "\r\n"},
		{[]string{"SET", "k", "x", "IFDNE", "-1"}, "-" + msgBadDigest + "\r\n"},
		{[]string{"SET", "k", "x", "IFEQ", "w"}, "$-1\r\n"},
		{[]string{"SET", "k", "x", "IFNE", "v"}, "$-1\r\n"},
		{[]string{"SET", "k", "x", "IFEQ", "w", "GET"}, "$1\r\nv\r\n"},
		{[]string{"DELEX"}, "-ERR wrong number of arguments for 'delex' command\r\n"},
		{[]string{"DELEX", "k", "IFEQ"}, "-ERR syntax error\r\n"},
		{[]string{"DELEX", "k", "IFEQ", "v", "w"}, "-ERR syntax error\r\n"},
		{[]string{"DELEX", "k", "NX", "v"}, "-ERR syntax error\r\n"},
		{[]string{"DELEX", "k", "IFDEQ", "not-hex"}, "-" + msgBadDigest + "\r\n"},
		{[]string{"DELEX", "k", "IFEQ", "w"}, ":0\r\n"},
		{[]string{"DELEX", "absent", "IFNE", "w"}, ":0\r\n"},
		{[]string{"DIGEST"}, "-ERR wrong number of arguments for 'digest' command\r\n"},
		{[]string{"DIGEST", "a", "b"}, "-ERR wrong number of arguments for 'digest' command\r\n"},
		{[]string{"DIGEST", "absent"}, "$-1\r\n"},
		{[]string{"SET", "k", strings.Repeat("z", 1<<16), "IFEQ", strings.Repeat("y", 1<<16)}, "$-1\r\n"},
	} {
		c.send(array(h.req...))
		c.expect(strings.Join(h.req, " "), []string{h.want})
	}
	c.send(array("GET", "k"))
	c.expect("GET after the refusals", []string{"$1\r\nv\r\n"})
	// A reserved key is refused on DELEX and DIGEST as on every command.
	for _, name := range []string{"DELEX", "DIGEST"} {
		c.send(array(name, "\x00idem"))
		if got := c.replies(1)[0]; !strings.HasPrefix(got, "-ERR reserved key") {
			t.Errorf("%s of a reserved key = %q", name, got)
		}
	}
}
