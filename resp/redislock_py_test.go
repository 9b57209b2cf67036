package resp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPythonRedisLock: python-redis-lock (testdata/python-redis-lock,
// the library unchanged) against a 3-node cluster, its two clients on two
// nodes, and against redis-server: both print the same. It takes a lock,
// fails to take it again without blocking, extends it, and a second
// client's blocking acquire (a BLPOP of the lock's signal list, with a
// timeout shorter than the lock's life) is woken by the first's release
// (a script that LPUSHes the signal): so it acquires, where a missed
// signal would time out and answer False. Then reset_all (a script that
// runs KEYS) frees a lock held by another client. Debian's python3-redis;
// without it the test skips, except under CI.
func TestPythonRedisLock(t *testing.T) {
	py := pythonWithRedis(t)
	lib, err := filepath.Abs("testdata/python-redis-lock")
	if err != nil {
		t.Fatal(err)
	}
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	script := `
import sys, threading, time, redis, redis_lock
a = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), socket_timeout=60)
b = redis.Redis(host="127.0.0.1", port=int(sys.argv[2]), socket_timeout=60)
redis_lock.reset_all(a)
first = redis_lock.Lock(a, "pylock", expire=60)
print("acquired", first.acquire(), first.locked())
print("again", redis_lock.Lock(b, "pylock", expire=60).acquire(blocking=False))
first.extend(300)
print("extended", 290 < a.ttl("lock:pylock") <= 300)
second = redis_lock.Lock(b, "pylock", expire=60)
got = []
waiter = threading.Thread(target=lambda: got.append(second.acquire(blocking=True, timeout=30)))
waiter.start()
time.sleep(0.5)  # most likely blocked by then; if not, it finds the lock free
first.release()
waiter.join()
print("woken", got, second.locked(), second.get_owner_id() == second.id)
try:
    first.release()
except redis_lock.NotAcquired as e:
    print("not acquired", type(e).__name__)
second.release()
print("released", second.locked(), a.type("lock-signal:pylock"))
other = redis_lock.Lock(b, "pylock2", expire=60)
print("other", other.acquire(), a.exists("lock:pylock2"))
redis_lock.reset_all(a)
print("reset", a.exists("lock:pylock2"), a.type("lock-signal:pylock2"), a.lrange("lock-signal:pylock2", 0, -1))
`
	want := "acquired True True\n" +
		"again False\n" +
		"extended True\n" +
		"woken [True] True True\n" +
		"not acquired NotAcquired\n" +
		"released False b'list'\n" +
		"other True 1\n" +
		"reset 0 b'list' [b'1']\n"
	for _, addrs := range [][2]string{{redisAddr, redisAddr}, {tc.addrs[0], tc.addrs[1]}} {
		_, p1, _ := strings.Cut(addrs[0], ":")
		_, p2, _ := strings.Cut(addrs[1], ":")
		cmd := exec.Command(py, "-c", script, p1, p2)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+lib)
		var stderr strings.Builder
		cmd.Stderr = &stderr // the library logs its warnings there
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("python-redis-lock against %s: %v\n%s%s", addrs[0], err, out, stderr.String())
		}
		if string(out) != want {
			t.Errorf("python-redis-lock against %s printed\n%s\nwant\n%s", addrs[0], out, want)
		}
	}
}
