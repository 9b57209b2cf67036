package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FindRedis resolves --redis (auto: redis-server on PATH, off, or a path):
// the binary, or why there is none.
func FindRedis(flagVal string) (string, string) {
	switch flagVal {
	case "off":
		return "", "turned off (--redis off)"
	case "auto":
		if p, err := exec.LookPath("redis-server"); err == nil {
			return p, ""
		}
		return "", "redis-server is not on PATH (apt-get install redis-server)"
	}
	return flagVal, ""
}

// etcdVersion is the etcd the bench builds when none is on PATH.
const etcdVersion = "v3.7.3"

// FindEtcd resolves --etcd (auto: etcd on PATH, or built once from the
// wrapper module bench/etcd when run from the repository root; off; or a
// path): the binary, or why there is none.
func FindEtcd(flagVal string, progress io.Writer) (string, string) {
	switch flagVal {
	case "off":
		return "", "turned off (--etcd off)"
	case "auto":
	default:
		return flagVal, ""
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, ""
	}
	return buildCached("etcd-"+etcdVersion, ".", "etcd "+etcdVersion+" from the Go module proxy (bench/etcd)", progress)
}

// clientLoadVersion names the build of bench/etcd/clientload the cache
// holds: raise it when the command changes.
const clientLoadVersion = "1"

// FindEtcdClientLoad returns bench/etcd's clientload command (SETNX through
// etcd's own Go client), built once from the repository root into the
// user's cache like the etcd server, or why there is none.
func FindEtcdClientLoad(progress io.Writer) (string, string) {
	return buildCached("etcd-clientload-"+etcdVersion+"-"+clientLoadVersion, "./clientload",
		"bench/etcd/clientload (etcd's Go client, "+etcdVersion+")", progress)
}

// buildCached returns the binary name in the user's cache, building it
// first from package pkg of the module bench/etcd (run from the
// repository root) if the cache has none; or why there is none.
func buildCached(name, pkg, what string, progress io.Writer) (string, string) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "no cache directory to build " + what + " in"
	}
	bin := filepath.Join(cache, "idemgate", name)
	if _, err := os.Stat(bin); err == nil {
		return bin, ""
	}
	dir := filepath.Join("bench", "etcd")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", "run from the repository root to build " + what + ", or pass --etcd PATH"
	}
	fmt.Fprintf(progress, "bench: building %s, once; it is cached in %s\n", what, bin)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("building %s failed: %v: %s", what, err, strings.TrimSpace(string(out)))
	}
	return bin, ""
}
