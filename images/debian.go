package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/u-root/u-root/pkg/cpio"

	"napilab/internal/safefs"
	"napilab/kernels"
)

// debianFormat versions the Debian image recipe; bump it when Trim or the
// archive layout changes.
const debianFormat = "napilab-debian-1"

// Debian says which Debian userspace to bootstrap for a guest.
type Debian struct {
	// Suite is the release, e.g. bookworm (the host's own is the safe choice:
	// selftests built on the host link against its libc).
	Suite string
	// Mirror is the archive URL debootstrap downloads from.
	Mirror string
	// Packages are installed on top of debootstrap's minbase variant.
	Packages []string
}

// KselftestPackages are what the net selftests run (bash scripts around
// iproute2, ethtool, socat, python3, mausezahn from netsniff-ng for the
// forwarding library...) plus the shared libraries of the
// selftest binaries built on the host.
var KselftestPackages = []string{
	"bash", "bc", "bridge-utils", "ethtool", "iproute2", "iptables", "iputils-ping", "jq", "kmod",
	"ncat", "netcat-openbsd", "netsniff-ng", "nftables", "procps", "psmisc", "python3", "socat", "tcpdump",
	"traceroute", "libnuma1", "libcap2", "libssl3", "libmnl0",
}

// DefaultDebian is bookworm (the lab hosts' release) with KselftestPackages,
// from NAPILAB_DEBIAN_MIRROR, else the host's own apt mirror, else
// deb.debian.org.
func DefaultDebian() Debian {
	mirror := os.Getenv("NAPILAB_DEBIAN_MIRROR")
	if mirror == "" {
		mirror = hostMirror("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list")
	}
	return Debian{Suite: "bookworm", Mirror: mirror, Packages: KselftestPackages}
}

// hostMirror is the first main Debian archive URL in the apt sources files
// (deb822 "URIs:" or one-line "deb URL suite"), or deb.debian.org.
func hostMirror(files ...string) string {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			var url string
			switch {
			case len(fields) >= 2 && fields[0] == "URIs:":
				url = fields[1]
			case len(fields) >= 3 && fields[0] == "deb" && !strings.HasPrefix(fields[1], "["):
				url = fields[1]
			}
			if strings.HasPrefix(url, "http") && !strings.Contains(url, "security") {
				return strings.TrimSuffix(url, "/")
			}
		}
	}
	return "http://deb.debian.org/debian"
}

// key identifies the bootstrapped tree. The mirror is left out: any mirror
// of the suite serves the same packages.
func (d Debian) key() string {
	pkgs := slices.Clone(d.Packages)
	slices.Sort(pkgs)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", debianFormat, d.Suite, strings.Join(slices.Compact(pkgs), ","))
	return hex.EncodeToString(h.Sum(nil))
}

// Rootfs is a Debian userspace written as a cpio (no /init: an overlay
// archive concatenated after it adds the agent, see Compose).
type Rootfs struct {
	Path    string  // the cpio
	Size    int64   // bytes
	Files   int     // entries in the archive
	Seconds float64 // debootstrap + trim + cpio, 0 when cached
	Cached  bool
	// Manifest is the file listing every installed package and version.
	Manifest string
}

// trimmed are removed from the tree before archiving: documentation,
// translations and apt's caches, which a guest without network never uses.
var trimmed = []string{"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale",
	"var/cache/apt", "var/lib/apt/lists", "var/cache/debconf", "var/log"}

