package kernels

// Unpack reads an archive from Pack as untrusted input. It writes only
// regular files, into a fresh temp dir under <root>/kernels that it made
// itself (so no symlink can be there), named as the manifest says; every
// entry is checked against the manifest (name, type, size, sha256) before
// it is written or kept; nothing reaches the cache until the whole archive
// checked out. Only regular files are written: no links, devices, dirs,
// sparse files (any PAX record but path and times), no name twice, at most
// maxPackedTotal bytes in all, and only when the cache's filesystem has
// that much free. Then each artifact's build.json must agree with its dir
// name, its key, the manifest and every file's sha256, and its
// kernel.release must be a valid release (it becomes a path). Given specs,
// each kernel must also be what those specs build on this machine: same
// input hash, same key.
//
// What this does not prove: that the builder was honest. Without specs the
// archive's own input hashes become index entries, so only unpack archives
// you would boot; with specs, a kernel is used only for inputs that match
// this machine's exactly.

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

var (
	// maxPackedFile bounds one file of an archive.
	maxPackedFile int64 = 1 << 30
	// maxPackedTotal bounds all files of an archive: 32 debug kernels
	// (bzImage ~10 MB, vmlinux a few 100 MB) fit.
	maxPackedTotal int64 = 8 << 30
	// maxPackedKernels bounds the kernels of an archive.
	maxPackedKernels = 32
	// freeSpace returns the bytes free to lab in dir's filesystem.
	freeSpace = statfsFree
)

// maxPackedSize bounds the small files of an archive more tightly.
var maxPackedSize = map[string]int64{buildInfoFile: maxManifest, ReleaseFile: maxRelease + 1}

// allowedPAX are the PAX records an entry may carry: Pack's (times, and a
// long path). Go's reader turns a GNU sparse file (GNU.sparse.* records)
// into a regular file of its expanded size, so those, like xattrs, link
// names and owners, are refused.
var allowedPAX = map[string]bool{"path": true, "mtime": true, "atime": true, "ctime": true}

// maxManifest bounds the manifest.
const maxManifest = 1 << 20

var (
	// packNameRe matches a spec name an archive may carry (a flavour's too).
	packNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)
	// sha256Re matches a hex sha256.
	sha256Re = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Unpack installs the kernels of an archive written by Pack into the cache
// and indexes them, so that Build finds them. With specs, every kernel
// must be one of theirs (or a flavour of one) with the same inputs here.
// It returns the installed artifacts; an artifact already cached is kept.
func Unpack(ctx context.Context, r io.Reader, specs []*Spec, opts Options) ([]*Artifact, error) {
	l := layout{opts.CacheDir}
	if l.root == "" {
		l.root = DefaultCacheDir()
	}
	wait := waitFunc(opts, "unpack")
	release, err := l.shareCache(ctx, wait)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := os.MkdirAll(l.kernelsDir(), 0o755); err != nil {
		return nil, fmt.Errorf("failed to create kernels dir: %w", err)
	}
	tmp, err := os.MkdirTemp(l.kernelsDir(), TempPattern(".tmp-unpack-"))
	if err != nil {
		return nil, fmt.Errorf("failed to create temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	m, err := readPack(r, tmp)
	if err != nil {
		return nil, fmt.Errorf("refusing kernel archive: %w", err)
	}
	inputHashes := make([]string, len(m.Kernels))
	for i, k := range m.Kernels {
		a, err := checkUnpacked(filepath.Join(tmp, k.Dir), k)
		if err != nil {
			return nil, fmt.Errorf("refusing kernel archive: %w", err)
		}
		inputHashes[i] = k.InputHash
		if len(specs) > 0 {
			if inputHashes[i], err = checkAgainstSpecs(ctx, l, k, a, specs); err != nil {
				return nil, fmt.Errorf("refusing kernel archive: %w", err)
			}
		}
	}
	var out []*Artifact
	for i, k := range m.Kernels {
		a, err := installUnpacked(ctx, l, filepath.Join(tmp, k.Dir), k, inputHashes[i], wait)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// readPack reads the manifest and writes each file it lists into tmp/<dir>/,
// refusing anything else.
func readPack(r io.Reader, tmp string) (*packManifest, error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("not a kernel archive: %w", err)
	}
	if hdr.Name != packManifestName || hdr.Typeflag != tar.TypeReg || hdr.Size > maxManifest {
		return nil, fmt.Errorf("not a kernel archive: first entry %q, want the %s manifest (at most %d bytes)", hdr.Name, packManifestName, maxManifest)
	}
	if err := checkPAX(hdr); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", packManifestName, err)
	}
	var m packManifest
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("bad %s: %w", packManifestName, err)
	}
	want, err := m.files()
	if err != nil {
		return nil, fmt.Errorf("bad %s: %w", packManifestName, err)
	}
	if err := checkRoom(tmp, want); err != nil {
		return nil, err
	}
	got := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("failed to read archive: %w", err)
		}
		f, err := checkEntry(hdr, want, got)
		if err != nil {
			return nil, err
		}
		if err := writeEntry(tr, tmp, hdr.Name, f); err != nil {
			return nil, err
		}
		got[hdr.Name] = true
	}
	var missing []string
	for name := range want {
		if !got[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("archive lacks %s, which its manifest lists", strings.Join(missing, ", "))
	}
	return &m, nil
}

