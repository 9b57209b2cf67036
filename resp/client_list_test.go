package resp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/internal/memstore"
)

// parseClientList reads CLIENT LIST's lines as BullMQ's parseClientList
// does: each a map of its key=value fields.
func parseClientList(list string) []map[string]string {
	var out []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		m := map[string]string{}
		for _, kv := range strings.Split(line, " ") {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}

// TestClientListAgainstRedis: CLIENT LIST and INFO's maxmemory_policy, as
// BullMQ reads them (Queue.getWorkers finds its workers by the names
// they set; a policy other than noeviction gets a warning), beside
// redis-server: the same connections listed with their ids and names,
// the same ID filter, the same errors. Before, CLIENT LIST was an unknown
// subcommand and getWorkers failed.
func TestClientListAgainstRedis(t *testing.T) {
	targets := []struct{ name, addr string }{
		{"redis-server", startRedisServer(t)},
		{"idemgate", startServer(t, memstore.New(t), "mem", nil).Addr()},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			names := []string{"bull:cXVldWU=:w:worker-1", "", "bull:cXVldWU="}
			var ids []int64
			var conns []*redis.Conn
			for _, name := range names {
				c := client(t, tg.addr).Conn()
				t.Cleanup(func() { c.Close() })
				if name != "" {
					if err := c.ClientSetName(ctx, name).Err(); err != nil {
						t.Fatal(err)
					}
				}
				id, err := c.ClientID(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				ids, conns = append(ids, id), append(conns, c)
			}
			list, err := conns[1].ClientList(ctx).Result()
			if err != nil {
				t.Fatalf("CLIENT LIST: %v", err)
			}
			byID := map[string]map[string]string{}
			for _, m := range parseClientList(list) {
				byID[m["id"]] = m
				if m["addr"] == "" || m["laddr"] == "" || m["age"] == "" || m["user"] != "default" {
					t.Errorf("CLIENT LIST line %v lacks addr, laddr, age or user=default", m)
				}
			}
			for i, id := range ids {
				m, ok := byID[fmt.Sprint(id)]
				if !ok || m["name"] != names[i] {
					t.Errorf("CLIENT LIST has id %d as %v, want name=%q:\n%s", id, m, names[i], list)
				}
			}
			some, err := conns[0].Do(ctx, "CLIENT", "LIST", "ID", ids[2], ids[0], 1<<40).Text()
			got := parseClientList(some)
			var gotNames []string
			for _, m := range got {
				gotNames = append(gotNames, m["name"])
			}
			if want := []string{names[2], names[0]}; err != nil || !slices.Equal(gotNames, want) {
				t.Errorf("CLIENT LIST ID %d %d 2^40 = %q (%v), want the names %q in that order", ids[2], ids[0], some, err, want)
			}

			for _, tc := range []struct {
				args []any
				want string // an error's text, or the reply
			}{
				{[]any{"CLIENT", "LIST", "ID", "x"}, "ERR Invalid client ID"},
				{[]any{"CLIENT", "LIST", "ID", "1", "2x"}, "ERR Invalid client ID"},
				{[]any{"CLIENT", "LIST", "ID"}, "ERR syntax error"},
				{[]any{"CLIENT", "LIST", "TYPE"}, "ERR syntax error"},
				{[]any{"CLIENT", "LIST", "bogus"}, "ERR syntax error"},
				{[]any{"CLIENT", "LIST", "TYPE", "normal", "ID", "1"}, "ERR syntax error"},
				{[]any{"CLIENT", "LIST", "TYPE", "bogus"}, "ERR Unknown client type 'bogus'"},
				{[]any{"CLIENT", "LIST", "TYPE", "master"}, ""},
				{[]any{"CLIENT", "LIST", "TYPE", "replica"}, ""},
				{[]any{"CLIENT", "LIST", "ID", "0", "-1"}, ""},
			} {
				got, err := conns[0].Do(ctx, tc.args...).Text()
				if err != nil {
					got = err.Error()
				}
				if got != tc.want {
					t.Errorf("%v = %q, want %q", tc.args, got, tc.want)
				}
			}
			if normal, err := conns[0].Do(ctx, "CLIENT", "LIST", "TYPE", "normal").Text(); err != nil || len(parseClientList(normal)) != len(names) {
				t.Errorf("CLIENT LIST TYPE normal = %q (%v), want the %d connections", normal, err, len(names))
			}

			for _, section := range [][]any{{"INFO"}, {"INFO", "memory"}, {"INFO", "all"}} {
				info, err := conns[0].Do(ctx, section...).Text()
				if err != nil || !strings.Contains(info, "\r\nmaxmemory_policy:noeviction\r\n") {
					t.Errorf("%v lacks maxmemory_policy:noeviction (%v):\n%s", section, err, info)
				}
			}
		})
	}
}