// BuildDebian bootstraps d with debootstrap (as root, inside a private mount
// namespace so nothing it mounts can outlive it), trims it and archives it
// into the cache, reusing an archive built from the same suite and packages.
// The debootstrap log is kept beside the archive.
func BuildDebian(ctx context.Context, opts Options, d Debian) (*Rootfs, error) {
	key := d.key()[:16]
	dir := filepath.Join(opts.CacheDir, "images")
	out := &Rootfs{Path: filepath.Join(dir, "debian-"+d.Suite+"-"+key+".cpio"),
		Manifest: filepath.Join(dir, "debian-"+d.Suite+"-"+key+".packages")}
	if fi, err := os.Stat(out.Path); err == nil {
		out.Size, out.Cached = fi.Size(), true
		return out, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("building the Debian image needs root (debootstrap)")
	}
	for _, tool := range []string{"debootstrap", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("building the Debian image needs %s: apt-get install debootstrap util-linux", tool)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	unlock, err := kernels.LockKey(ctx, opts.CacheDir, "image", filepath.Base(out.Path), "being bootstrapped", opts.Wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if fi, err := os.Stat(out.Path); err == nil { // built while we waited
		out.Size, out.Cached = fi.Size(), true
		return out, nil
	}
	start := time.Now()
	tree, err := os.MkdirTemp(dir, kernels.TempPattern(".debootstrap-"))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tree)
	logPath := filepath.Join(dir, "debian-"+d.Suite+"-"+key+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	argv := []string{"unshare", "--mount", "--propagation", "private", "debootstrap", "--variant=minbase"}
	if len(d.Packages) > 0 {
		argv = append(argv, "--include="+strings.Join(d.Packages, ","))
	}
	argv = append(argv, d.Suite, tree, d.Mirror)
	fmt.Fprintf(log, "$ %s\n", strings.Join(argv, " "))
	tail, err := kernels.RunCommand(ctx, kernels.Command{Argv: argv, Log: log})
	if err != nil {
		return nil, fmt.Errorf("debootstrap %s from %s failed: %w (log: %s)\n%s", d.Suite, d.Mirror, err, logPath,
			strings.Join(tail[max(0, len(tail)-5):], "\n"))
	}
	if err := writeManifest(ctx, tree, out.Manifest); err != nil {
		return nil, err
	}
	for _, t := range trimmed {
		if err := clearDir(filepath.Join(tree, t)); err != nil {
			return nil, err
		}
	}
	if out.Files, err = archiveTree(tree, out.Path); err != nil {
		return nil, err
	}
	fi, err := os.Stat(out.Path)
	if err != nil {
		return nil, err
	}
	out.Size, out.Seconds = fi.Size(), time.Since(start).Seconds()
	return out, nil
}

// writeManifest records `dpkg-query -W` of the tree.
func writeManifest(ctx context.Context, tree, path string) error {
	cmd := exec.CommandContext(ctx, "dpkg-query", "--admindir="+filepath.Join(tree, "var/lib/dpkg"), "-W")
	data, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("failed to list the image's packages: %w", err)
	}
	return writeAtomic(path, data)
}

// clearDir removes what dir holds but keeps dir.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// archiveTree writes tree as a newc cpio at path, in lexical order, with
// owners, modes and hard links kept, times zeroed; /dev is left empty (the
// agent mounts devtmpfs) apart from the console the kernel opens before /init.
// It returns the number of entries.
func archiveTree(tree, path string) (int, error) {
	n := 0
	err := writeFileAtomic(path, func(w io.Writer) (err error) {
		n, err = writeTree(w, tree)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("failed to archive %s: %w", tree, err)
	}
	return n, nil
}

func writeTree(w io.Writer, tree string) (int, error) {
	rw := cpio.Newc.Writer(w)
	n, err := appendTree(rw, cpio.NewRecorder(), tree, "")
	if err != nil {
		return 0, err
	}
	return n, cpio.WriteTrailer(rw)
}

// appendTree writes tree's entries under prefix ("" for the root).
func appendTree(rw cpio.RecordWriter, rec *cpio.Recorder, tree, prefix string) (int, error) {
	n := 0
	err := filepath.WalkDir(tree, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tree, p)
		if err != nil || rel == "." {
			return err
		}
		if t := e.Type(); t&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0 {
			return nil
		}
		r, err := rec.GetRecord(p)
		if err != nil {
			return err
		}
		r.Name, r.MTime, r.Dev, r.Major, r.Minor = filepath.Join(prefix, rel), 0, 0, 0, 0
		n++
		if err := rw.WriteRecord(r); err != nil {
			return err
		}
		if r.Name == "dev" {
			n++
			return rw.WriteRecord(cpio.CharDev("dev/console", 0o600, 5, 1))
		}
		return nil
	})
	return n, err
}

// Tree is a host folder copied into an image under Prefix.
type Tree struct {
	Dir    string
	Prefix string // path inside the image, e.g. "kselftest"
}

// maxComposed is how many composed Debian images the cache keeps (each is
// the rootfs plus an overlay, a few hundred MB).
const maxComposed = 4

