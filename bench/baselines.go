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
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "no etcd on PATH and no cache directory to build one in"
	}
	bin := filepath.Join(cache, "idemgate", "etcd-"+etcdVersion)
	if _, err := os.Stat(bin); err == nil {
		return bin, ""
	}
	if _, err := os.Stat(filepath.Join("bench", "etcd", "go.mod")); err != nil {
		return "", "no etcd on PATH; run from the repository root to build bench/etcd, or pass --etcd PATH"
	}
	fmt.Fprintf(progress, "bench: building etcd %s from the Go module proxy (bench/etcd), once; it is cached in %s\n", etcdVersion, bin)
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("bench", "etcd")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("building etcd failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, ""
}

// clientLoadVersion names the build of bench/etcd/clientload the cache
// holds: raise it when the command changes.
const clientLoadVersion = "1"

// FindEtcdClientLoad returns bench/etcd's clientload command (SETNX through
// etcd's own Go client), built once from the repository root into the
// user's cache like the etcd server, or why there is none.
func FindEtcdClientLoad(progress io.Writer) (string, string) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "no cache directory to build bench/etcd/clientload in"
	}
	bin := filepath.Join(cache, "idemgate", "etcd-clientload-"+etcdVersion+"-"+clientLoadVersion)
	if _, err := os.Stat(bin); err == nil {
		return bin, ""
	}
	if _, err := os.Stat(filepath.Join("bench", "etcd", "clientload", "main.go")); err != nil {
		return "", "run from the repository root to build bench/etcd/clientload"
	}
	fmt.Fprintf(progress, "bench: building bench/etcd/clientload (etcd's Go client, %s), once; it is cached in %s\n", etcdVersion, bin)
	cmd := exec.Command("go", "build", "-o", bin, "./clientload")
	cmd.Dir = filepath.Join("bench", "etcd")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("building bench/etcd/clientload failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, ""
}