// files checks the manifest and returns the entries it expects, by archive path.
func (m *packManifest) files() (map[string]packedFile, error) {
	if m.Format != packFormat {
		return nil, fmt.Errorf("format %q, want %q", m.Format, packFormat)
	}
	if len(m.Kernels) == 0 || len(m.Kernels) > maxPackedKernels {
		return nil, fmt.Errorf("%d kernels, want 1 to %d", len(m.Kernels), maxPackedKernels)
	}
	want := map[string]packedFile{}
	for _, k := range m.Kernels {
		switch {
		case !packNameRe.MatchString(k.Spec):
			return nil, fmt.Errorf("bad spec name %q", k.Spec)
		case !sha256Re.MatchString(k.Key) || !sha256Re.MatchString(k.InputHash):
			return nil, fmt.Errorf("kernel %s: key and input hash must be 64 hex digits", k.Spec)
		case k.Dir != k.Spec+"-"+k.Key[:16]:
			return nil, fmt.Errorf("kernel %s: dir %q, want %q", k.Spec, k.Dir, k.Spec+"-"+k.Key[:16])
		}
		names := map[string]bool{}
		for _, f := range k.Files {
			p := k.Dir + "/" + f.Name
			switch {
			case !slices.Contains(packedFiles, f.Name):
				return nil, fmt.Errorf("kernel %s: unexpected file %q", k.Spec, f.Name)
			case !sha256Re.MatchString(f.SHA256):
				return nil, fmt.Errorf("%s: bad sha256 %q", p, f.SHA256)
			case f.Size < 0 || f.Size > maxPackedFile:
				return nil, fmt.Errorf("%s: %d bytes, over the %d-byte limit", p, f.Size, maxPackedFile)
			case maxPackedSize[f.Name] > 0 && f.Size > maxPackedSize[f.Name]:
				return nil, fmt.Errorf("%s: %d bytes, over the %d-byte limit", p, f.Size, maxPackedSize[f.Name])
			}
			if _, dup := want[p]; dup {
				return nil, fmt.Errorf("%s listed twice", p)
			}
			want[p], names[f.Name] = f, true
		}
		for _, name := range packedFiles[:3] {
			if !names[name] {
				return nil, fmt.Errorf("kernel %s: no %s", k.Spec, name)
			}
		}
	}
	return want, nil
}

