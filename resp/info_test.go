package resp

import (
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
