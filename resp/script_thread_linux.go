package resp

import "syscall"

// scriptNice is the nice value of the threads that run scripts: under
// contention the kernel gives a nice-0 thread (raft's, the listeners')
// about ten times the CPU of one of these.
const scriptNice = 10

// lowerThreadPriority lowers the calling OS thread's priority to
// scriptNice. The caller has locked the goroutine to the thread and
// never unlocks it: an unprivileged process cannot raise it back, so the
// thread ends with its goroutine.
func lowerThreadPriority() error {
	return syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), scriptNice)
}