// BuildDebianImage returns an initramfs made of the Debian rootfs archive
// followed by an overlay archive holding the agent as /init and the trees.
// The kernel unpacks concatenated archives in order, so the overlay lands on
// top of the rootfs. Debian is booted as an initramfs, not a disk: the lab
// kernels need no block driver or filesystem for it, the image is the same
// kind of file the agent-only guests boot, and nothing is mounted on the host
// to build it; the cost is guest RAM (the tree lives in the page cache).
func BuildDebianImage(ctx context.Context, opts Options, d Debian, trees []Tree) (*Image, *Rootfs, error) {
	rootfs, err := BuildDebian(ctx, opts, d)
	if err != nil {
		return nil, nil, err
	}
	agent, err := BuildAgent(ctx, opts.CacheDir, opts.ModuleDir)
	if err != nil {
		return nil, nil, err
	}
	var overlay bytes.Buffer
	rw := cpio.Newc.Writer(&overlay)
	if err := rw.WriteRecord(cpio.StaticFile("init", string(agent), 0o755)); err != nil {
		return nil, nil, err
	}
	rec := cpio.NewRecorder()
	for _, t := range trees {
		if err := rw.WriteRecord(cpio.Directory(t.Prefix, 0o755)); err != nil {
			return nil, nil, err
		}
		if _, err := appendTree(rw, rec, t.Dir, t.Prefix); err != nil {
			return nil, nil, fmt.Errorf("failed to archive %s: %w", t.Dir, err)
		}
	}
	if err := cpio.WriteTrailer(rw); err != nil {
		return nil, nil, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", filepath.Base(rootfs.Path))
	h.Write(overlay.Bytes())
	hash := hex.EncodeToString(h.Sum(nil))
	dir := filepath.Join(opts.CacheDir, "images")
	img := &Image{Path: filepath.Join(dir, "debian-img-"+hash[:16]+".cpio"), Hash: hash,
		Size: rootfs.Size + int64(overlay.Len()), AgentSize: int64(len(agent))}
	if err := publishComposed(ctx, img, rootfs.Path, overlay.Bytes()); err != nil {
		return nil, nil, err
	}
	return img, rootfs, nil
}

// publishComposed writes img (rootfs then overlay) unless an intact copy is
// cached, holds it (see Hold) and prunes older composed images, all under
// the images lock, so that no prune removes it between its making and its hold.
func publishComposed(ctx context.Context, img *Image, rootfs string, overlay []byte) error {
	dir := filepath.Dir(img.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	unlock, err := kernels.LockFile(ctx, imagesLock(dir))
	if err != nil {
		return err
	}
	defer unlock()
	if fi, err := os.Stat(img.Path); err == nil && fi.Size() == img.Size {
		img.Cached = true
		now := time.Now()
		os.Chtimes(img.Path, now, now) // keep it among the newest
	} else if err := concat(img.Path, rootfs, overlay); err != nil {
		return err
	}
	if img.release, err = Hold(img.Path); err != nil {
		return err
	}
	pruneComposed(dir, maxComposed)
	return nil
}

// concat writes the file at first followed by rest to path, atomically.
func concat(path, first string, rest []byte) error {
	in, err := os.Open(first)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeFileAtomic(path, func(w io.Writer) error {
		if _, err := io.Copy(w, in); err != nil {
			return err
		}
		_, err := w.Write(rest)
		return err
	})
}

// builtinModules writes lib/modules/<release> for a kernel without modules
// into a temp dir: kbuild's modules.builtin files and depmod's indexes of
// them, so that `modprobe nf_defrag_ipv6` in a selftest succeeds for what is
// built in. It returns the modules dir (to go to usr/lib/modules), or ""
// when the artifact lacks the files (older builds); the caller removes tmp.
// The release must pass kernels.ParseRelease, and the files are written
// beneath tmp whatever it says.
func builtinModules(ctx context.Context, kernelDir, tmp string) (string, error) {
	files := map[string][]byte{}
	for _, f := range []string{kernels.ReleaseFile, kernels.BuiltinFile, kernels.BuiltinModinfoFile} {
		data, err := os.ReadFile(filepath.Join(kernelDir, f))
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("failed to read %s: %w", f, err)
		}
		files[f] = data
	}
	release, err := kernels.ParseRelease(files[kernels.ReleaseFile])
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(kernelDir, kernels.ReleaseFile), err)
	}
	for _, f := range []string{kernels.BuiltinFile, kernels.BuiltinModinfoFile} {
		rel := filepath.Join("lib", "modules", release, f)
		if err := safefs.WriteBeneath(tmp, rel, files[f], 0o644); err != nil {
			return "", fmt.Errorf("failed to write %s: %w", rel, err)
		}
	}
	depmod, err := exec.LookPath("depmod")
	if err != nil {
		return "", fmt.Errorf("indexing built-in modules needs depmod: apt-get install kmod")
	}
	if out, err := exec.CommandContext(ctx, depmod, "-b", tmp, release).CombinedOutput(); err != nil {
		return "", fmt.Errorf("depmod: %w\n%s", err, out)
	}
	return filepath.Join(tmp, "lib", "modules"), nil
}

// KselftestDir is where the Debian image holds the installed kselftests.
const KselftestDir = "kselftest"

// BuildGuestImage is the Debian image for a kernel: BuildDebianImage with
// the kernel's built-in module index (kernelDir, a kernels artifact dir) and,
// when selftestsDir is set, the installed kselftests under /kselftest.
func BuildGuestImage(ctx context.Context, opts Options, d Debian, kernelDir, selftestsDir string) (*Image, *Rootfs, error) {
	var trees []Tree
	if selftestsDir != "" {
		trees = append(trees, Tree{Dir: selftestsDir, Prefix: KselftestDir})
	}
	tmp, err := os.MkdirTemp("", kernels.TempPattern("napilab-modules-"))
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	mods, err := builtinModules(ctx, kernelDir, tmp)
	if err != nil {
		return nil, nil, err
	}
	if mods != "" {
		trees = append(trees, Tree{Dir: mods, Prefix: "usr/lib/modules"})
	}
	return BuildDebianImage(ctx, opts, d, trees)
}