// checkEntry refuses an entry that is not a regular file the manifest lists,
// with the size it gives, seen for the first time.
func checkEntry(hdr *tar.Header, want map[string]packedFile, got map[string]bool) (packedFile, error) {
	name := hdr.Name
	if hdr.Typeflag != tar.TypeReg {
		return packedFile{}, fmt.Errorf("entry %q is a %s, want a regular file", name, typeName(hdr.Typeflag))
	}
	if err := checkPAX(hdr); err != nil {
		return packedFile{}, err
	}
	if path.IsAbs(name) || path.Clean(name) != name || slices.Contains(strings.Split(name, "/"), "..") {
		return packedFile{}, fmt.Errorf("entry %q: not a plain relative path", name)
	}
	f, ok := want[name]
	switch {
	case !ok:
		return f, fmt.Errorf("entry %q is not in the manifest", name)
	case got[name]:
		return f, fmt.Errorf("entry %q comes twice", name)
	case hdr.Size > maxPackedFile:
		return f, fmt.Errorf("entry %q: %d bytes, over the %d-byte limit", name, hdr.Size, maxPackedFile)
	case hdr.Size != f.Size:
		return f, fmt.Errorf("entry %q: %d bytes, the manifest says %d", name, hdr.Size, f.Size)
	}
	return f, nil
}

// checkPAX refuses an entry with a PAX record Pack does not write.
func checkPAX(hdr *tar.Header) error {
	var bad []string
	for k := range hdr.PAXRecords {
		if !allowedPAX[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("entry %q has PAX records %s: sparse files, links and extended attributes are refused", hdr.Name, strings.Join(bad, ", "))
	}
	return nil
}

// checkRoom refuses an archive whose files total more than maxPackedTotal
// or more than dir's filesystem has free, before anything is written.
func checkRoom(dir string, want map[string]packedFile) error {
	var total int64
	for _, f := range want {
		total += f.Size // each at most maxPackedFile, at most 32*7 of them: no overflow
	}
	if total > maxPackedTotal {
		return fmt.Errorf("its files total %s, over the %s limit", sizeString(total), sizeString(maxPackedTotal))
	}
	free, err := freeSpace(dir)
	if err != nil {
		return fmt.Errorf("failed to check free space in %s: %w", dir, err)
	}
	if uint64(total) > free {
		return fmt.Errorf("not enough space to unpack the kernel archive: it needs %s in %s, which has %s free", sizeString(total), filepath.Dir(dir), sizeString(int64(min(free, 1<<62))))
	}
	return nil
}

// statfsFree returns the bytes an unprivileged user may still write in
// dir's filesystem (lab keeps root's reserve for the host).
func statfsFree(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// sizeString formats a byte count for messages.
func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// typeName names a tar entry type for errors.
func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeDir:
		return "directory"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "fifo"
	}
	return fmt.Sprintf("entry of type %q", t)
}

// writeEntry writes one checked entry to tmp/<name> (a new file in a dir
// made here) and checks its sha256.
func writeEntry(r io.Reader, tmp, name string, f packedFile) error {
	dir, file := path.Split(name)
	if err := os.Mkdir(filepath.Join(tmp, dir), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("failed to unpack %s: %w", name, err)
	}
	out, err := os.OpenFile(filepath.Join(tmp, dir, file), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("failed to unpack %s: %w", name, err)
	}
	defer out.Close()
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(out, h), r, f.Size); err != nil {
		return fmt.Errorf("failed to unpack %s: %w", name, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return fmt.Errorf("entry %q: sha256 %.12s, the manifest says %.12s", name, got, f.SHA256)
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("failed to unpack %s: %w", name, err)
	}
	return out.Close()
}

