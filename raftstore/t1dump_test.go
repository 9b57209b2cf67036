package raftstore

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/history"
)

// What makes an Illegal T1 history readable (a failure seen once under load
// may not recur): the operations of every key whose history does not check
// on its own, in call order, go to the test's log; and when IDEMGATE_T1_DUMP
// names a directory, porcupine's visualization of the whole history is
// written there (t1-<fault>-<time>.html, opened in a browser).
//
//	IDEMGATE_T1_DUMP=/tmp go test -count=1 -run 'TestT1Histories/one-way_partition_to_the_leader' ./raftstore/

// What one illegal key logs: the operations around the first one the
// longest linearizable order leaves out.
const explainBefore, explainAfter = 120, 40

// opNote is what the history records of an operation besides its input and
// output: where it ran and, for a write whose answer was lost, why.
type opNote struct {
	node   string // the node the client called
	leader bool   // whether that node led when the call began
	reqID  command.ReqID
	err    string // the error of a write whose answer was lost
}

func (n opNote) String() string {
	role := "follower"
	if n.leader {
		role = "leader"
	}
	s := n.node + " (" + role + ")"
	if !n.reqID.IsZero() {
		s += fmt.Sprintf(" req %x", n.reqID[:])
	}
	if n.err != "" {
		s += " lost: " + n.err
	}
	return s
}

// illegalKeys returns the keys whose operations alone do not check Ok
// (the model is partitioned by key, so these are where the history fails).
func illegalKeys(ops []porcupine.Operation, timeout time.Duration) map[string][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		k := op.Input.(history.Input).Key
		byKey[k] = append(byKey[k], op)
	}
	for k, kops := range byKey {
		if history.Check(kops, int64(timeout)) == porcupine.Ok {
			delete(byKey, k)
		}
	}
	return byKey
}

// longestLinearization maps the index of each operation of one key (ops)
// in the longest linearizable order porcupine found to its place there.
func longestLinearization(ops []porcupine.Operation) map[int]int {
	_, info := porcupine.CheckOperationsVerbose(history.Model.ToModel(), ops, 30*time.Second)
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	pos := make(map[int]int, len(longest))
	for n, id := range longest {
		pos[id] = n + 1
	}
	return pos
}

// describeOp is one line of an operation: its window in milliseconds since
// the history began, its client, what it did and saw, and its note.
func describeOp(op porcupine.Operation) string {
	ret := "never"
	if op.Return != math.MaxInt64 {
		ret = fmt.Sprintf("%.3f", float64(op.Return)/1e6)
	}
	in, out := op.Input.(history.Input), op.Output.(history.Output)
	what := history.Model.DescribeOperation(in, out)
	if in.TTL > 0 {
		what += fmt.Sprintf(" ttl %s", time.Duration(in.TTL))
	}
	note := ""
	if n, ok := op.Metadata.(opNote); ok {
		note = "  @" + n.String()
	}
	return fmt.Sprintf("[%9.3f, %9s] c%d %s%s", float64(op.Call)/1e6, ret, op.ClientId, what, note)
}

// explainIllegal logs the operations of each key whose history is illegal
// and, when IDEMGATE_T1_DUMP is set, writes porcupine's visualization.
func explainIllegal(t *testing.T, fault string, ops []porcupine.Operation) {
	t.Helper()
	bad := illegalKeys(ops, 30*time.Second)
	keys := make([]string, 0, len(bad))
	for k := range bad {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kops := bad[k]
		sort.Slice(kops, func(i, j int) bool { return kops[i].Call < kops[j].Call })
		pos := longestLinearization(kops)
		var b strings.Builder
		fmt.Fprintf(&b, "key %q: %d operations, not linearizable on their own; #n: an operation's place in the longest linearizable order porcupine found (%d of them), -: not in it; times in ms since the history began:\n",
			k, len(kops), len(pos))
		// Around where the order got stuck: the first operation (by call)
		// it leaves out.
		stuck := 0
		for stuck < len(kops) && pos[stuck] != 0 {
			stuck++
		}
		from, to := max(0, stuck-explainBefore), min(len(kops), stuck+explainAfter)
		if from > 0 {
			fmt.Fprintf(&b, "... %d operations before\n", from)
		}
		for i := from; i < to; i++ {
			op := kops[i]
			place := "    -"
			if n, ok := pos[i]; ok {
				place = fmt.Sprintf("#%4d", n)
			}
			b.WriteString(place + " " + describeOp(op) + "\n")
		}
		if to < len(kops) {
			fmt.Fprintf(&b, "... %d operations after\n", len(kops)-to)
		}
		t.Log(b.String())
	}
	if len(bad) == 0 {
		t.Log("every key's operations check alone; the history fails as a whole (a checker timeout?)")
	}
	dir := os.Getenv("IDEMGATE_T1_DUMP")
	if dir == "" {
		t.Log("set IDEMGATE_T1_DUMP to a directory to get porcupine's visualization of the history")
		return
	}
	path, err := writeVisualization(dir, fault, ops)
	if err != nil {
		t.Errorf("IDEMGATE_T1_DUMP: %v", err)
		return
	}
	t.Logf("porcupine's visualization of the history: %s", path)
}

// writeVisualization writes the history's visualization under dir and
// returns its path.
func writeVisualization(dir, fault string, ops []porcupine.Operation) (string, error) {
	model := history.Model.ToModel()
	model.DescribeState = func(s interface{}) string { return fmt.Sprintf("%+v", s) }
	model.DescribeOperationMetadata = func(m interface{}) string {
		if n, ok := m.(opNote); ok {
			return n.String()
		}
		return ""
	}
	_, info := porcupine.CheckOperationsVerbose(model, ops, 30*time.Second)
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(fault))
	f, err := os.CreateTemp(dir, "t1-"+name+"-"+time.Now().UTC().Format("20060102T150405")+"-*.html")
	if err != nil {
		return "", err
	}
	path := f.Name()
	if err := porcupine.Visualize(model, info, f); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return filepath.Abs(path)
}
