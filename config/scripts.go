package config

import "time"

// Scripts bounds the Lua scripts of the Redis face (EVAL, SCRIPT LOAD) on
// each node. A field left out keeps the default of resp.DefaultConfig.
type Scripts struct {
	// Cache bounds the scripts a node keeps for EVALSHA, counted at their
	// estimated compiled size (2 to 20 times the source, a function about
	// 18 KiB): past it the least recently used are dropped and answer
	// NOSCRIPT, and client libraries send them again with EVAL.
	Cache Size `yaml:"cache"`
	// MaxSize bounds one script's estimated compiled size: a larger one is
	// refused before it is compiled.
	MaxSize Size `yaml:"max_size"`
	// Concurrency bounds the scripts a node runs or compiles at once
	// (read-only ones too), so that raft's heartbeats always have a core;
	// 0: half the cores, at least one.
	Concurrency int `yaml:"concurrency"`
	// QueueWait is how long a script past the concurrency waits for its
	// turn before it is refused with TRYAGAIN, nothing run.
	QueueWait Duration `yaml:"queue_wait"`
	// MaxKeys bounds the keys a script that writes may touch in one run
	// (its effects, one log entry, carry each): every node applies them in
	// one go, and the writes after them wait.
	MaxKeys int `yaml:"max_keys"`
}

const (
	minScriptSize  = 1 << 20 // a one-line script's estimate is about 65 KiB
	maxScriptCache = 1 << 40
	maxScriptWait  = time.Minute
)

// validate checks the values the file sets; what it leaves out (zero) is
// filled by resp.DefaultConfig. That the cache holds at least one script
// of max_size is checked here when the file sets both, and by the Redis
// face against its default otherwise.
func (s *Scripts) validate() error {
	if s.MaxSize != 0 && (s.MaxSize < minScriptSize || s.MaxSize > maxScriptCache) {
		return fieldErr("scripts.max_size", "%d: want 1MiB to 1TiB", s.MaxSize)
	}
	if s.Cache != 0 && (s.Cache < minScriptSize || s.Cache > maxScriptCache) {
		return fieldErr("scripts.cache", "%d: want 1MiB to 1TiB", s.Cache)
	}
	if s.Cache != 0 && s.MaxSize != 0 && s.Cache < s.MaxSize {
		return fieldErr("scripts.cache", "%d is less than scripts.max_size %d: the cache must hold one script of the largest size", s.Cache, s.MaxSize)
	}
	if s.Concurrency < 0 || s.Concurrency > 4096 {
		return fieldErr("scripts.concurrency", "%d: want 1 to 4096 (0 or left out: half the cores)", s.Concurrency)
	}
	if s.MaxKeys < 0 || s.MaxKeys > 1<<20 {
		return fieldErr("scripts.max_keys", "%d: want 1 to %d (0 or left out: the default)", s.MaxKeys, 1<<20)
	}
	if s.QueueWait < 0 || s.QueueWait.D() > maxScriptWait {
		return fieldErr("scripts.queue_wait", "%s: want up to %s (0 or left out: the default)", s.QueueWait.D(), maxScriptWait)
	}
	return nil
}
