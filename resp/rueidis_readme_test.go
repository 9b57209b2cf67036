package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// TestRueidisREADME runs the code of rueidis's README (v1.0.79), each
// example as the README writes it (only the address, and what the test
// reads of the results, added), against a follower of a 3-node cluster,
// with writes and publishes made through another node, and against
// redis-server 7.0, the control: every example must give the same
// results. Getting Started (SET NX, HGETALL), auto and manual
// pipelining, MGet, client-side caching (DoCache, DoMultiCache, CacheTTL,
// IsCacheHit; RESP3 tracking in opt-in mode, and in broadcast mode),
// retryable commands, Pub/Sub (Receive with its hooks; SetPubSubHooks),
// the CAS transaction, the Lua script, streaming reads, the response
// cheatsheet and DecodeSliceOfJSON. The README's lines that need Redis
// 7.4 or a module (HEXPIRE, FT.SEARCH, GEOSEARCH) fail on both and are
// compared as failures.
func TestRueidisREADME(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	results := map[string]map[string]string{}
	var names []string
	for _, target := range []struct{ name, addr, other string }{
		{"redis-server", redisAddr, redisAddr},
		{"idemgate", tc.addrs[(leader+1)%3], tc.addrs[(leader+2)%3]},
	} {
		t.Run(target.name, func(t *testing.T) {
			got := readmeExamples(t, target.addr, target.other)
			results[target.name] = got
			if names == nil {
				for n := range got {
					names = append(names, n)
				}
				sort.Strings(names)
			}
		})
	}
	want, got := results["redis-server"], results["idemgate"]
	if want == nil || got == nil {
		t.Fatal("a target did not finish")
	}
	for _, n := range names {
		if got[n] != want[n] {
			t.Errorf("%s:\n idemgate     %s\n redis-server %s", n, got[n], want[n])
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: only idemgate ran it", n)
		}
	}
}

