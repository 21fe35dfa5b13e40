// The bound on DuckDB's heap in this process: see heap.go.
//
// Two doors lead to DuckDB's memory, and both pass through here:
//   - DuckDB's allocator, jemalloc (its buffer manager, vectors, string
//     heaps): the linker sends DuckDB's calls of duckdb_je_malloc, _realloc
//     and _free to the __wrap_ functions below (-Wl,--wrap in heap.go);
//     __real_X is the function the call was meant for.
//   - C++'s operator new and delete (values, lists of values, strings,
//     plans): this file replaces them for the whole process, as C++
//     allows, so libstdc++'s own calls (a std::string growing) count too.
// The Go runtime allocates neither way.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <new>
#include <cerrno>
#include <cstdio>
#include <malloc.h>
#include <sys/types.h>

extern "C" {
void *__real_duckdb_je_malloc(size_t size);
void *__real_duckdb_je_realloc(void *ptr, size_t size);
void __real_duckdb_je_free(void *ptr);
size_t duckdb_je_malloc_usable_size(void *ptr);
int duckdb_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
}

namespace {

std::atomic<int64_t> heap_limit{0};
std::atomic<int64_t> heap_used{0};
std::atomic<int64_t> heap_peak{0};
std::atomic<int64_t> heap_refused{0};

void add(int64_t n) {
	int64_t u = heap_used.fetch_add(n, std::memory_order_relaxed) + n;
	int64_t p = heap_peak.load(std::memory_order_relaxed);
	while (u > p && !heap_peak.compare_exchange_weak(p, u, std::memory_order_relaxed)) {
	}
}

// Allocations of at least kLarge bytes are checked against the limit
// itself; smaller ones only once the heap is past it by kSmallSlack of
// the limit, so the first to fail is the large block a growing value
// needs (a list's buffer, a value list's array), and the many small
// blocks of a value list (its strings, its structs) still meet a bound.
constexpr size_t kLarge = 64 << 10;
constexpr int64_t kSmallSlackDiv = 16;

// admit tells whether n more bytes keep the heap within its limit.
bool admit(size_t n) {
	int64_t lim = heap_limit.load(std::memory_order_relaxed);
	if (lim <= 0) {
		return true;
	}
	if (n < kLarge) {
		lim += lim / kSmallSlackDiv;
	}
	if (heap_used.load(std::memory_order_relaxed) + int64_t(n) <= lim) {
		return true;
	}
	heap_refused.fetch_add(1, std::memory_order_relaxed);
	return false;
}

// operator new and delete count per thread, into heap_used once a
// thread's count moves by kFlush or the thread ends: they are DuckDB's
// most frequent calls, and one counter for all threads would be a point
// of contention. The heap_used the limit reads is off by at most kFlush
// per running thread.
constexpr int64_t kFlush = 1 << 20;

// pendingCount is a thread's count not yet in heap_used; a thread that
// ends flushes it, so what it allocated and another thread freed does not
// leave the total off for good.
struct pendingCount {
	int64_t n = 0;
	~pendingCount() {
		add(n);
		n = 0;
	}
};
thread_local pendingCount pending;

inline void count(int64_t n) {
	pending.n += n;
	if (pending.n >= kFlush || pending.n <= -kFlush) {
		add(pending.n);
		pending.n = 0;
	}
}

// refused is the bad_alloc of a refused operator new. DuckDB reads a
// what() that is JSON as the type and message of its error.
struct refused : std::bad_alloc {
	const char *what() const noexcept override {
		return "{\"exception_type\":\"Out of Memory\",\"exception_message\":\"DuckDB's memory in this process "
		       "would pass its share of the memory budget\"}";
	}
};

// allocate is operator new's loop (C++'s [new.delete.single]): malloc,
// and while it fails, the new-handler. nullptr when refused or out of
// memory with no handler.
void *allocate(size_t n) {
	if (n == 0) {
		n = 1;
	}
	if (!admit(n)) {
		return nullptr;
	}
	void *p;
	while ((p = malloc(n)) == nullptr) {
		std::new_handler h = std::get_new_handler();
		if (!h) {
			return nullptr;
		}
		h();
	}
	count(int64_t(malloc_usable_size(p)));
	return p;
}

void release(void *p) noexcept {
	if (p) {
		count(-int64_t(malloc_usable_size(p)));
		free(p);
	}
}

void *allocate_or_throw(size_t n) {
	void *p = allocate(n);
	if (!p) {
		throw refused();
	}
	return p;
}

} // namespace

