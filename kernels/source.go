package kernels

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// patchedStamp marks a patched source copy as complete.
const patchedStamp = ".napilab-patched"

// prepareSource returns the tree to build: the pristine extraction, or a patched copy of it.
func (b *builder) prepareSource(ctx context.Context) (string, error) {
	pristine, err := b.extract(ctx)
	if err != nil || len(b.in.patchData) == 0 {
		return pristine, err
	}
	return b.patch(ctx, pristine)
}

// extract unpacks the tarball once into src/<base>-<sha12>, atomically.
func (b *builder) extract(ctx context.Context) (string, error) {
	dir := b.layout.pristineDir(b.spec.Base.Tarball, b.in.tarSum)
	if _, err := os.Stat(filepath.Join(dir, "Makefile")); err == nil {
		return dir, nil
	}
	if _, err := os.Stat(dir); err == nil {
		return "", fmt.Errorf("failed to extract source: %s exists but has no Makefile; remove it", dir)
	}
	b.report(PhaseExtract, 0, "")
	if err := os.MkdirAll(b.layout.srcDir(), 0o755); err != nil {
		return "", fmt.Errorf("failed to create source dir: %w", err)
	}
	tmp, err := os.MkdirTemp(b.layout.srcDir(), ".tmp-extract-")
	if err != nil {
		return "", fmt.Errorf("failed to create temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	tarball, err := filepath.Abs(b.spec.Base.Tarball)
	if err != nil {
		return "", fmt.Errorf("failed to resolve tarball: %w", err)
	}
	out, err := run(ctx, command{argv: []string{"tar", "-xf", tarball, "-C", tmp}}, nil)
	if err != nil {
		return "", fmt.Errorf("failed to extract %s: %w\n%s", tarball, err, strings.Join(out, "\n"))
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return "", fmt.Errorf("failed to read extracted tree: %w", err)
	}
	if len(entries) != 1 || !entries[0].IsDir() {
		return "", fmt.Errorf("failed to extract %s: want one top-level dir, got %d entries", tarball, len(entries))
	}
	if err := os.Rename(filepath.Join(tmp, entries[0].Name()), dir); err != nil {
		return "", fmt.Errorf("failed to move source into place: %w", err)
	}
	return dir, nil
}

// patch copies the pristine tree to src/<name>-<patch12> and applies the
// spec's patches in order; the copy is published only if all of them apply.
func (b *builder) patch(ctx context.Context, pristine string) (string, error) {
	dir := filepath.Join(b.layout.srcDir(), b.spec.Name+"-"+b.in.patchHash()[:12])
	if _, err := os.Stat(filepath.Join(dir, patchedStamp)); err == nil {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(b.layout.srcDir(), ".tmp-patch-")
	if err != nil {
		return "", fmt.Errorf("failed to create temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	if out, err := run(ctx, command{argv: []string{"cp", "-a", pristine + "/.", tmp}}, nil); err != nil {
		return "", fmt.Errorf("failed to copy source: %w\n%s", err, strings.Join(out, "\n"))
	}
	for _, p := range b.spec.Patches {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("failed to resolve patch: %w", err)
		}
		argv := []string{"patch", "-p1", "--batch", "--forward", "-i", abs}
		out, err := run(ctx, command{argv: argv, dir: tmp}, nil)
		if err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("failed to apply patch %s: %w", p, ctx.Err())
			}
			return "", &PatchError{Patch: p, Output: strings.Join(out, "\n")}
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("failed to chmod patched source: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, patchedStamp), nil, 0o644); err != nil {
		return "", fmt.Errorf("failed to stamp patched source: %w", err)
	}
	// A dir without the stamp is a leftover of an interrupted publish.
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("failed to remove stale patched source: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("failed to move patched source into place: %w", err)
	}
	return dir, nil
}
