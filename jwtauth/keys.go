package jwtauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// fileCheck is how often the key and secret files are looked at again
// (a stat each); a changed one is reread.
const fileCheck = time.Second

// Errors of loading keys. ErrKeysFile and ErrSecretFile name the file
// New could not use.
var (
	ErrKeysFile   = errors.New("keys file")
	ErrSecretFile = errors.New("secret file")
	errTooLarge   = errors.New("JWKS too large")
)

// keySet is the keys at one moment; never changed once built (a load
// builds another).
type keySet struct {
	byKID  map[string]publicKey
	secret []byte
}

// stamp tells a file's versions apart.
type stamp struct {
	mod  time.Time
	size int64
}

// keyCache holds the current keySet and loads the next: in the background
// when Refresh is due or a file changed, in the foreground (a request
// waits, FetchTimeout at most) for an unknown kid, at most once per
// MinRefetch.
type keyCache struct {
	cfg    Config
	client *http.Client

	// set is the keys held (nil: none loaded yet); due is when a source
	// is next looked at (unix nanoseconds): before it, current takes no
	// lock.
	set atomic.Pointer[keySet]
	due atomic.Int64

	mu          sync.Mutex
	loading     chan struct{} // closed when the load in progress ends; nil: none
	lastErr     error         // of the last load; nil after a good one
	lastRefetch time.Time     // of the last load for an unknown kid
	nextFetch   time.Time     // when the URL is due again
	nextStat    time.Time     // when the files are looked at again
	stamps      map[string]stamp
}

func newKeyCache(cfg Config) *keyCache {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = cfg.FetchTimeout
	tr.MaxResponseHeaderBytes = 64 << 10
	tr.MaxIdleConnsPerHost = 1
	client := &http.Client{Transport: tr, Timeout: cfg.FetchTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("more than 3 redirects")
			}
			return nil
		}}
	return &keyCache{cfg: cfg, client: client, stamps: map[string]stamp{}}
}

