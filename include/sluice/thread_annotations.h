// Clang's thread-safety attributes, which let the compiler prove that a member guarded by a
// mutex is touched only with that mutex held (-Wthread-safety: scripts/thread-safety, in CI).
// Other compilers see nothing. The names are those of LevelDB's port/thread_annotations.h, and
// like those, each is defined only when nothing defined it first.
#pragma once

#if defined(__clang__)
#define SLUICE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SLUICE_THREAD_ANNOTATION(x)
#endif

// A type that is a lock: a mutex.
#ifndef CAPABILITY
#define CAPABILITY(x) SLUICE_THREAD_ANNOTATION(capability(x))
#endif

// A type whose constructor acquires a capability and whose destructor releases it.
#ifndef SCOPED_CAPABILITY
#define SCOPED_CAPABILITY SLUICE_THREAD_ANNOTATION(scoped_lockable)
#endif

// A member read or written only with the named mutex held.
#ifndef GUARDED_BY
#define GUARDED_BY(x) SLUICE_THREAD_ANNOTATION(guarded_by(x))
#endif

// A pointer member whose pointee is read or written only with the named mutex held.
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) SLUICE_THREAD_ANNOTATION(pt_guarded_by(x))
#endif

// A function called only with the named mutexes held.
#ifndef REQUIRES
#define REQUIRES(...) SLUICE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#endif

// A function called only with the named mutexes held at least shared.
#ifndef REQUIRES_SHARED
#define REQUIRES_SHARED(...) SLUICE_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#endif

// A function that takes the named mutexes itself, so its caller must not hold them.
#ifndef EXCLUDES
#define EXCLUDES(...) SLUICE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#endif

// A function that acquires the named mutexes (or its object, when none is named) and returns
// holding them.
#ifndef ACQUIRE
#define ACQUIRE(...) SLUICE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#endif

#ifndef ACQUIRE_SHARED
#define ACQUIRE_SHARED(...) SLUICE_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#endif

// A function that releases the named mutexes (or its object).
#ifndef RELEASE
#define RELEASE(...) SLUICE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#endif

#ifndef RELEASE_SHARED
#define RELEASE_SHARED(...) SLUICE_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#endif

// A function that fails, at run time in debug builds, unless the named mutex is held; after it
// the analysis takes the mutex as held.
#ifndef ASSERT_CAPABILITY
#define ASSERT_CAPABILITY(x) SLUICE_THREAD_ANNOTATION(assert_capability(x))
#endif

// A function the analysis does not look into: for the few whose locking it cannot follow, each
// with a comment that says why.
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS SLUICE_THREAD_ANNOTATION(no_thread_safety_analysis)
#endif
