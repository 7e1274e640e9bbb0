// Package kernels turns a kernel spec (YAML) into a cached bzImage.
//
// Usage:
//
//	spec, err := kernels.LoadSpec("kernels/stock-6.1.yaml")
//	art, err := kernels.Build(ctx, spec, kernels.Options{Progress: show})
//	// art.BzImage is bootable; art.Cached says whether make was skipped.
//
// A kernel is built from a Debian linux-source tarball: `make tinyconfig`
// (the spec's config.base), the spec's fragments merged in Go, `make
// olddefconfig`, a check that every fragment setting survived, then
// `make bzImage`. Patches (a file, a quilt folder, a git format-patch folder
// or a lore mbox per entry, see package patches) go into a hardlink copy of
// the pristine tree, published only when every patch applied.
//
// A spec's base may instead be a local tree or a git repository at a
// revision (tree.go): it is exported into the cache, never built in, and
// keyed by the git tree id of the exact source.
//
// A spec that extends another is a variant: it builds on a copy of its
// base's work dir, with make run inside a private mount namespace where the
// variant's source and work dir are bind-mounted over the base's paths, so
// that only what its patches change recompiles (reuse.go says why).
//
// Everything lives under one cache root (DefaultCacheDir):
//
//	src/<tarball>-<sha12>/     pristine extracted source, shared by all specs
//	src/<name>-<patch12>/      patched hardlink copy, for specs with patches (tarball + series hash)
//	src/<name>-tree/           export of a tree or git base, patched in place (tree_export.go)
//	trees/                     private git indexes and objects of tree and git bases (tree.go)
//	specs/                     ad-hoc specs written by lab --tree
//	work/<name>/               persistent O= build dir, reused for incremental builds;
//	                           a variant's starts as a copy of its base's
//	kernels/<name>-<key16>/    published artifact: bzImage, config, build.json, vmlinux (PVH boot)
//	index/<inputhash>.json     input hash -> artifact, the no-make fast path
//	stamps/                    memoised tarball hashes
//	ccache/                    CCACHE_DIR
//	debs/                      Debian packages fetched for bases that name a suite (fetch.go)
//	lock                       readers-writer flock: builds share it, GC owns it
//	locks/<kind>.<name>.lock   one flock per kernel, source tree and kselftest build,
//	                           with a note per holder (lock.go)
//
// Artifacts are published with an atomic rename, so readers need no lock;
// a run holds its kernel (Hold) so that GC leaves it. List reports each
// spec's cache state; GC removes what no spec needs. Pack and Unpack move
// built kernels between machines.
//
// Errors split by who is at fault: *BuildError from `make bzImage` is the
// tree's or the host's (a compile error or a killed compiler: no verdict,
// lab run reports ERROR, lab bisect skips); *ConfigMismatchError and
// *PatchError (per-patch results: the file and hunk that failed) are spec
// faults; *MissingToolError, *MissingTarballError and *AuthError (apt
// could not verify a fetched base) are host faults;
// *SpecError points at a line of a spec or fragment file.
package kernels
