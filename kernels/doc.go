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
// `make bzImage`. Everything lives under one cache root (DefaultCacheDir):
//
//	src/<tarball>-<sha12>/     pristine extracted source, shared by all specs
//	src/<name>-<patch12>/      patched copy, for specs with patches
//	work/<name>/               persistent O= build dir, reused for incremental builds
//	kernels/<name>-<key16>/    published artifact: bzImage, config, build.json
//	index/<inputhash>.json     input hash -> artifact, the no-make fast path
//	stamps/                    memoised tarball hashes
//	ccache/                    CCACHE_DIR
//	lock                       flock held while building
//
// Artifacts are published with an atomic rename, so readers need no lock.
//
// Errors split by who is at fault: *BuildError from `make bzImage` is a
// kernel fault (the tree does not compile); *ConfigMismatchError and
// *PatchError are spec faults; *MissingToolError and *MissingTarballError
// are host faults; *SpecError points at a line of a spec or fragment file.
package kernels
