package resp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/version"
)

// TestInfoVersion: INFO names the build as every face does (package
// version), with no config to set.
func TestInfoVersion(t *testing.T) {
	saved := version.Release
	version.Release = "v9.8.7-info"
	t.Cleanup(func() { version.Release = saved })
	srv := startServer(t, memstore.New(t), "mem", nil)
	got := ask(t, srv.Addr(), "INFO server\r\n")
	if !strings.Contains(got, "\r\nidemgate_version:v9.8.7-info\r\n") {
		t.Fatalf("INFO server = %q, want idemgate_version:v9.8.7-info", got)
	}
}

// TestErrorStatsAgainstRedis: the same stream of errors to redis-server
// and to the listener leaves the same INFO errorstats and
// total_error_replies: a command's refusal, WRONGTYPE, a script's own
// codes (redis.error_reply, one with a ':'), a script stopped by its
// command's error, an error inside EXEC's array, an unknown command; a
// status reply counts nothing; CONFIG RESETSTAT empties them.
func TestErrorStatsAgainstRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	srv := startServer(t, memstore.New(t), "mem", nil)
	stream := "CONFIG RESETSTAT\r\nGET\r\nSET es:k v\r\nLPUSH es:k x\r\n" +
		"EVAL \"return redis.error_reply('MY_ERR_CODE custom msg')\" 0\r\n" +
		"EVAL \"return redis.error_reply('')\" 0\r\n" +
		"EVAL \"return redis.error_reply('A:B\\r\\nC x')\" 0\r\n" +
		"EVAL \"return redis.status_reply('MY_OK_CODE custom msg')\" 0\r\n" +
		"EVAL \"return redis.call('incr', KEYS[1])\" 1 es:k\r\n" +
		"MULTI\r\nINCR es:k\r\nGET es:k\r\nEXEC\r\n" +
		"NOSUCHCOMMAND\r\n"
	section := func(addr string) (string, string) {
		c := dialRaw(t, addr)
		c.send(stream)
		c.replies(strings.Count(stream, "\r\n"))
		c.send("INFO errorstats\r\nINFO stats\r\n")
		r := c.replies(2)
		total := ""
		for _, line := range strings.Split(r[1], "\r\n") {
			if strings.HasPrefix(line, "total_error_replies:") {
				total = line
			}
		}
		return r[0][strings.Index(r[0], "# Errorstats"):], total
	}
	wantStats, wantTotal := section(redisAddr)
	gotStats, gotTotal := section(srv.Addr())
	if gotStats != wantStats || gotTotal != wantTotal {
		t.Fatalf("idemgate:\n%q %q\nredis-server:\n%q %q", gotStats, gotTotal, wantStats, wantTotal)
	}
	c := dialRaw(t, srv.Addr())
	c.send("CONFIG RESETSTAT\r\nINFO errorstats\r\nCONFIG RESETSTAT x\r\n")
	if r := c.replies(3); !strings.HasSuffix(r[1], "# Errorstats\r\n\r\n") || r[2] != "-ERR wrong number of arguments for 'config|resetstat' command\r\n" {
		t.Fatalf("after CONFIG RESETSTAT: %q", r)
	}
}

// TestErrorStatsBounded: a script can make any error code; at the 129th
// the table holds ERRORSTATS_DISABLED alone and counts no other code
// until CONFIG RESETSTAT (Redis 7.4's bound), while total_error_replies
// goes on.
func TestErrorStatsBounded(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", nil)
	c := dialRaw(t, srv.Addr())
	var b strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "EVAL \"return redis.error_reply('E%d x')\" 0\r\n", i)
	}
	c.send(b.String())
	c.replies(200)
	c.send("INFO errorstats\r\nINFO stats\r\n")
	r := c.replies(2)
	if !strings.Contains(r[0], "# Errorstats\r\nerrorstat_ERRORSTATS_DISABLED:count=1\r\n\r\n") || !strings.Contains(r[1], "total_error_replies:200\r\n") {
		t.Fatalf("after 200 codes: %q %q", r[0], r[1])
	}
	c.send("CONFIG RESETSTAT\r\nGET\r\nINFO errorstats\r\n")
	if r := c.replies(3); !strings.Contains(r[2], "# Errorstats\r\nerrorstat_ERR:count=1\r\n\r\n") {
		t.Fatalf("after CONFIG RESETSTAT and an error: %q", r[2])
	}
}
