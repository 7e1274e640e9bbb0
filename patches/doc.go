// Package patches reads kernel patch series the way kernel developers keep
// them and checks or applies them to a source tree with GNU patch.
//
// Usage:
//
//	s, err := patches.Load("patches/ksoftirqd-do-its-job") // quilt folder, format-patch folder or file, mbox
//	results, err := patches.Check(ctx, s, "/src/linux-6.12")  // per patch: applies, offset/fuzz, present, conflicts
//	_, err = patches.Apply(ctx, s, "/src/linux-6.12", "/src/linux-6.12-mine")
//
// Load understands four layouts:
//
//   - a quilt folder: a series file (one patch per line, # comments, an
//     optional -pN) next to the patch files;
//   - a folder holding only git format-patch files (0001-*.patch ...), applied
//     in name order, the 0000 cover letter skipped;
//   - one mbox of [PATCH n/m] mails as lore/public-inbox serves it (gzip
//     too): replies and the 0/m cover letter are skipped, only the newest
//     version (v2, v3 ...) is kept and the mails are ordered by n;
//   - a single patch file, with or without mail headers.
//
// Check and Apply never modify the tree they are given: both work in a
// hardlink copy (cp -al). GNU patch writes every patched file to a new file
// and renames it into place, so the pristine inodes stay untouched; a test
// holds that to account. Apply publishes its result with a rename, so the
// destination either holds the fully patched tree or does not exist.
//
// A series is hostile input: the file names it applies are read from the
// diff as GNU patch reads them (Patch.Files), never from patch's output,
// and checked when the series is loaded: relative, clean, no .. component,
// no control characters, no C-quoted names and no git mode that makes a
// symlink. GNU patch itself runs in the build sandbox.
package patches
