package client_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/idemgate/idemgate/internal/democluster"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// The cluster every test and example of this package calls: three nodes
// on loopback (real Raft over TCP, bbolt in a temp dir) in front of a
// counting upstream, whose route pay takes POST /pay with the tenant from
// X-User-Id.
var (
	gateways, apis []string
	upstream       *testsupport.Upstream
)

// mainTB is what testsupport.Start needs, outside a test.
type mainTB struct{ cleanups []func() }

func (m *mainTB) Helper()           {}
func (m *mainTB) Fatal(args ...any) { panic(fmt.Sprint(args...)) }
func (m *mainTB) Cleanup(f func())  { m.cleanups = append(m.cleanups, f) }
func (m *mainTB) close() {
	for _, f := range m.cleanups {
		f()
	}
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tb := &mainTB{}
	defer tb.close()
	upstream = testsupport.Start(tb)
	dir, err := os.MkdirTemp("", "idemgate-client-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	nodes, _, err := democluster.Start(dir, 3, upstream.Addr, false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client tests: start the cluster:", err)
		return 1
	}
	for _, n := range nodes {
		defer n.Stop(2e9)
		gateways = append(gateways, "http://"+n.GW.Addr())
		apis = append(apis, "http://"+n.API.Addr())
	}
	return m.Run()
}