// checkUnpacked loads an unpacked artifact (which checks its release) and
// checks its build record against the manifest and every file's sha256.
func checkUnpacked(dir string, k packedKernel) (*Artifact, error) {
	a, err := loadArtifact(dir)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", k.Spec, err)
	}
	if a.Key != k.Key || a.Info.Spec != k.Spec {
		return nil, fmt.Errorf("kernel %s: build.json says spec %q key %.16s, the manifest spec %q key %.16s", k.Spec, a.Info.Spec, a.Key, k.Spec, k.Key)
	}
	if a.Info.Files == nil {
		return nil, fmt.Errorf("kernel %s: %w", k.Spec, errOldRecord)
	}
	listed := map[string]bool{}
	for _, f := range k.Files {
		if f.Name == buildInfoFile {
			continue
		}
		listed[f.Name] = true
		rec, ok := a.Info.Files[f.Name]
		if !ok {
			return nil, fmt.Errorf("kernel %s: %s is in the manifest but not in build.json", k.Spec, f.Name)
		}
		if rec != (FileSum{Size: f.Size, SHA256: f.SHA256}) {
			return nil, fmt.Errorf("kernel %s: %s: build.json says sha256 %.12s (%d bytes), the manifest %.12s (%d bytes)", k.Spec, f.Name, rec.SHA256, rec.Size, f.SHA256, f.Size)
		}
	}
	for name := range a.Info.Files {
		if !listed[name] {
			return nil, fmt.Errorf("kernel %s: build.json records %s, which the manifest does not list", k.Spec, name)
		}
	}
	if err := a.checkSum(); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", k.Spec, err)
	}
	return a, nil
}

// checkAgainstSpecs finds the spec (or flavour of one) k was built from and
// checks that this machine's inputs for it give k's input hash and key. It
// returns this machine's input hash.
func checkAgainstSpecs(ctx context.Context, l layout, k packedKernel, a *Artifact, specs []*Spec) (string, error) {
	fl, err := ParseFlavour(k.Flavour)
	if err != nil {
		return "", fmt.Errorf("kernel %s: %w", k.Spec, err)
	}
	var spec *Spec
	var names []string
	for _, s := range specs {
		f := s.Flavoured(fl)
		names = append(names, f.Name)
		if f.Name == k.Spec {
			spec = f
		}
	}
	if spec == nil {
		return "", fmt.Errorf("kernel %s is none of the specs given (%s)", k.Spec, strings.Join(names, ", "))
	}
	in, err := resolveInputs(ctx, l, spec)
	if err != nil {
		return "", fmt.Errorf("kernel %s: %w", k.Spec, err)
	}
	config, err := os.ReadFile(a.Config)
	if err != nil {
		return "", fmt.Errorf("kernel %s: %w", k.Spec, err)
	}
	var why []string
	if in.tarSum != a.Info.BaseSHA256 {
		why = append(why, fmt.Sprintf("source tarball sha256 %.12s here, %.12s in the archive", in.tarSum, a.Info.BaseSHA256))
	}
	if in.compiler != a.Info.Compiler {
		why = append(why, fmt.Sprintf("compiler %q here, %q in the archive", in.compiler, a.Info.Compiler))
	}
	switch {
	case in.key(config) != k.Key:
		why = append(why, "its key is not what this machine's inputs give for its config")
	case in.hash() != k.InputHash:
		why = append(why, "it was built from other inputs (fragments, patches, config base or ccache use)")
	}
	if len(why) > 0 {
		return "", fmt.Errorf("kernel %s does not match %s on this machine: %s", k.Spec, spec.Path, strings.Join(why, "; "))
	}
	return in.hash(), nil
}

// installUnpacked moves a checked artifact into the cache under its spec's
// lock (an identical one already there is kept) and indexes it.
func installUnpacked(ctx context.Context, l layout, src string, k packedKernel, inputHash string, wait func(string)) (*Artifact, error) {
	unlock, err := l.lockKey(ctx, kernelKey, k.Spec, "being unpacked", false, wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	dst := filepath.Join(l.kernelsDir(), k.Dir)
	a, err := loadArtifact(dst)
	if err == nil && a.Key == k.Key && a.checkSum() == nil {
		a.Cached = true
	} else {
		if err := os.RemoveAll(dst); err != nil {
			return nil, fmt.Errorf("failed to remove damaged %s: %w", dst, err)
		}
		if err := os.Rename(src, dst); err != nil {
			return nil, fmt.Errorf("failed to install %s: %w", dst, err)
		}
		if err := SyncDir(l.kernelsDir()); err != nil {
			return nil, fmt.Errorf("failed to install %s: %w", dst, err)
		}
		if a, err = loadArtifact(dst); err != nil {
			return nil, err
		}
	}
	if err := writeIndex(l, inputHash, a); err != nil {
		return nil, err
	}
	return a, nil
}
