package resp

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// The random choices' spread: SRANDMEMBER, SPOP, HRANDFIELD and
// ZRANDMEMBER, each in every count mode (none: one element; a count
// below the size: distinct elements, drawn one by one or by a shuffle; a
// negative count: repeats allowed), drawn many times, each command its
// own seed, through the listener and the real state machine, and held to
// a chi-square test of uniformity at a significance of 1e-4 (a fair
// draw fails one run in ten thousand): a 50-element collection and a
// 1,000-element one (chosen by seeks, not read whole).

// randomMode is one way a command draws: args is its request (the key
// second), per how many elements one reply holds, distinct whether they
// must differ, repeats whether some reply must repeat one.
type randomMode struct {
	name     string
	args     []string
	size     int // the collection's
	calls    int
	per      int
	distinct bool
	repeats  bool
	pairs    bool // WITHVALUES, WITHSCORES: field and value alternate
	pop      bool // SPOP: what each call pops is added back after it
}

// randomDraws is how many elements each mode draws in all: 400 an
// element of the small collection, 20 of the large one.
const randomDraws = 20000

// randomModes are a command's count modes for a collection of n.
func randomModes(cmd, key string, n int, pairsWord string, pop bool) []randomMode {
	// Of 1,000: a tenth is drawn one by one (a shuffle from an eighth on),
	// with repeats too; three fifths by a shuffle.
	small, large, neg := n/10, n*3/5, n/10
	modes := []randomMode{
		{name: "single", args: []string{cmd, key}, per: 1},
		{name: "count " + strconv.Itoa(small), args: []string{cmd, key, strconv.Itoa(small)}, per: small, distinct: true},
		{name: "count " + strconv.Itoa(large), args: []string{cmd, key, strconv.Itoa(large)}, per: large, distinct: true},
	}
	if !pop {
		modes = append(modes, randomMode{name: "count -" + strconv.Itoa(neg), args: []string{cmd, key, "-" + strconv.Itoa(neg)},
			per: neg, repeats: true})
		if pairsWord != "" {
			modes = append(modes, randomMode{name: "count -" + strconv.Itoa(neg) + " " + pairsWord,
				args: []string{cmd, key, "-" + strconv.Itoa(neg), pairsWord}, per: neg, repeats: true, pairs: true})
		}
	}
	for i := range modes {
		modes[i].size, modes[i].pop, modes[i].calls = n, pop, randomDraws/modes[i].per
	}
	return modes
}

// TestRandomChoicesUniform: every element is chosen about as often as
// every other, in every mode of every random command.
func TestRandomChoicesUniform(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", nil)
	c := dialRaw(t, srv.Addr())
	cmds := []struct {
		cmd, fill, pairsWord string
		pop                  bool
	}{{"SRANDMEMBER", "SADD", "", false}, {"SPOP", "SADD", "", true}, {"HRANDFIELD", "HSET", "WITHVALUES", false},
		{"ZRANDMEMBER", "ZADD", "WITHSCORES", false}}
	for _, n := range []int{50, 1000} {
		for _, cm := range cmds {
			key := fmt.Sprintf("rand:%d:%s", n, strings.ToLower(cm.cmd))
			fill := []string{cm.fill, key}
			for i := range n {
				switch e := fmt.Sprintf("e%04d", i); cm.fill {
				case "SADD":
					fill = append(fill, e)
				case "HSET":
					fill = append(fill, e, "v"+e)
				default:
					fill = append(fill, strconv.Itoa(i), e)
				}
			}
			c.send(array(fill...))
			if got := c.replies(1)[0]; got != ":"+strconv.Itoa(n)+"\r\n" {
				t.Fatalf("fill %s: %q", key, got)
			}
			for _, m := range randomModes(cm.cmd, key, n, cm.pairsWord, cm.pop) {
				t.Run(fmt.Sprintf("%s/%d/%s", cm.cmd, n, m.name), func(t *testing.T) {
					counts := drawMany(t, c, m)
					stat, crit, df := chiSquare(counts, m)
					t.Logf("%d draws in %d calls: chi-square %.1f, df %d, critical value at p=1e-4 %.1f",
						m.calls*m.per, m.calls, stat, df, crit)
					if stat > crit {
						t.Errorf("not uniform: chi-square %.1f > %.1f (df %d); counts %v", stat, crit, df, counts)
					}
				})
			}
		}
	}
}