void *operator new(size_t n) {
	return allocate_or_throw(n);
}
void *operator new[](size_t n) {
	return allocate_or_throw(n);
}
void *operator new(size_t n, const std::nothrow_t &) noexcept {
	try {
		return allocate(n);
	} catch (...) { // a new-handler that throws
		return nullptr;
	}
}
void *operator new[](size_t n, const std::nothrow_t &) noexcept {
	try {
		return allocate(n);
	} catch (...) {
		return nullptr;
	}
}
void operator delete(void *p) noexcept {
	release(p);
}
void operator delete[](void *p) noexcept {
	release(p);
}
void operator delete(void *p, size_t) noexcept {
	release(p);
}
void operator delete[](void *p, size_t) noexcept {
	release(p);
}
void operator delete(void *p, const std::nothrow_t &) noexcept {
	release(p);
}
void operator delete[](void *p, const std::nothrow_t &) noexcept {
	release(p);
}

extern "C" {

void *__wrap_duckdb_je_malloc(size_t size) {
	if (!admit(size)) {
		return nullptr;
	}
	void *p = __real_duckdb_je_malloc(size);
	if (p) {
		add(int64_t(duckdb_je_malloc_usable_size(p)));
	}
	return p;
}

void *__wrap_duckdb_je_realloc(void *ptr, size_t size) {
	size_t old = ptr ? duckdb_je_malloc_usable_size(ptr) : 0;
	if (size > old && !admit(size - old)) {
		return nullptr;
	}
	void *p = __real_duckdb_je_realloc(ptr, size);
	if (p) {
		add(int64_t(duckdb_je_malloc_usable_size(p)) - int64_t(old));
	}
	return p;
}

void __wrap_duckdb_je_free(void *ptr) {
	if (ptr) {
		add(-int64_t(duckdb_je_malloc_usable_size(ptr)));
	}
	__real_duckdb_je_free(ptr);
}

// icefloe_heap_set_limit bounds the heap at n bytes. With a bound,
// jemalloc returns the pages DuckDB frees to the system at once (dirty
// and muzzy decay 0; DuckDB's default keeps them a second), so the
// process's RSS follows what the bound counts: a page one thread's arena
// keeps cannot serve another thread's allocation, and an arena per core
// could each keep up to the bound. Returns the first mallctl that failed,
// or 0.
int icefloe_heap_set_limit(int64_t n) {
	heap_limit.store(n);
	if (n <= 0) {
		return 0;
	}
	ssize_t ms = 0;
	const char *defaults[] = {"arenas.dirty_decay_ms", "arenas.muzzy_decay_ms"};
	for (const char *name : defaults) {
		if (int err = duckdb_je_mallctl(name, nullptr, nullptr, &ms, sizeof(ms))) {
			return err;
		}
	}
	unsigned narenas = 0;
	size_t len = sizeof(narenas);
	if (int err = duckdb_je_mallctl("arenas.narenas", &narenas, &len, nullptr, 0)) {
		return err;
	}
	for (unsigned i = 0; i < narenas; i++) {
		for (const char *kind : {"dirty", "muzzy"}) {
			char name[64];
			snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", i, kind);
			// An arena not made yet (EFAULT) takes the defaults above.
			if (int err = duckdb_je_mallctl(name, nullptr, nullptr, &ms, sizeof(ms)); err != 0 && err != EFAULT) {
				return err;
			}
		}
	}
	return 0;
}
int64_t icefloe_heap_limit() {
	return heap_limit.load();
}
int64_t icefloe_heap_used() {
	return heap_used.load();
}
int64_t icefloe_heap_peak() {
	return heap_peak.load();
}
int64_t icefloe_heap_refused() {
	return heap_refused.load();
}
}