// readmeExamples runs the README's examples with a client of addr (and a
// writer, a publisher, of other) and returns what each gave, as text.
func readmeExamples(t *testing.T, addr, other string) map[string]string {
	out := map[string]string{}
	res := func(name string, vals ...any) {
		var parts []string
		for _, v := range vals {
			if err, ok := v.(error); ok || v == nil {
				parts = append(parts, rueidisErr(err))
				continue
			}
			parts = append(parts, fmt.Sprint(v))
		}
		out[name] = strings.Join(parts, " | ")
	}
	bounded := ctxT(t, 120*time.Second)
	w, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{other}, DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis.NewClient(%s): %v", other, err)
	}
	defer w.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Do(bounded, w.B().Hset().Key("hm").FieldValue().FieldValue("f1", "v1").FieldValue("f2", "v2").Build()).Error())
	must(w.Do(bounded, w.B().Hset().Key("mk").FieldValue().FieldValue("1", "one").Build()).Error())

	// Getting Started.
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	// SET key val NX
	err = client.Do(ctx, client.B().Set().Key("key").Value("val").Nx().Build()).Error()
	// HGETALL hm
	hm, err2 := client.Do(ctx, client.B().Hgetall().Key("hm").Build()).AsStrMap()
	res("getting started", err, hm, err2)

	// Auto Pipelining: concurrent Do calls share the connection.
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				v, err := client.Do(context.Background(), client.B().Get().Key("key").Build()).ToString()
				mu.Lock()
				seen[v+" "+rueidisErr(err)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res("auto pipelining", seen)

	// Manual Pipelining.
	cmds := make(rueidis.Commands, 0, 10)
	for i := 0; i < 10; i++ {
		cmds = append(cmds, client.B().Set().Key("key").Value("value").Build())
	}
	for _, resp := range client.DoMulti(ctx, cmds...) {
		if err := resp.Error(); err != nil {
			panic(err)
		}
	}
	must(client.Do(ctx, client.B().Set().Key("3").Value("three").Build()).Error())
	cmds = make(rueidis.Commands, 0, 10)
	for i := 0; i < 10; i++ {
		cmds = append(cmds, client.B().Get().Key(strconv.Itoa(i)).Build().Pin())
	}
	var pinned []string
	for i, resp := range client.DoMulti(context.Background(), cmds...) {
		v, err := resp.ToString() // this is the result
		pinned = append(pinned, fmt.Sprintf("%s=%q,%s", cmds[i].Commands()[1], v, rueidisErr(err)))
	}
	res("manual pipelining", pinned)

	must(w.Do(bounded, w.B().Mset().KeyValue().KeyValue("k1", "v1").KeyValue("k2", "v2").Build()).Error())
	val, err := rueidis.MGet(client, ctx, []string{"k1", "k2"})
	k1 := val["k1"]
	v1, err2 := k1.ToString() // this is the k1 value
	res("MGet", err, v1, err2)

	// Server-Assisted Client-Side Caching.
	arr, err := client.DoCache(ctx, client.B().Hmget().Key("mk").Field("1", "2").Cache(), time.Minute).ToArray()
	res("DoCache HMGET", messages(arr), err)
	var multi []string
	for _, r := range client.DoMultiCache(ctx,
		rueidis.CT(client.B().Get().Key("k1").Cache(), 1*time.Minute),
		rueidis.CT(client.B().Get().Key("k2").Cache(), 2*time.Minute)) {
		v, err := r.ToString()
		multi = append(multi, v, rueidisErr(err), fmt.Sprint(r.IsCacheHit()))
	}
	res("DoMultiCache", multi)
	ttl := client.DoCache(ctx, client.B().Get().Key("k1").Cache(), time.Minute).CacheTTL()
	res("CacheTTL", ttl > 50 && ttl <= 60)
	res("IsCacheHit", client.DoCache(ctx, client.B().Get().Key("k1").Cache(), time.Minute).IsCacheHit() == true)
	// A write through another node invalidates the cached k1.
	must(w.Do(bounded, w.B().Set().Key("k1").Value("v1b").Build()).Error())
	fresh := ""
	for i := 0; i < 600 && bounded.Err() == nil; i++ {
		r := client.DoCache(ctx, client.B().Get().Key("k1").Cache(), time.Minute)
		if v, _ := r.ToString(); v == "v1b" {
			fresh = fmt.Sprint(v, " hit ", r.IsCacheHit())
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	res("DoCache after another's write", fresh)

	// Broadcast Mode Client-Side Caching.
	func() {
		client, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:           []string{addr},
			ClientTrackingOptions: []string{"PREFIX", "prefix1:", "PREFIX", "prefix2:", "BCAST"},
		})
		if err != nil {
			panic(err)
		}
		defer client.Close()
		first := client.DoCache(ctx, client.B().Get().Key("prefix1:1").Cache(), time.Minute).IsCacheHit() == false
		second := client.DoCache(ctx, client.B().Get().Key("prefix1:1").Cache(), time.Minute).IsCacheHit() == true
		res("broadcast mode", first, second)
	}()

	// Context Cancellation.
	func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := client.Do(ctx, client.B().Set().Key("key").Value("val").Nx().Build()).Error()
		res("context cancellation", err == context.DeadlineExceeded, rueidis.IsRedisNil(err))
	}()

	// Retryable Commands.
	err = client.Do(ctx, client.B().Set().Key("key").Value("val").Build().ToRetryable()).Error()
	err2 = client.DoMulti(ctx, client.B().Set().Key("key").Value("val").Build().ToRetryable())[0].Error()
	res("retryable", err, err2)

	// Pub/Sub: Receive, with its hooks; the messages are published
	// through another node.
	func() {
		got := make(chan string, 64)
		subscribed := make(chan string, 8)
		ctx := rueidis.WithOnSubscriptionHook(bounded, func(s rueidis.PubSubSubscription) {
			subscribed <- fmt.Sprintf("%s %s (count %d)", s.Kind, s.Channel, s.Count)
		})
		ctx, cancel := context.WithCancel(ctx)
		ctx = rueidis.WithOnReceiveReturnHook(ctx, func(err error, client rueidis.CommandClient) error {
			if errors.Is(err, context.Canceled) {
				// Send UNSUBSCRIBE command to the connection
				return client.Do(context.Background(), client.B().Unsubscribe().Channel("ch1", "ch2").Build()).Error()
			}
			return err
		})
		done := make(chan error, 1)
		go func() {
			done <- client.Receive(ctx, client.B().Subscribe().Channel("ch1", "ch2").Build(), func(msg rueidis.PubSubMessage) {
				got <- msg.Channel + " " + msg.Message
			})
		}()
		var hooks []string
		for range 2 {
			select {
			case s := <-subscribed:
				hooks = append(hooks, s)
			case <-bounded.Done():
				t.Fatal("no subscription confirmed")
			}
		}
		var msgs []string
		for _, ch := range []string{"ch1", "ch2"} {
			msgs = append(msgs, publishUntil(t, bounded, w, ch, got))
		}
		cancel()
		select {
		case err := <-done:
			res("Receive", hooks, msgs, err)
		case <-bounded.Done():
			t.Fatal("Receive did not return")
		}
	}()

	// Alternative PubSub Hooks.
	func() {
		got := make(chan string, 64)
		c, cancel := client.Dedicate()
		wait := c.SetPubSubHooks(rueidis.PubSubHooks{
			OnMessage: func(m rueidis.PubSubMessage) {
				got <- m.Channel + " " + m.Message
			},
		})
		err := c.Do(ctx, c.B().Subscribe().Channel("ch").Build()).Error()
		msg := publishUntil(t, bounded, w, "ch", got)
		cancel()
		select {
		case err2 := <-wait: // disconnected with err
			res("SetPubSubHooks", err, msg, err2)
		case <-bounded.Done():
			t.Fatal("SetPubSubHooks' wait never closed")
		}
	}()

	// CAS Transaction.
	var cas []string
	client.Dedicated(func(c rueidis.DedicatedClient) error {
		// watch keys first
		c.Do(ctx, c.B().Watch().Key("k1", "k2").Build())
		// perform read here
		mget, err := c.Do(ctx, c.B().Mget().Key("k1", "k2").Build()).AsStrSlice()
		cas = append(cas, fmt.Sprint(mget), rueidisErr(err))
		// perform write with MULTI EXEC
		for _, r := range c.DoMulti(
			ctx,
			c.B().Multi().Build(),
			c.B().Set().Key("k1").Value("1").Build(),
			c.B().Set().Key("k2").Value("2").Build(),
			c.B().Exec().Build(),
		) {
			m, err := r.ToMessage()
			cas = append(cas, fmt.Sprint(messages([]rueidis.RedisMessage{m})), rueidisErr(err))
		}
		return nil
	})
	func() {
		c, cancel := client.Dedicate()
		defer cancel()
		c.Do(ctx, c.B().Watch().Key("k1", "k2").Build())
		// Another client's write between WATCH and EXEC fails the EXEC.
		must(w.Do(bounded, w.B().Set().Key("k1").Value("other").Build()).Error())
		r := c.DoMulti(ctx, c.B().Multi().Build(), c.B().Set().Key("k1").Value("mine").Build(), c.B().Exec().Build())
		cas = append(cas, "watched:", fmt.Sprint(rueidis.IsRedisNil(r[2].Error())))
	}()
	res("CAS transaction", cas)

	// Lua Script.
	script := rueidis.NewLuaScript("return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}")
	// the script.Exec is safe for concurrent call
	list, err := script.Exec(ctx, client, []string{"k1", "k2"}, []string{"a1", "a2"}).ToArray()
	res("Lua script", messages(list), err)

	// Streaming Read.
	must(client.Do(ctx, client.B().Set().Key("a{slot1}").Value("streamed").Build()).Error())
	var streamed []string
	s := client.DoMultiStream(ctx, client.B().Get().Key("a{slot1}").Build(), client.B().Get().Key("b{slot1}").Build())
	for s.HasNext() {
		var b strings.Builder
		n, err := s.WriteTo(&b)
		if rueidis.IsRedisNil(err) {
			streamed = append(streamed, "nil")
			continue
		}
		streamed = append(streamed, fmt.Sprint(n, b.String(), rueidisErr(err)))
	}
	res("streaming read", streamed)
	st := client.DoStream(ctx, client.B().Get().Key("a{slot1}").Build())
	n, err := st.WriteTo(io.Discard)
	res("DoStream", n, err)

	// Arbitrary Command: [ANY CMD k1 k2 a1 a2], a command neither has.
	res("arbitrary", client.Do(ctx, client.B().Arbitrary("ANY", "CMD").Keys("k1", "k2").Args("a1", "a2").Build()).Error() != nil)

	// Command Response Cheatsheet.
	must(client.Do(ctx, client.B().Set().Key("k").Value("7").Build()).Error())
	must(client.Do(ctx, client.B().Hset().Key("h").FieldValue().FieldValue("a", "1").FieldValue("f1", "x").Build()).Error())
	must(client.Do(ctx, client.B().Zadd().Key("myzset").ScoreMember().ScoreMember(1, "one").ScoreMember(2, "two").ScoreMember(3, "three").Build()).Error())
	if _, err := client.Do(ctx, client.B().Get().Key("k").Build()).ToArray(); rueidis.IsParseErr(err) {
		res("cheatsheet parse error", "Parsing error:", err != nil)
	}
	sheet := func(name string, vals ...any) { res("cheatsheet "+name, vals...) }
	// Each line reads "k" as the type its command takes: it is made so
	// first (through the other node).
	k := func(typ string) {
		t.Helper()
		must(w.Do(bounded, w.B().Del().Key("k").Build()).Error())
		var err error
		switch typ {
		case "string":
			err = w.Do(bounded, w.B().Set().Key("k").Value("7").Build()).Error()
		case "hash":
			err = w.Do(bounded, w.B().Hset().Key("k").FieldValue().FieldValue("f", "x").Build()).Error()
		case "zset":
			err = w.Do(bounded, w.B().Zadd().Key("k").ScoreMember().ScoreMember(1, "m").ScoreMember(2, "n").ScoreMember(3, "o").Build()).Error()
		case "set":
			err = w.Do(bounded, w.B().Sadd().Key("k").Member("a", "b").Build()).Error()
		case "list":
			err = w.Do(bounded, w.B().Rpush().Key("k").Element("a", "b", "c", "d").Build()).Error()
		}
		must(err)
	}
	k("string")
	sheet("GET", pair(client.Do(ctx, client.B().Get().Key("k").Build()).ToString()))
	sheet("GET AsInt64", pair(client.Do(ctx, client.B().Get().Key("k").Build()).AsInt64()))
	mg, err := client.Do(ctx, client.B().Mget().Key("k1", "k2").Build()).ToArray()
	sheet("MGET", messages(mg), err)
	sheet("SET", client.Do(ctx, client.B().Set().Key("k").Value("v").Build()).Error())
	k("string")
	sheet("INCR", pair(client.Do(ctx, client.B().Incr().Key("k").Build()).AsInt64()))
	k("hash")
	sheet("HGET", pair(client.Do(ctx, client.B().Hget().Key("k").Field("f").Build()).ToString()))
	hmg, err := client.Do(ctx, client.B().Hmget().Key("h").Field("a", "b").Build()).ToArray()
	sheet("HMGET", messages(hmg), err)
	sheet("HGETALL", pair(client.Do(ctx, client.B().Hgetall().Key("h").Build()).AsStrMap()))
	k("string")
	sheet("EXPIRE", pair(client.Do(ctx, client.B().Expire().Key("k").Seconds(1).Build()).AsInt64()))
	_, err = client.Do(ctx, client.B().Hexpire().Key("h").Seconds(1).Fields().Numfields(2).Field("f1", "f2").Build()).AsIntSlice()
	sheet("HEXPIRE (Redis 7.4)", err != nil)
	k("zset")
	sheet("ZRANGE 1 2", pair(client.Do(ctx, client.B().Zrange().Key("k").Min("1").Max("2").Build()).AsStrSlice()))
	sheet("ZRANK", pair(client.Do(ctx, client.B().Zrank().Key("k").Member("m").Build()).AsInt64()))
	sheet("ZSCORE", pair(client.Do(ctx, client.B().Zscore().Key("k").Member("m").Build()).AsFloat64()))
	sheet("ZRANGE 0 -1", pair(client.Do(ctx, client.B().Zrange().Key("k").Min("0").Max("-1").Build()).AsStrSlice()))
	sheet("ZRANGE WITHSCORES", pair(client.Do(ctx, client.B().Zrange().Key("k").Min("0").Max("-1").Withscores().Build()).AsZScores()))
	sheet("ZPOPMIN", pair(client.Do(ctx, client.B().Zpopmin().Key("k").Build()).AsZScore()))
	sheet("ZPOPMIN 2", pair(client.Do(ctx, client.B().Zpopmin().Key("myzset").Count(2).Build()).AsZScores()))
	k("set")
	sheet("SCARD", pair(client.Do(ctx, client.B().Scard().Key("k").Build()).AsInt64()))
	sm, err := client.Do(ctx, client.B().Smembers().Key("k").Build()).AsStrSlice()
	sort.Strings(sm)
	sheet("SMEMBERS", sm, err)
	k("list")
	sheet("LINDEX", pair(client.Do(ctx, client.B().Lindex().Key("k").Index(0).Build()).ToString()))
	sheet("LPOP", pair(client.Do(ctx, client.B().Lpop().Key("k").Build()).ToString()))
	sheet("LPOP 2", pair(client.Do(ctx, client.B().Lpop().Key("k").Count(2).Build()).AsStrSlice()))
	e, err := client.Do(ctx, client.B().Scan().Cursor(0).Build()).AsScanEntry()
	sheet("SCAN", e.Cursor == 0 || len(e.Elements) > 0, err)
	_, _, err = client.Do(ctx, client.B().FtSearch().Index("idx").Query("@f:v").Build()).AsFtSearch()
	sheet("FT.SEARCH (a module)", err != nil)

	// DecodeSliceOfJSON.
	type User struct {
		Name string `json:"name"`
	}
	must(client.Do(ctx, client.B().Set().Key("user1").Value(`{"name": "name1"}`).Build()).Error())
	must(client.Do(ctx, client.B().Set().Key("user2").Value(`{"name": "name2"}`).Build()).Error())
	var users []*User
	err = rueidis.DecodeSliceOfJSON(client.Do(ctx, client.B().Mget().Key("user1", "user2").Build()), &users)
	var names []string
	for _, user := range users {
		names = append(names, fmt.Sprintf("%+v", user))
	}
	res("DecodeSliceOfJSON", names, err)
	return out
}

