package fsm

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// onceHarness applies once commands to a real state machine on a bbolt file.
type onceHarness struct {
	*harness
	key []byte
	fp  []byte
}

func newOnce(t *testing.T) *onceHarness {
	h := newHarness(t)
	h.clock = tableStamp
	return &onceHarness{harness: h, key: command.OnceKey("jobs", "msg-1"), fp: command.OnceFingerprint([]byte("payload"))}
}

func (o *onceHarness) begin(lease time.Duration) *command.Result {
	return o.apply(*command.OnceBeginCommand(o.key, o.fp, lease, time.Hour))
}

func (o *onceHarness) claim() *command.Claim {
	o.t.Helper()
	c, err := o.f.Claim(o.key, o.now())
	if err != nil {
		o.t.Fatalf("Claim: %v", err)
	}
	return c
}

// TestOnceTransitions walks every transition: begin, in progress, complete,
// replay; takeover after the lease ran out; stale renew and complete; key
// reuse; release and begin again with a higher fence.
func TestOnceTransitions(t *testing.T) {
	o := newOnce(t)
	r := o.begin(10 * time.Second)
	if r.Code != command.CodeCreated || r.Fence == 0 || r.ExpiresAt != o.clock+int64(10*time.Second) {
		t.Fatalf("first begin: %+v", r)
	}
	first := r.Fence
	o.advance(time.Second)
	if r := o.begin(10 * time.Second); r.Code != command.CodeExists || r.Fence != first || r.ExpiresAt != tableStamp+int64(10*time.Second) {
		t.Fatalf("begin while the lease is live: %+v", r)
	}
	if r := o.apply(*command.OnceBeginCommand(o.key, command.OnceFingerprint([]byte("other")), time.Second, time.Hour)); r.Code != command.CodeKeyReuse || r.Err() != command.ErrKeyReuse {
		t.Fatalf("begin with another payload: %+v", r)
	}
	// Renew moves the lease end from now.
	if r := o.apply(*command.OnceRenewCommand(o.key, first, 5*time.Second)); r.Code != command.CodeOK || r.ExpiresAt != o.clock+int64(5*time.Second) {
		t.Fatalf("renew: %+v", r)
	}
	if r := o.apply(*command.OnceRenewCommand(o.key, first+1, 5*time.Second)); r.Code != command.CodeFenceMismatch || r.Fence != first {
		t.Fatalf("renew with a forged fence: %+v", r)
	}
	// The holder pauses past its lease; a renew is refused, the next begin takes over.
	o.advance(6 * time.Second)
	if r := o.apply(*command.OnceRenewCommand(o.key, first, 5*time.Second)); r.Code != command.CodeFenceMismatch {
		t.Fatalf("renew after the lease ran out: %+v", r)
	}
	r = o.begin(10 * time.Second)
	if r.Code != command.CodeTakenOver || r.Fence <= first {
		t.Fatalf("begin after the lease ran out: %+v", r)
	}
	second := r.Fence
	// The paused holder's late complete is refused; the claim is untouched.
	if r := o.apply(*command.OnceCompleteCommand(o.key, first, []byte("late"), time.Hour)); r.Code != command.CodeFenceMismatch || r.Fence != second {
		t.Fatalf("complete with the taken-over fence: %+v", r)
	}
	if c := o.claim(); c.State != command.ClaimBegun || c.Fence != second || c.Result != nil {
		t.Fatalf("claim after a stale complete: %+v", c)
	}
	if r := o.apply(*command.OnceCompleteCommand(o.key, second, []byte("sent"), 2*time.Hour)); r.Code != command.CodeOK || r.ExpiresAt != o.clock+int64(2*time.Hour) {
		t.Fatalf("complete: %+v", r)
	}
	// Completing again with the same result answers as the first; another result is refused.
	if r := o.apply(*command.OnceCompleteCommand(o.key, second, []byte("sent"), 2*time.Hour)); r.Code != command.CodeOK {
		t.Fatalf("repeated complete: %+v", r)
	}
	if r := o.apply(*command.OnceCompleteCommand(o.key, second, []byte("else"), 2*time.Hour)); r.Code != command.CodeWrongState {
		t.Fatalf("complete with another result: %+v", r)
	}
	if r := o.apply(*command.OnceCompleteCommand(o.key, first, []byte("late"), time.Hour)); r.Code != command.CodeFenceMismatch {
		t.Fatalf("stale complete of a completed claim: %+v", r)
	}
	o.advance(time.Minute)
	if r := o.begin(time.Second); r.Code != command.CodeOK || string(r.Value) != "sent" || r.Fence != second {
		t.Fatalf("begin of a completed claim: %+v", r)
	}
	if r := o.apply(*command.OnceReleaseCommand(o.key, second)); r.Code != command.CodeWrongState {
		t.Fatalf("release of a completed claim: %+v", r)
	}
	if r := o.apply(*command.OnceRenewCommand(o.key, second, time.Second)); r.Code != command.CodeWrongState {
		t.Fatalf("renew of a completed claim: %+v", r)
	}
	// Retention: two hours after the complete, the claim is gone, and a
	// begin starts again with a fence above every earlier one.
	o.advance(2 * time.Hour)
	if _, err := o.f.Claim(o.key, o.now()); err != command.ErrNotFound {
		t.Fatalf("claim past its retention: %v", err)
	}
	r = o.begin(time.Second)
	if r.Code != command.CodeCreated || r.Fence <= second {
		t.Fatalf("begin after retention: %+v", r)
	}
	third := r.Fence
	if r := o.apply(*command.OnceReleaseCommand(o.key, second)); r.Code != command.CodeFenceMismatch {
		t.Fatalf("release with an old fence: %+v", r)
	}
	if r := o.apply(*command.OnceReleaseCommand(o.key, third)); r.Code != command.CodeOK {
		t.Fatalf("release: %+v", r)
	}
	if _, err := o.f.Claim(o.key, o.now()); err != command.ErrNotFound {
		t.Fatalf("claim after release: %v", err)
	}
	if r := o.apply(*command.OnceCompleteCommand(o.key, third, []byte("x"), time.Hour)); r.Code != command.CodeFenceMismatch {
		t.Fatalf("complete after release: %+v", r)
	}
	if r := o.begin(time.Second); r.Code != command.CodeCreated || r.Fence <= third {
		t.Fatalf("begin after release: %+v", r)
	}
}