// drawMany sends m's request m.calls times (pipelined; SPOP one at a
// time, each followed by an SADD of what it popped, so that every pop
// sees the whole set) and counts how often each element is chosen,
// checking each reply's shape as it goes.
func drawMany(t *testing.T, c *rawConn, m randomMode) []int {
	t.Helper()
	req := array(m.args...)
	counts := make([]int, m.size)
	sawRepeat := false
	batch := 200
	if m.pop {
		batch = 1
	}
	for done := 0; done < m.calls; done += batch {
		k := min(batch, m.calls-done)
		c.nc.SetDeadline(time.Now().Add(time.Minute))
		c.send(strings.Repeat(req, k))
		for _, reply := range c.replies(k) {
			picks := pickedOf(t, reply, m)
			seen := make(map[int]bool, len(picks))
			for _, p := range picks {
				if seen[p] {
					sawRepeat = true
					if m.distinct {
						t.Fatalf("%q chose e%04d twice: %.300q", m.args, p, reply)
					}
				}
				seen[p] = true
				counts[p]++
			}
			if m.pop {
				back := []string{"SADD", m.args[1]}
				for _, p := range picks {
					back = append(back, fmt.Sprintf("e%04d", p))
				}
				c.send(array(back...))
				if got := c.replies(1)[0]; got != ":"+strconv.Itoa(len(picks))+"\r\n" {
					t.Fatalf("%.100q after %q: %q, want every member back", back, m.args, got)
				}
			}
		}
	}
	if m.repeats && !sawRepeat {
		t.Errorf("%q never repeated an element in %d calls", m.args, m.calls)
	}
	return counts
}

// pickedOf is the elements one reply chose, as indexes; it fails on a
// reply of another shape than Redis's (a bulk string alone, else an
// array of m.per elements, or of m.per pairs with WITHVALUES or
// WITHSCORES, each with its element's value) or on a name of no element.
func pickedOf(t *testing.T, reply string, m randomMode) []int {
	t.Helper()
	r, rest := parseResp(t, reply)
	items := r.items
	want := m.per
	if m.pairs {
		want *= 2
	}
	switch {
	case rest != "":
		t.Fatalf("%q: %q, then %q", m.args, reply, rest)
	case len(m.args) == 2:
		if r.typ != '$' {
			t.Fatalf("%q: %q, want a bulk string", m.args, reply)
		}
		items = []respNode{r}
	case r.typ != '*':
		t.Fatalf("%q: %.200q, want an array", m.args, reply)
	case len(items) != want:
		t.Fatalf("%q: %d items, want %d: %.300q", m.args, len(items), want, reply)
	}
	var out []int
	for i := 0; i < len(items); i++ {
		e := items[i].s
		idx, err := strconv.Atoi(strings.TrimPrefix(e, "e"))
		if err != nil || idx < 0 || idx >= m.size || e != fmt.Sprintf("e%04d", idx) {
			t.Fatalf("%q chose %q, no element", m.args, e)
		}
		out = append(out, idx)
		if m.pairs {
			i++
			if v := items[i].s; v != "v"+e && v != strconv.Itoa(idx) {
				t.Fatalf("%q: %q's value is %q", m.args, e, v)
			}
		}
	}
	return out
}

// chiSquare is Pearson's statistic of counts against a uniform choice,
// its degrees of freedom, and the critical value at p = 1e-4. The counts
// of a mode of distinct elements (each reply a sample without
// replacement of s of the n, each element in it with chance p = s/n)
// vary n/(n-1)·(1-p) times as much as a multinomial's: the statistic is
// scaled by the inverse, to be chi-square with n-1 degrees too.
func chiSquare(counts []int, m randomMode) (stat, crit float64, df int) {
	total := 0
	for _, k := range counts {
		total += k
	}
	n := float64(len(counts))
	exp := float64(total) / n
	for _, k := range counts {
		d := float64(k) - exp
		stat += d * d / exp
	}
	if m.distinct {
		p := float64(m.per) / n
		stat *= (n - 1) / (n * (1 - p))
	}
	df = len(counts) - 1
	return stat, chiSquareCritical(df, 1e-4), df
}

// chiSquareCritical is the value a chi-square variable of df degrees of
// freedom exceeds with probability alpha, by Wilson and Hilferty's
// approximation (the cube root of chi²/df is near normal): accurate to
// well under 1% for df ≥ 30 at these tails.
func chiSquareCritical(df int, alpha float64) float64 {
	z := normalUpper(alpha)
	k := float64(df)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}