// publishUntil publishes to ch through w until a message of ch arrives on
// got (a subscription made on one node reaches the others' publishes at
// once, but at most once: a message is not stored), and returns it.
func publishUntil(t *testing.T, ctx context.Context, w rueidis.Client, ch string, got <-chan string) string {
	t.Helper()
	for i := 0; i < 200; i++ {
		if err := w.Do(ctx, w.B().Publish().Channel(ch).Message("hello").Build()).Error(); err != nil {
			t.Fatalf("PUBLISH %s: %v", ch, err)
		}
		select {
		case m := <-got:
			return m
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("no message of %s", ch)
		}
	}
	t.Fatalf("no message of %s in 200 publishes", ch)
	return ""
}

// pair is a parser's value and error as one result.
func pair[V any](v V, err error) string { return fmt.Sprint(v) + " | " + rueidisErr(err) }

// rueidisErr is an error as compared: nil, Redis's nil, or that there was
// one and its Redis prefix (the texts of errors differ between servers).
func rueidisErr(err error) string {
	var re *rueidis.RedisError
	switch {
	case err == nil:
		return "ok"
	case rueidis.IsRedisNil(err):
		return "nil"
	case errors.As(err, &re):
		prefix, _, _ := strings.Cut(re.Error(), " ")
		return "error " + prefix
	case rueidis.IsParseErr(err):
		return "parse error"
	}
	return "error " + err.Error()
}

// messages are Redis messages as text.
func messages(ms []rueidis.RedisMessage) []string {
	var out []string
	for i := range ms {
		m := &ms[i]
		if m.IsNil() {
			out = append(out, "nil")
			continue
		}
		if s, err := m.ToString(); err == nil {
			out = append(out, s)
			continue
		}
		if n, err := m.AsInt64(); err == nil {
			out = append(out, strconv.FormatInt(n, 10))
			continue
		}
		if a, err := m.ToArray(); err == nil {
			out = append(out, fmt.Sprint(messages(a)))
			continue
		}
		out = append(out, "?")
	}
	return out
}