// TestOnceRetentionSweep: a claim's index entry is due at its retention's
// end and the expire command removes it; a claim renewed past its
// retention keeps living until its lease ends.
func TestOnceRetentionSweep(t *testing.T) {
	o := newOnce(t)
	r := o.apply(*command.OnceBeginCommand(o.key, o.fp, time.Second, time.Minute))
	if r.Code != command.CodeCreated {
		t.Fatal(r)
	}
	o.advance(30 * time.Second)
	if due, _ := o.f.Due(o.now(), 10); len(due) != 0 {
		t.Fatalf("due before retention: %v", due)
	}
	o.advance(31 * time.Second)
	due, err := o.f.Due(o.now(), 10)
	if err != nil || len(due) != 1 || due[0].Kind != ttl.KindOnce || !bytes.Equal(due[0].Key, o.key) {
		t.Fatalf("due: %v %v", due, err)
	}
	before := o.f.ExpiredCount(ttl.KindOnce)
	o.apply(*command.ExpireCommand(due))
	if _, err := o.f.Claim(o.key, o.now()); err != command.ErrNotFound {
		t.Fatalf("claim after the sweep: %v", err)
	}
	if got := o.f.ExpiredCount(ttl.KindOnce); got != before+1 {
		t.Fatalf("expired count %d, want %d", got, before+1)
	}

	// A lease longer than the retention keeps the claim to the lease's end.
	r = o.apply(*command.OnceBeginCommand(o.key, o.fp, 10*time.Minute, time.Minute))
	if c := o.claim(); c.ExpiresAt != r.ExpiresAt {
		t.Fatalf("claim expires at %d, lease ends %d", c.ExpiresAt, r.ExpiresAt)
	}
}