// current returns the keys held, starting a background load first when
// one is due (the caller goes on with the keys it has).
func (c *keyCache) current(now time.Time) *keySet {
	if now.UnixNano() < c.due.Load() {
		return c.set.Load()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.set.Load()
	if c.loading == nil && set != nil && (c.cfg.JWKSURL != "" && now.After(c.nextFetch) || now.After(c.nextStat) && c.filesChanged(now)) {
		c.startLoad(now)
	}
	c.setDue()
	return set
}

// setDue sets due to the earliest of nextFetch (with a URL) and nextStat
// (with a file); c.mu is held.
func (c *keyCache) setDue() {
	due := c.nextFetch
	if c.cfg.JWKSURL == "" || c.cfg.KeysFile != "" || c.cfg.SecretFile != "" && c.nextStat.Before(due) {
		due = c.nextStat
	}
	c.due.Store(due.UnixNano())
}

// refetch loads the keys again for a token whose kid the held ones lack,
// unless a load for one began less than MinRefetch ago, and waits for it
// at most FetchTimeout (or until ctx ends). It joins a load in progress.
// It returns the keys held afterwards and the last load's error (why
// there are none, when there are none).
func (c *keyCache) refetch(ctx context.Context, now time.Time) (*keySet, error) {
	c.mu.Lock()
	done := c.loading
	if done == nil && (c.lastRefetch.IsZero() || now.Sub(c.lastRefetch) >= c.cfg.MinRefetch) {
		c.lastRefetch = now
		done = c.startLoad(now)
	}
	c.mu.Unlock()
	if done != nil {
		t := time.NewTimer(c.cfg.FetchTimeout + 100*time.Millisecond)
		select {
		case <-done:
		case <-ctx.Done():
		case <-t.C: // the load's own timeout ends it soon
		}
		t.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set.Load(), c.lastErr
}

// load loads the keys now and waits for the load: at start, and in tests.
func (c *keyCache) load() error {
	c.mu.Lock()
	done := c.loading
	if done == nil {
		done = c.startLoad(time.Now())
	}
	c.mu.Unlock()
	<-done // bounded: FetchTimeout, and files of bounded size
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// startLoad starts a load on a goroutine of its own, which ends within
// FetchTimeout; c.mu is held.
func (c *keyCache) startLoad(now time.Time) chan struct{} {
	done := make(chan struct{})
	c.loading = done
	c.nextFetch = now.Add(c.cfg.Refresh)
	c.nextStat = now.Add(fileCheck)
	c.setDue()
	go func() {
		defer close(done)
		stamps := map[string]stamp{}
		set, err := c.read(stamps)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.loading, c.lastErr = nil, err
		// A file read, good or bad, is not read again until it changes;
		// a URL that failed is tried again at the next refresh or for an
		// unknown kid, never once a second.
		for p, s := range stamps {
			c.stamps[p] = s
		}
		if err != nil {
			if c.cfg.Logger != nil {
				c.cfg.Logger.Warn("jwt: keys not loaded; keeping the ones held", "error", err)
			}
			return
		}
		c.set.Store(set)
	}()
	return done
}

// filesChanged reports whether a key or secret file changed since it was
// read; c.mu is held. It stats at most once per fileCheck.
func (c *keyCache) filesChanged(now time.Time) bool {
	c.nextStat = now.Add(fileCheck)
	for _, p := range []string{c.cfg.KeysFile, c.cfg.SecretFile} {
		if p == "" {
			continue
		}
		fi, err := os.Stat(p)
		if err == nil && (stamp{fi.ModTime(), fi.Size()}) != c.stamps[p] {
			return true
		}
	}
	return false
}

// read reads every source into a new keySet, and the stamps of the files
// it read into stamps.
func (c *keyCache) read(stamps map[string]stamp) (*keySet, error) {
	set := &keySet{}
	var data []byte
	var err error
	switch {
	case c.cfg.JWKSURL != "":
		if data, err = c.fetch(); err != nil {
			return nil, fmt.Errorf("JWKS %s: %w", c.cfg.JWKSURL, err)
		}
	case c.cfg.KeysFile != "":
		if data, err = readFile(c.cfg.KeysFile, c.cfg.MaxKeysBytes, stamps); err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrKeysFile, c.cfg.KeysFile, err)
		}
	}
	if data != nil {
		var skipped []string
		if set.byKID, skipped, err = parseJWKS(data); err != nil {
			if c.cfg.KeysFile != "" {
				err = fmt.Errorf("%w %s: %w", ErrKeysFile, c.cfg.KeysFile, err)
			}
			return nil, err
		}
		if len(skipped) > 0 && c.cfg.Logger != nil {
			c.cfg.Logger.Warn("jwt: keys left out of the JWKS", "keys", skipped)
		}
	}
	if c.cfg.SecretFile != "" {
		if set.secret, err = readSecret(c.cfg.SecretFile, stamps); err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrSecretFile, c.cfg.SecretFile, err)
		}
	}
	return set, nil
}

// fetch GETs the JWKS URL: 200 and at most MaxKeysBytes (after any
// decompression), within FetchTimeout from the dial to the body's end.
func (c *keyCache) fetch() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	return readAtMost(resp.Body, c.cfg.MaxKeysBytes)
}

// readAtMost reads r whole, or fails past limit bytes.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
	}
	return data, nil
}

// readFile reads a file of at most limit bytes, and records its stamp.
func readFile(path string, limit int64, stamps map[string]stamp) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	stamps[path] = stamp{fi.ModTime(), fi.Size()}
	return readAtMost(f, limit)
}

// minSecret is HS256's shortest key: as long as its hash (RFC 7518 3.2).
const minSecret = 32

// readSecret reads an HS256 secret; one trailing newline is not part of
// it (echo writes one).
func readSecret(path string, stamps map[string]stamp) ([]byte, error) {
	b, err := readFile(path, 4<<10, stamps)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if len(b) < minSecret {
		return nil, fmt.Errorf("the secret is %d bytes, want %d or more (HS256's key is as long as its hash)", len(b), minSecret)
	}
	return b, nil
}