// normalUpper is the z with P(Z > z) = alpha for a standard normal Z,
// by bisection of the complementary error function.
func normalUpper(alpha float64) float64 {
	lo, hi := 0.0, 40.0
	for range 200 {
		mid := (lo + hi) / 2
		if math.Erfc(mid/math.Sqrt2)/2 > alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// TestRandomPopsReplicasAgree: SPOPs through every node of a 3-node
// cluster, alone, with counts and with refills between them, of a set
// chosen from whole and of one chosen from by seeks, leave every replica
// in the same state (each state machine's hash, elements and all), and
// every node reads the same members.
func TestRandomPopsReplicasAgree(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	for _, n := range []int{50, 1000} {
		key := fmt.Sprintf("agree:pop%d", n)
		fill := []string{"SADD", key}
		for i := range n {
			fill = append(fill, fmt.Sprintf("e%04d", i))
		}
		mustAsk(t, tc.addrs[leader], array(fill...), ":"+strconv.Itoa(n)+"\r\n")
		for i := range 3 {
			c := dialRaw(t, tc.addrs[(leader+i)%3])
			c.nc.SetDeadline(time.Now().Add(2 * time.Minute))
			var req strings.Builder
			for j := range 40 {
				req.WriteString(array("SPOP", key))
				req.WriteString(array("SPOP", key, strconv.Itoa(1+j%7)))
				if j%10 == 9 {
					req.WriteString(array(fill[:2+n/2]...)) // half of them back
				}
			}
			c.send(req.String())
			for _, r := range c.replies(84) {
				if strings.HasPrefix(r, "-") {
					t.Fatalf("node %d: %q", (leader+i)%3, r)
				}
			}
		}
	}
	tc.rc.WaitConverged(60 * time.Second)
	for _, n := range []int{50, 1000} {
		var first string
		for i := range 3 {
			got := canonReply(t, ask(t, tc.addrs[i], array("SMEMBERS", fmt.Sprintf("agree:pop%d", n))), "sorted")
			if i > 0 && got != first {
				t.Fatalf("set of %d: node %d reads other members:\n%.300q\n%.300q", n, i, got, first)
			}
			first = got
		}
	}
}

// TestRandomReplyShapesAsRedis: the random commands' replies from
// collections of 50, in RESP2 and RESP3, have redis-server's shape (the
// types and lengths of every part, not the elements chosen).
func TestRandomReplyShapesAsRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	srv := startServer(t, memstore.New(t), "mem", nil)
	fill := map[string][]string{"s": {"SADD", "rs:s"}, "h": {"HSET", "rs:h"}, "z": {"ZADD", "rs:z"}}
	for i := range 50 {
		e := fmt.Sprintf("e%04d", i)
		fill["s"] = append(fill["s"], e)
		fill["h"] = append(fill["h"], e, "v"+e)
		fill["z"] = append(fill["z"], strconv.Itoa(i)+".5", e)
	}
	var reqs [][]string
	for _, count := range []string{"", "0", "5", "30", "50", "70", "-1", "-20", "-70"} {
		for _, base := range [][]string{{"SRANDMEMBER", "rs:s"}, {"HRANDFIELD", "rs:h"}, {"ZRANDMEMBER", "rs:z"},
			{"HRANDFIELD", "rs:h", count, "WITHVALUES"}, {"ZRANDMEMBER", "rs:z", count, "WITHSCORES"}, {"SPOP", "rs:s"}} {
			switch {
			case len(base) == 4 && count == "":
				continue
			case len(base) == 2 && count != "":
				base = append(base, count)
			}
			if base[0] == "SPOP" && strings.HasPrefix(count, "-") {
				continue
			}
			reqs = append(reqs, base)
			if base[0] == "SPOP" {
				reqs = append(reqs, fill["s"])
			}
		}
	}
	for _, proto := range []int{2, 3} {
		rc, ic := dialRaw(t, redisAddr), dialRaw(t, srv.Addr())
		for _, c := range []*rawConn{rc, ic} {
			if proto == 3 {
				c.send("HELLO 3\r\n")
				c.replies(1)
			}
			c.send(array("DEL", "rs:s", "rs:h", "rs:z") + array(fill["s"]...) + array(fill["h"]...) + array(fill["z"]...))
			c.replies(4)
		}
		for _, args := range reqs {
			rc.send(array(args...))
			ic.send(array(args...))
			want, got := rc.replies(1)[0], ic.replies(1)[0]
			if args[0] == "SADD" {
				continue // what SPOP took back: as many as it took, checked by the SPOP's shape
			}
			ws, gs := replyShape(t, want), replyShape(t, got)
			if gs != ws {
				t.Errorf("resp%d %q:\n idemgate %s\n redis    %s", proto, args, gs, ws)
			}
		}
	}
}

// replyShape is a reply's types and lengths, its strings and numbers left
// out.
func replyShape(t *testing.T, r string) string {
	t.Helper()
	n, _ := parseResp(t, r)
	var shape func(n respNode) string
	shape = func(n respNode) string {
		if n.items == nil {
			if n.typ == '*' || n.typ == '~' || n.typ == '%' || n.typ == '-' {
				return string(n.typ) + n.s
			}
			return string(n.typ)
		}
		parts := make([]string, len(n.items))
		for i, it := range n.items {
			parts[i] = shape(it)
		}
		return string(n.typ) + n.s + "[" + strings.Join(parts, ",") + "]"
	}
	return shape(n)
}