// TestOnceRequestIDRemembered: a begin retried under its request id is
// answered with the first result, not "in progress", at every retention:
// by the memory below 2 × RequestIDRetention, by the claim (which records
// the begin's id) from there on, over the memory's whole span. The retry
// changes nothing: the state equals a twin's that applied a no-op in its
// place.
func TestOnceRequestIDRemembered(t *testing.T) {
	for _, tc := range []struct {
		retention  time.Duration
		remembered bool
	}{
		{time.Minute, true},
		{2*RequestIDRetention - time.Nanosecond, true},
		{2 * RequestIDRetention, false},
		{time.Hour, false},
	} {
		o, twin := newOnce(t), newOnce(t)
		c := *command.OnceBeginCommand(o.key, o.fp, time.Hour, tc.retention)
		c.ReqID = reqID(1)
		first := o.apply(c)
		twin.apply(c)
		if first.Code != command.CodeCreated {
			t.Fatalf("retention %s: first begin %+v", tc.retention, first)
		}
		if _, ok, err := o.f.LookupRequest(c.ReqID); err != nil || ok != tc.remembered {
			t.Fatalf("retention %s: remembered %v (%v), want %v", tc.retention, ok, err, tc.remembered)
		}
		start := o.clock
		for _, d := range []time.Duration{time.Second, time.Minute, 2*RequestIDRetention - time.Second} {
			o.clock, twin.clock = start+int64(d), start+int64(d)
			if again := o.apply(c); !bytes.Equal(first.Encode(nil), again.Encode(nil)) {
				t.Fatalf("retention %s, retry %s after: first %+v, retry %+v", tc.retention, d, first, again)
			}
			twin.apply(command.Command{Type: command.TypeNoop})
		}
		ha, err := o.f.stateHash()
		if err != nil {
			t.Fatal(err)
		}
		hb, err := twin.f.stateHash()
		if err != nil {
			t.Fatal(err)
		}
		if ha != hb || o.f.rev.Load() != twin.f.rev.Load() {
			t.Fatalf("retention %s: the retries changed the state", tc.retention)
		}
		// Another caller, without the id or with another, is told the
		// claim is held.
		other := c
		other.ReqID = reqID(2)
		for _, b := range []command.Command{*command.OnceBeginCommand(o.key, o.fp, time.Hour, tc.retention), other} {
			if r := o.apply(b); r.Code != command.CodeExists || r.Fence != first.Fence {
				t.Fatalf("retention %s: another caller's begin %+v", tc.retention, r)
			}
		}
	}
}

// TestOnceBeginRetryAfterChanges: what a begin's retry under its request
// id meets once the claim moved on, with a retention the claim answers it
// for (the id is not remembered at the begin).
//   - lease ran out, nobody took over: the first answer (the holder may
//     still complete; the retry is that holder);
//   - taken over by another caller: the first answer still, from the memory
//     the takeover wrote, and the taker's own retry gets its own;
//   - completed, or released and begun again: the caller had its answer
//     (only the fence's holder completes or releases), so the retry is
//     a new begin and gets a new begin's answer.
func TestOnceBeginRetryAfterChanges(t *testing.T) {
	lease := 10 * time.Second
	mine := func(o *onceHarness, id byte) command.Command {
		c := *command.OnceBeginCommand(o.key, o.fp, lease, time.Hour)
		c.ReqID = reqID(id)
		return c
	}

	o := newOnce(t)
	first := o.apply(mine(o, 1))
	o.advance(2 * lease)
	if r := o.apply(mine(o, 1)); !bytes.Equal(r.Encode(nil), first.Encode(nil)) {
		t.Fatalf("lease ran out: retry %+v, first %+v", r, first)
	}

	o = newOnce(t)
	first = o.apply(mine(o, 1))
	if _, ok, _ := o.f.LookupRequest(reqID(1)); ok {
		t.Fatal("a settled begin was remembered")
	}
	o.advance(2 * lease)
	taker := o.apply(mine(o, 2))
	if taker.Code != command.CodeTakenOver || taker.Fence <= first.Fence {
		t.Fatalf("takeover %+v", taker)
	}
	if _, ok, _ := o.f.LookupRequest(reqID(1)); !ok {
		t.Fatal("the takeover did not hand the replaced begin's answer to the memory")
	}
	o.advance(time.Second)
	if r := o.apply(mine(o, 1)); !bytes.Equal(r.Encode(nil), first.Encode(nil)) {
		t.Fatalf("after a takeover: the replaced begin's retry %+v, first %+v", r, first)
	}
	if r := o.apply(mine(o, 2)); !bytes.Equal(r.Encode(nil), taker.Encode(nil)) {
		t.Fatalf("after a takeover: the taker's retry %+v, first %+v", r, taker)
	}
	if r := o.apply(*command.OnceCompleteCommand(o.key, first.Fence, []byte("late"), time.Hour)); r.Code != command.CodeFenceMismatch {
		t.Fatalf("the replaced holder's complete: %+v", r)
	}

	o = newOnce(t)
	first = o.apply(mine(o, 1))
	o.apply(*command.OnceCompleteCommand(o.key, first.Fence, []byte("done"), time.Hour))
	if r := o.apply(mine(o, 1)); r.Code != command.CodeOK || string(r.Value) != "done" || r.Fence != first.Fence {
		t.Fatalf("after the complete: retry %+v", r)
	}

	o = newOnce(t)
	first = o.apply(mine(o, 1))
	o.apply(*command.OnceReleaseCommand(o.key, first.Fence))
	if r := o.apply(mine(o, 1)); r.Code != command.CodeCreated || r.Fence <= first.Fence {
		t.Fatalf("after the release: retry %+v (first fence %d)", r, first.Fence)
	}
}

