// Command payments is a toy payment service to put behind idemgate in the
// README's walk-through: every POST /pay "charges" the caller, counts it,
// and answers with a charge id. An X-Delay header (a Go duration, at most
// 60s) makes it slow, to show in-flight duplicates. GET /charges lists how
// many times each user was charged. GET /checkout is a payment page built
// on the gateway's browser helper (examples/checkout): open it through the
// gateway.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/idemgate/idemgate/examples/checkout"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:3000", "address to listen on")
	flag.Parse()
	var mu sync.Mutex
	charges := map[string]int{}
	n := 0
	mux := http.NewServeMux()
	mux.HandleFunc("POST /pay", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if d, err := time.ParseDuration(r.Header.Get("X-Delay")); err == nil && d > 0 && d <= time.Minute {
			time.Sleep(d)
		}
		user := r.Header.Get("X-User-Id")
		mu.Lock()
		n++
		id := n
		charges[user]++
		mu.Unlock()
		log.Printf("charge ch_%d: user=%q key=%q body=%s", id, user, r.Header.Get("Idempotency-Key"), body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "{\"charge\":\"ch_%d\",\"user\":%q,\"status\":\"succeeded\"}\n", id, user)
	})
	mux.HandleFunc("GET /charges", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(charges)
	})
	mux.Handle("GET "+checkout.Path, checkout.Handler())
	log.Printf("payments: listening on http://%s (POST /pay, GET /charges, GET /checkout)", *addr)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
