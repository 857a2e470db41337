// Clang's thread-safety attributes, which let the compiler prove that a member guarded by a
// mutex is touched only with that mutex held (-Wthread-safety: scripts/thread-safety, in CI).
// Other compilers see nothing. The names are those of LevelDB's port/thread_annotations.h with
// the prefix SLUICE_, so that a program including Sluice's headers keeps its own.
#pragma once

#if defined(__clang__)
#define SLUICE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SLUICE_THREAD_ANNOTATION(x)
#endif

// A type that is a lock: a mutex.
#define SLUICE_CAPABILITY(x) SLUICE_THREAD_ANNOTATION(capability(x))

// A type whose constructor acquires a capability and whose destructor releases it.
#define SLUICE_SCOPED_CAPABILITY SLUICE_THREAD_ANNOTATION(scoped_lockable)

// A member read or written only with the named mutex held.
#define SLUICE_GUARDED_BY(x) SLUICE_THREAD_ANNOTATION(guarded_by(x))

// A pointer member whose pointee is read or written only with the named mutex held.
#define SLUICE_PT_GUARDED_BY(x) SLUICE_THREAD_ANNOTATION(pt_guarded_by(x))

// A function called only with the named mutexes held.
#define SLUICE_REQUIRES(...) SLUICE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))

// A function called only with the named mutexes held at least shared.
#define SLUICE_REQUIRES_SHARED(...) \
  SLUICE_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))

// A function that takes the named mutexes itself, so its caller must not hold them.
#define SLUICE_EXCLUDES(...) SLUICE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// A function that acquires the named mutexes (or its object, when none is named) and returns
// holding them.
#define SLUICE_ACQUIRE(...) SLUICE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))

#define SLUICE_ACQUIRE_SHARED(...) SLUICE_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))

// A function that releases the named mutexes (or its object).
#define SLUICE_RELEASE(...) SLUICE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

#define SLUICE_RELEASE_SHARED(...) SLUICE_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))

// A function that fails, at run time in debug builds, unless the named mutex is held; after it
// the analysis takes the mutex as held.
#define SLUICE_ASSERT_CAPABILITY(x) SLUICE_THREAD_ANNOTATION(assert_capability(x))

// A function the analysis does not look into: for the few whose locking it cannot follow, each
// with a comment that says why.
#define SLUICE_NO_THREAD_SAFETY_ANALYSIS SLUICE_THREAD_ANNOTATION(no_thread_safety_analysis)