// TestOnceCompleteRetrySettled: a complete retried under its request id,
// across the memory's whole span, is answered as the first attempt was;
// with a retention at least twice RequestIDRetention the claim answers it
// and the id is not remembered, with a shorter one the memory does (the
// claim may be gone before the memory is).
func TestOnceCompleteRetrySettled(t *testing.T) {
	for _, tc := range []struct {
		retention  time.Duration
		remembered bool
	}{
		{2 * RequestIDRetention, false},
		{time.Hour, false},
		{2*RequestIDRetention - time.Nanosecond, true},
		{time.Minute, true},
	} {
		o := newOnce(t)
		fence := o.begin(time.Minute).Fence
		c := *command.OnceCompleteCommand(o.key, fence, []byte("sent"), tc.retention)
		c.ReqID = reqID(7)
		first := o.apply(c)
		if first.Code != command.CodeOK || first.Fence != fence {
			t.Fatalf("retention %s: complete %+v", tc.retention, first)
		}
		if _, ok, err := o.f.LookupRequest(c.ReqID); err != nil || ok != tc.remembered {
			t.Fatalf("retention %s: remembered %v (%v), want %v", tc.retention, ok, err, tc.remembered)
		}
		// Retries while the memory certainly holds the id (RequestIDRetention)
		// and, where the claim answers them, up to just before the claim's
		// own expiry at the shortest retention settled.
		at := []time.Duration{time.Second, time.Minute, RequestIDRetention - time.Second}
		if !tc.remembered {
			at = append(at, 2*RequestIDRetention-time.Second)
		}
		start := o.clock
		for _, d := range at {
			o.clock = start + int64(d)
			if again := o.apply(c); !bytes.Equal(first.Encode(nil), again.Encode(nil)) {
				t.Fatalf("retention %s, retry %s after: first %+v, retry %+v", tc.retention, d, first, again)
			}
		}
		if _, ok, _ := o.f.LookupRequest(c.ReqID); !tc.remembered && ok {
			t.Fatalf("retention %s: a retry was remembered", tc.retention)
		}
		// Another result under the same fence is still refused.
		if r := o.apply(*command.OnceCompleteCommand(o.key, fence, []byte("other"), tc.retention)); !tc.remembered && r.Code != command.CodeWrongState {
			t.Fatalf("retention %s: another result: %+v", tc.retention, r)
		}
	}
}

