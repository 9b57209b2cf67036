//go:build ignore

// upstream is run.sh's trivial upstream: 201 and a small JSON body to
// every request, on the address given.
package main

import (
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		w.Write([]byte(`{"ok":true}`))
	})
	http.ListenAndServe(os.Args[1], nil)
}
