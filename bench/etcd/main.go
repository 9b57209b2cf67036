// Command etcd is the stock etcd server (go.etcd.io/etcd/server/v3), built
// from the Go module proxy: `go install go.etcd.io/etcd/v3@v3.7.3` refuses
// because etcd's go.mod has replace directives, but a module whose main
// calls etcdmain.Main builds the same server. It lives in its own module so
// idemgate's go.mod stays lean; `idemgate bench` builds it on demand as the
// replicated, linearizable baseline.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
