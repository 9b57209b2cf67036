package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/internal/testcluster"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestTraceWrites: on a 3-node cluster, a KV write sent to the leader's
// API with a traceparent gets a server span, the child of the one sent,
// named by the path's template (never the key), with the commit under it;
// one sent to a follower has the forward to the leader under it instead;
// a read makes no span.
func TestTraceWrites(t *testing.T) {
	col := testsupport.StartCollector(t)
	p := testsupport.NewTracing(t, col.URL, "api-test", 1, nil)
	c := testcluster.Start(t, 3, nil)
	ac := &apiCluster{c: c, tracer: p.Tracer("api")}
	for _, s := range c.Stores {
		ac.serve(t, s, prometheus.NewRegistry(), nil)
	}
	leader := c.WaitLeader(5 * time.Second)
	const pid = "00f067aa0ba902b7"
	tests := []struct {
		name, method, url, trace string
		want                     []string // name<-parent name; "remote" for pid
	}{
		{"write to the leader", "PUT", ac.urls[leader] + "/v1/kv/secret-key-1", "4bf92f3577b34da6a3ce929d0e0e4736",
			[]string{"api PUT /v1/kv/{key...}<-remote", "raft.commit<-api PUT /v1/kv/{key...}"}},
		{"write to a follower", "PUT", ac.urls[(leader+1)%3] + "/v1/kv/secret-key-2", "5bf92f3577b34da6a3ce929d0e0e4736",
			[]string{"api PUT /v1/kv/{key...}<-remote", "raft.forward<-api PUT /v1/kv/{key...}"}},
		{"a read", "GET", ac.urls[leader] + "/v1/kv/secret-key-1", "6bf92f3577b34da6a3ce929d0e0e4736", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, tt.url, strings.NewReader("v"))
			req.Header.Set("traceparent", "00-"+tt.trace+"-"+pid+"-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			testsupport.FlushTraces(t, p)
			spans := col.Trace(tt.trace)
			byID := map[string]string{pid: "remote"}
			for _, s := range spans {
				byID[s.SpanID] = s.Name
			}
			var got []string
			for _, s := range spans {
				got = append(got, s.Name+"<-"+byID[s.ParentID])
				for k, v := range s.Attrs {
					if strings.Contains(v, "secret-key") {
						t.Errorf("span %s attribute %s = %q holds the key", s.Name, k, v)
					}
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") && !(len(got) == 2 && len(tt.want) == 2 && got[0] == tt.want[1] && got[1] == tt.want[0]) {
				t.Errorf("spans = %q, want %q", got, tt.want)
			}
		})
	}
}
