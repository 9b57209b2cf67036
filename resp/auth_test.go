package resp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/internal/memstore"
)

var errUnknownSecret = errors.New("unknown secret")

// testAuth knows two tokens: "app-secret" may write, "read-secret" may
// only read.
func testAuth(secret []byte) (Grant, error) {
	switch string(secret) {
	case "app-secret":
		return Grant{Name: "app", Write: true}, nil
	case "read-secret":
		return Grant{Name: "reader"}, nil
	}
	return Grant{}, errUnknownSecret
}

// TestAuth: with tokens, nothing but PING runs before AUTH (NOAUTH, as
// Redis says it); a wrong secret is WRONGPASS; the read role reads and is refused
// writes (NOPERM); go-redis authenticates through HELLO 3 AUTH and AUTH.
func TestAuth(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.Auth = testAuth })
	raw := dialRaw(t, srv.Addr())
	raw.send("PING\r\nGET k\r\nAUTH wrong\r\nAUTH bob app-secret\r\nHELLO 3\r\nAUTH app-secret\r\nSET k v\r\n")
	want := []string{"+PONG\r\n", "-NOAUTH Authentication required.\r\n",
		"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
		"-WRONGPASS invalid username-password pair or user is disabled.\r\n"}
	got := raw.replies(6)
	if strings.Join(got[:4], "") != strings.Join(want, "") || !strings.HasPrefix(got[4], "-NOAUTH HELLO must be called") || got[5] != "+OK\r\n" {
		t.Fatalf("replies = %q", got)
	}
	if r := raw.replies(1); r[0] != "+OK\r\n" {
		t.Fatalf("SET after AUTH = %q", r)
	}

	ctx := ctxT(t, 20*time.Second)
	for _, proto := range []int{2, 3} {
		app := client(t, srv.Addr(), func(o *redis.Options) { o.Password, o.Protocol = "app-secret", proto })
		if err := app.Set(ctx, "k2", "v", 0).Err(); err != nil {
			t.Fatalf("resp%d: app SET: %v", proto, err)
		}
		reader := client(t, srv.Addr(), func(o *redis.Options) { o.Username, o.Password, o.Protocol = "reader", "read-secret", proto })
		if v, err := reader.Get(ctx, "k2").Result(); err != nil || v != "v" {
			t.Fatalf("resp%d: reader GET = %q, %v", proto, v, err)
		}
		for _, cmd := range [][]any{{"SET", "k2", "x"}, {"DEL", "k2"}, {"IDEM.TOKEN", "s"}, {"INCR", "n"}} {
			err := reader.Do(ctx, cmd...).Err()
			if err == nil || !strings.HasPrefix(err.Error(), "NOPERM User reader has no permissions to run the '") {
				t.Fatalf("resp%d: reader %v: %v, want NOPERM", proto, cmd, err)
			}
		}
		bad := client(t, srv.Addr(), func(o *redis.Options) { o.Password, o.Protocol = "nope", proto })
		if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Fatalf("resp%d: a wrong secret: %v", proto, err)
		}
	}

	// Turned off (a reload without tokens): AUTH is refused as Redis
	// refuses it without a password.
	srv.SetAuth(nil)
	open := dialRaw(t, srv.Addr())
	open.send("AUTH x\r\nAUTH default x\r\nGET k\r\n")
	if r := open.replies(3); !strings.HasPrefix(r[0], "-ERR AUTH <password> called without any password configured") ||
		r[1] != "+OK\r\n" || r[2] != "$1\r\nv\r\n" {
		t.Fatalf("without auth: %q", r)
	}
}