func TestOnceValidate(t *testing.T) {
	k, fp := command.OnceKey("s", "k"), command.OnceFingerprint(nil)
	for _, c := range []*command.Command{
		command.OnceBeginCommand(k, fp[:31], time.Second, time.Hour),
		command.OnceBeginCommand(k, fp, 0, time.Hour),
		command.OnceBeginCommand(k, fp, time.Second, 0),
		command.OnceBeginCommand(nil, fp, time.Second, time.Hour),
		command.OnceRenewCommand(k, 0, time.Second),
		command.OnceRenewCommand(k, 1, 0),
		command.OnceCompleteCommand(k, 0, nil, time.Hour),
		command.OnceCompleteCommand(k, 1, nil, 0),
		command.OnceReleaseCommand(k, 0),
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s %+v: valid", c.Type, c)
		}
	}
}

func TestClaimRoundTrip(t *testing.T) {
	for _, c := range []*command.Claim{
		{State: command.ClaimCompleted, Fence: 42, Fingerprint: command.OnceFingerprint([]byte("p")), CreatedAt: 1, UpdatedAt: 2,
			LeaseEnd: -3, ExpiresAt: 4, Result: []byte("r")},
		{State: command.ClaimBegun, Fence: 7, Fingerprint: command.OnceFingerprint([]byte("p")), CreatedAt: 1, UpdatedAt: 1,
			LeaseEnd: 9, ExpiresAt: 10, Begin: reqID(3), TakenOver: true},
	} {
		enc := c.Encode(nil)
		got, err := command.DecodeClaim(enc)
		if err != nil || !bytes.Equal(got.Encode(nil), enc) || got.Begin != c.Begin || got.TakenOver != c.TakenOver {
			t.Fatalf("%+v %v", got, err)
		}
		for _, bad := range [][]byte{nil, {2}, {1, 9}, {3, 1}, enc[:len(enc)-1], append(enc, 0),
			append(append([]byte(nil), enc[:len(enc)-17]...), 0x80|enc[len(enc)-17])} {
			if _, err := command.DecodeClaim(bad); err == nil {
				t.Errorf("DecodeClaim(%x) succeeded", bad)
			}
		}
	}
	// A version 1 claim (no request id, no flags) of an earlier build.
	v1 := (&command.Claim{State: command.ClaimBegun, Fence: 5, CreatedAt: 1, UpdatedAt: 1, LeaseEnd: 2, ExpiresAt: 3}).Encode(nil)
	v1 = v1[:len(v1)-1]
	v1[0] = 1 // version 1
	got, err := command.DecodeClaim(v1)
	if err != nil || got.Fence != 5 || !got.Begin.IsZero() || got.TakenOver {
		t.Fatalf("version 1: %+v %v", got, err)
	}
	if _, err := command.DecodeClaim(append(v1, 0)); err == nil {
		t.Error("a version 1 claim with trailing bytes decoded")
	}
}

// TestOnceSurvivesRestore: a claim, its index entry and the revision its
// fences come from travel in a snapshot: on the restored replica a
// takeover gets a fence above the old holder's, and the old holder's
// complete is refused there too.
func TestOnceSurvivesRestore(t *testing.T) {
	o := newOnce(t)
	first := o.begin(time.Second)
	g := newHarness(t)
	if err := g.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, o.f)))); err != nil {
		t.Fatal(err)
	}
	g.clock, g.index = o.clock+int64(2*time.Second), o.index
	c, err := g.f.Claim(o.key, g.now())
	if err != nil || c.Fence != first.Fence || c.State != command.ClaimBegun {
		t.Fatalf("restored claim: %+v %v", c, err)
	}
	r := g.apply(*command.OnceBeginCommand(o.key, o.fp, time.Minute, time.Hour))
	if r.Code != command.CodeTakenOver || r.Fence <= first.Fence {
		t.Fatalf("takeover on the restored replica: %+v (first fence %d)", r, first.Fence)
	}
	if r := g.apply(*command.OnceCompleteCommand(o.key, first.Fence, []byte("late"), time.Hour)); r.Code != command.CodeFenceMismatch {
		t.Fatalf("the old holder's complete on the restored replica: %+v", r)
	}
	if due, err := g.f.Due(time.Unix(0, g.clock+int64(2*time.Hour)), 10); err != nil || len(due) != 1 || due[0].Kind != ttl.KindOnce {
		t.Fatalf("the restored claim's index entry: %v %v", due, err)
	}
}
