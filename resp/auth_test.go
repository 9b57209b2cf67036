package resp

import (
	"crypto/sha256"
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
func testAuth(sum [sha256.Size]byte) (Grant, error) {
	return authOf(map[string]Grant{"app-secret": {Name: "app", Write: true}, "read-secret": {Name: "reader"}})(sum)
}

// authOf is an AuthFunc that knows the secrets of tokens.
func authOf(tokens map[string]Grant) AuthFunc {
	sums := map[[sha256.Size]byte]Grant{}
	for secret, g := range tokens {
		sums[sha256.Sum256([]byte(secret))] = g
	}
	return func(sum [sha256.Size]byte) (Grant, error) {
		if g, ok := sums[sum]; ok {
			return g, nil
		}
		return Grant{}, errUnknownSecret
	}
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

// TestReloadRevokes: a reload (SetAuth) closes, before it returns, every
// open connection whose token it removed or took writing or the admin
// role from, and such a connection runs nothing it sent after; connections
// whose token stays
// (with as much or more) are untouched and keep what they had, and so do
// unauthenticated ones, which stay unauthenticated.
func TestReloadRevokes(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) {
		c.Auth = authOf(map[string]Grant{"gone": {Name: "gone", Write: true}, "stays": {Name: "stays", Write: true},
			"shrinks": {Name: "shrinks", Write: true}, "grows": {Name: "grows"}, "demoted": {Name: "demoted", Write: true, Admin: true}})
	})
	conns := map[string]*rawConn{}
	for _, secret := range []string{"gone", "stays", "shrinks", "grows", "demoted", ""} {
		c := dialRaw(t, srv.Addr())
		if secret != "" {
			c.send("AUTH " + secret + "\r\n")
			c.expect("AUTH "+secret, []string{"+OK\r\n"})
		}
		c.send("PING\r\n")
		c.expect("PING", []string{"+PONG\r\n"})
		conns[secret] = c
	}
	// One that was mid-transaction and one pooled by a client library.
	conns["gone"].send("MULTI\r\n")
	conns["gone"].expect("MULTI", []string{"+OK\r\n"})
	ctx := ctxT(t, 20*time.Second)
	lib := client(t, srv.Addr(), func(o *redis.Options) { o.Password, o.PoolSize, o.MaxRetries = "gone", 1, -1 })
	if err := lib.Set(ctx, "lib", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}

	srv.SetAuth(authOf(map[string]Grant{"stays": {Name: "stays", Write: true}, "shrinks": {Name: "shrinks"},
		"grows": {Name: "grows", Write: true}, "new": {Name: "new", Write: true}, "demoted": {Name: "demoted", Write: true}}))

	for _, secret := range []string{"gone", "shrinks", "demoted"} { // demoted: no longer admin, so no FLUSHALL
		c := conns[secret]
		c.send("SET after-" + secret + " 1\r\n") // never run: the server closed the connection
		if !c.closed() {
			t.Fatalf("the connection of %q is open after the reload", secret)
		}
	}
	if err := lib.Set(ctx, "lib", "2", 0).Err(); err == nil {
		t.Fatal("go-redis's pooled connection with a revoked token still writes")
	}
	if err := lib.Get(ctx, "lib").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("go-redis reconnecting with a revoked token: %v, want WRONGPASS", err)
	}
	stays := conns["stays"]
	stays.send("SET k v\r\nGET after-gone\r\nGET after-shrinks\r\nGET lib\r\n")
	stays.expect("the token that stays", []string{"+OK\r\n", "$-1\r\n", "$-1\r\n", "$1\r\n1\r\n"})
	grows := conns["grows"]
	grows.send("GET k\r\nSET k w\r\n")
	grows.expect("the token that grew", []string{"$1\r\nv\r\n",
		"-NOPERM User grows has no permissions to run the 'set' command\r\n"})
	unauth := conns[""]
	unauth.send("PING\r\nGET k\r\n")
	unauth.expect("the unauthenticated connection", []string{"+PONG\r\n", "-NOAUTH Authentication required.\r\n"})
	again := dialRaw(t, srv.Addr())
	again.send("AUTH gone\r\nAUTH shrinks\r\nSET k x\r\nAUTH new\r\nSET k x\r\n")
	again.expect("new connections", []string{"-WRONGPASS invalid username-password pair or user is disabled.\r\n", "+OK\r\n",
		"-NOPERM User shrinks has no permissions to run the 'set' command\r\n", "+OK\r\n", "+OK\r\n"})
}

// TestScriptFlushNeedsAdmin: SCRIPT FLUSH empties the scripts every
// client of the node shares, as FLUSHDB empties its keys: only the admin
// role's token may; read and app tokens get NOPERM, and the scripts stay.
// SCRIPT LOAD and EXISTS stay open to every role.
func TestScriptFlushNeedsAdmin(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) {
		c.Auth = authOf(map[string]Grant{"read-secret": {Name: "reader"}, "app-secret": {Name: "app", Write: true},
			"admin-secret": {Name: "ops", Write: true, Admin: true}})
	})
	sha := "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" // return 1
	for _, tc := range []struct {
		secret string
		want   []string
	}{
		{"read-secret", []string{"+OK\r\n", "$40\r\n" + sha + "\r\n",
			"-NOPERM User reader has no permissions to run the 'script|flush' command\r\n",
			"-NOPERM User reader has no permissions to run the 'script|flush' command\r\n", "*1\r\n:1\r\n"}},
		{"app-secret", []string{"+OK\r\n", "$40\r\n" + sha + "\r\n",
			"-NOPERM User app has no permissions to run the 'script|flush' command\r\n",
			"-NOPERM User app has no permissions to run the 'script|flush' command\r\n", "*1\r\n:1\r\n"}},
		{"admin-secret", []string{"+OK\r\n", "$40\r\n" + sha + "\r\n", "+OK\r\n", "+OK\r\n", "*1\r\n:0\r\n"}},
	} {
		c := dialRaw(t, srv.Addr())
		c.send(array("AUTH", tc.secret) + array("SCRIPT", "LOAD", "return 1") + array("SCRIPT", "FLUSH") + array("SCRIPT", "FLUSH", "ASYNC") + array("SCRIPT", "EXISTS", sha))
		c.expect(tc.secret, tc.want)
	}
}

// TestResetStatNeedsAdmin: CONFIG RESETSTAT empties the node's error
// counts, which every client's monitoring reads: read and app tokens get
// NOPERM and the counts stay; the admin role's empties them.
func TestResetStatNeedsAdmin(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) {
		c.Auth = authOf(map[string]Grant{"read-secret": {Name: "reader"}, "app-secret": {Name: "app", Write: true},
			"admin-secret": {Name: "ops", Write: true, Admin: true}})
	})
	for _, tc := range []struct {
		secret, want, after string
	}{
		{"read-secret", "-NOPERM User reader has no permissions to run the 'config|resetstat' command\r\n", "errorstat_NOPERM:count=1\r\n"},
		{"app-secret", "-NOPERM User app has no permissions to run the 'config|resetstat' command\r\n", "errorstat_NOPERM:count=2\r\n"},
		{"admin-secret", "+OK\r\n", "# Errorstats\r\n\r\n"},
	} {
		c := dialRaw(t, srv.Addr())
		c.send(array("AUTH", tc.secret) + array("CONFIG", "RESETSTAT") + array("INFO", "errorstats"))
		r := c.replies(3)
		if r[1] != tc.want || !strings.Contains(r[2], tc.after) {
			t.Errorf("%s: %q, then INFO %q; want %q, then %q", tc.secret, r[1], r[2], tc.want, tc.after)
		}
	}
}
