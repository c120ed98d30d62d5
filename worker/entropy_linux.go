//go:build cgo

// V8 seeds its random number generators (Math.random, its hash seeds, the addresses
// it asks the kernel to map its heap and code at) from /dev/urandom, or, when it
// cannot open that file, from the clock. A jailed worker can open nothing, so every
// worker's V8 was seeded from the clock: guessable, for code looking for where V8
// put its code. v8go does not give V8 an entropy source; this file does, before any
// generator exists (a constructor, run before the Go runtime and so before v8go
// starts V8): getrandom(2), which the worker's allow-list allows.

package worker

/*
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/random.h>

// v8::V8::SetEntropySource(bool (*)(unsigned char*, size_t)), by its mangled name
// (this package is C; a static member function is called as a plain function).
extern void _ZN2v82V816SetEntropySourceEPFbPhmE(bool (*)(unsigned char *, size_t));

static unsigned long autobox_entropy_calls;

static bool autobox_entropy(unsigned char *buf, size_t n) {
	__atomic_add_fetch(&autobox_entropy_calls, 1, __ATOMIC_RELAXED);
	while (n > 0) {
		ssize_t got = getrandom(buf, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		buf += got;
		n -= (size_t)got;
	}
	return true;
}

__attribute__((constructor)) static void autobox_set_entropy(void) {
	_ZN2v82V816SetEntropySourceEPFbPhmE(autobox_entropy);
}

static unsigned long autobox_entropy_used(void) {
	return __atomic_load_n(&autobox_entropy_calls, __ATOMIC_RELAXED);
}
*/
import "C"

// entropyUsed is how many times V8 asked for a seed.
func entropyUsed() uint64 { return uint64(C.autobox_entropy_used()) }
