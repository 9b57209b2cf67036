// Command idp is a toy identity provider to put in front of idemgate's
// bearer JWTs in docs/security.md: it signs tokens with an Ed25519 key and
// publishes the key's public half as a JWK Set, as an OpenID provider
// does. GET /token?sub=NAME issues a token for NAME (an hour, audience
// payments, issuer http://ADDR/); GET /.well-known/jwks.json is the JWKS;
// POST /rotate makes a new key (the JWKS then holds the new one and the
// last one, and new tokens name the new one by its kid). Not for anything
// but trying idemgate on one machine.
package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// key is a signing key under its kid.
type key struct {
	kid  string
	priv ed25519.PrivateKey
}

func newKey(n int) key {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	return key{kid: fmt.Sprintf("key-%d", n), priv: priv}
}

func main() {
	addr := flag.String("listen", "127.0.0.1:3100", "address to listen on")
	aud := flag.String("audience", "payments", "the aud of the tokens issued")
	flag.Parse()
	issuer := "http://" + *addr + "/"
	var mu sync.Mutex
	made := 1
	keys := []key{newKey(made)} // the current one first
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var set struct {
			Keys []map[string]string `json:"keys"`
		}
		for _, k := range keys {
			set.Keys = append(set.Keys, map[string]string{"kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA",
				"kid": k.kid, "x": base64.RawURLEncoding.EncodeToString(k.priv.Public().(ed25519.PublicKey))})
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		json.NewEncoder(w).Encode(set)
	})
	mux.HandleFunc("GET /token", func(w http.ResponseWriter, r *http.Request) {
		sub := r.URL.Query().Get("sub")
		if sub == "" {
			http.Error(w, "want ?sub=NAME", http.StatusBadRequest)
			return
		}
		mu.Lock()
		k := keys[0]
		mu.Unlock()
		now := time.Now()
		t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": sub, "iss": issuer, "aud": *aud,
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
		t.Header["kid"] = k.kid
		s, err := t.SignedString(k.priv)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, s)
	})
	mux.HandleFunc("POST /rotate", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		made++
		keys = []key{newKey(made), keys[0]}
		fmt.Fprintf(w, "{\"kid\":%q}\n", keys[0].kid)
	})
	log.Printf("idp: issuer %s, JWKS %s.well-known/jwks.json", issuer, issuer)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
