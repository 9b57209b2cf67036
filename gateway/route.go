package gateway

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemgate/idemgate/config"
)

// tokenMode says whether a route consumes a Form-Token.
type tokenMode int

const (
	tokenOff tokenMode = iota
	tokenOptional
	tokenRequired
)

// route is a compiled config.Route.
type route struct {
	name, scope       string
	methods           []string
	path              string
	prefix            bool // path ends in "*": match the prefix before it
	keyQuery          bool // key from the query string, else from a header
	keyName           string
	requireKey        bool
	tenantHeader      string // "" and !tenantAuth: no tenant
	tenantAuth        bool   // tenant = digest of Authorization
	ttl               time.Duration
	processingTimeout time.Duration
	waitTimeout       time.Duration
	wait              bool // on_in_flight: wait
	releaseUnknown    bool // on_unknown: release
	rejectSuspect     bool // on_suspect: reject
	token             tokenMode
	maxStoredBody     int
	releaseStatus     map[int]bool
	replayAllow       map[string]bool // lowercased header names allowed despite the default filter
	metrics           *routeMetrics
}

// compileRoutes turns validated config routes into matchers.
func compileRoutes(rs []config.Route) ([]*route, error) {
	out := make([]*route, 0, len(rs))
	for i, c := range rs {
		r := &route{
			name: c.Name, scope: c.Scope, methods: c.Methods, path: c.Path,
			requireKey: c.RequireKey == nil || *c.RequireKey,
			ttl:        c.TTL.D(), processingTimeout: c.ProcessingTimeout.D(), waitTimeout: c.WaitTimeout.D(),
			wait: c.OnInFlight == "wait", releaseUnknown: c.OnUnknown == "release", rejectSuspect: c.OnSuspect == "reject",
			releaseStatus: map[int]bool{429: true, 503: true}, replayAllow: map[string]bool{},
		}
		if r.scope == "" || r.ttl <= 0 {
			return nil, fmt.Errorf("gateway: route %d (%s) is not validated", i, c.Name)
		}
		if strings.HasSuffix(r.path, "*") {
			r.path, r.prefix = strings.TrimSuffix(r.path, "*"), true
		}
		kind, name, _ := strings.Cut(c.Key, ":")
		r.keyQuery, r.keyName = kind == "query", name
		switch {
		case c.Tenant == "authorization":
			r.tenantAuth = true
		case c.Tenant != "":
			_, r.tenantHeader, _ = strings.Cut(c.Tenant, ":")
		}
		switch c.Token {
		case "optional":
			r.token = tokenOptional
		case "required":
			r.token = tokenRequired
		}
		if c.MaxStoredBody != nil {
			r.maxStoredBody = int(*c.MaxStoredBody)
		}
		for _, s := range c.ReleaseStatuses {
			r.releaseStatus[s] = true
		}
		for _, h := range c.ReplayHeaders {
			r.replayAllow[strings.ToLower(h)] = true
		}
		out = append(out, r)
	}
	return out, nil
}

// matches reports whether the route takes a request; path is normalized.
func (r *route) matches(method, path []byte) bool {
	ok := false
	for _, m := range r.methods {
		if string(method) == m {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	if r.prefix {
		return len(path) >= len(r.path) && string(path[:len(r.path)]) == r.path
	}
	return string(path) == r.path
}

// matchRoute returns the first route that takes the request, or nil.
func matchRoute(routes []*route, method, path []byte) *route {
	for _, r := range routes {
		if r.matches(method, path) {
			return r
		}
	}
	return nil
}
