// Package images builds what a lab guest boots besides the kernel: the guest
// agent (a static Go binary) and the initramfs holding it as /init.
//
//	img, err := images.Build(ctx, images.Options{CacheDir: dir})
//	// boot img.Path with -initrd
package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/u-root/u-root/pkg/cpio"

	"napilab/kernels"
)

// AgentPackage is the Go package of the guest agent.
const AgentPackage = "napilab/images/agent/cmd/agent"

// Options says where to build and cache.
type Options struct {
	// CacheDir holds images/<hash>.cpio.
	CacheDir string
	// ModuleDir is the napilab module root; found from the working directory when empty.
	ModuleDir string
	// Wait, if set, hears what a build waits for: another lab building the same image.
	Wait func(msg string)
}

// Image is a built initramfs.
type Image struct {
	Path      string // the cpio file
	Hash      string // sha256 of its bytes
	Size      int64
	AgentSize int64
	Cached    bool // true when the cpio was already in the cache
	// release drops the hold BuildDebianImage takes on a composed image.
	release func()
}

// Release drops the hold a composed Debian image comes with (see Hold), so
// that a later prune may remove it; call it once its runs are done. It is a
// no-op for other images.
func (img *Image) Release() {
	if img.release != nil {
		img.release()
		img.release = nil
	}
}

// File is one regular file of an initramfs.
type File struct {
	Name string // path inside the image, without a leading slash
	Data []byte
	Mode uint64 // permission bits
}

// skeleton is the directory tree every image has.
var skeleton = []string{"dev", "proc", "sys", "run", "tmp", "etc", "var", "var/run"}

// Write writes a newc cpio holding the skeleton, /dev/console and files. The
// output depends only on the inputs: times, owners and inodes are zeroed and
// entries are sorted.
func Write(w io.Writer, files []File) error {
	var recs []cpio.Record
	for _, d := range skeleton {
		recs = append(recs, cpio.Directory(d, 0o755))
	}
	recs = append(recs, cpio.CharDev("dev/console", 0o600, 5, 1))
	for _, f := range files {
		recs = append(recs, cpio.StaticRecord(f.Data, cpio.Info{
			Name: strings.TrimPrefix(f.Name, "/"), Mode: cpio.S_IFREG | f.Mode,
		}))
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	cpio.MakeAllReproducible(recs)
	rw := cpio.Newc.Writer(w)
	if err := cpio.WriteRecordsAndDirs(rw, recs); err != nil {
		return fmt.Errorf("failed to write cpio: %w", err)
	}
	return cpio.WriteTrailer(rw)
}

// Build compiles the agent and writes the initramfs into the cache, reusing
// an identical one.
func Build(ctx context.Context, opts Options) (*Image, error) {
	agent, err := BuildAgent(ctx, opts.CacheDir, opts.ModuleDir)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := Write(&buf, []File{{Name: "init", Data: agent, Mode: 0o755}}); err != nil {
		return nil, err
	}
	return storeImage(opts.CacheDir, "initramfs", buf.Bytes(), len(agent))
}

// storeImage puts an image into the cache as images/<prefix>-<hash16>.cpio,
// named by its content, reusing an identical one.
func storeImage(cacheDir, prefix string, data []byte, agentSize int) (*Image, error) {
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	dir := filepath.Join(cacheDir, "images")
	img := &Image{Path: filepath.Join(dir, prefix+"-"+hash[:16]+".cpio"), Hash: hash,
		Size: int64(len(data)), AgentSize: int64(agentSize)}
	if fi, err := os.Stat(img.Path); err == nil && fi.Size() == img.Size {
		img.Cached = true
		return img, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return img, writeAtomic(img.Path, data)
}

// BuildAgent compiles the agent as a static, reproducible binary. Its
// scratch file lives in the cache's images folder, named by this process,
// so that a SIGKILLed lab leaves nothing in /tmp and the next build (or
// lab gc) removes what it left.
func BuildAgent(ctx context.Context, cacheDir, moduleDir string) ([]byte, error) {
	if moduleDir == "" {
		var err error
		if moduleDir, err = ModuleRoot(); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(cacheDir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kernels.RemoveDeadTemps(dir, ".tmp-agent-")
	out, err := os.CreateTemp(dir, kernels.TempPattern(".tmp-agent-"))
	if err != nil {
		return nil, err
	}
	out.Close()
	defer os.Remove(out.Name())
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out.Name(), AgentPackage)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("failed to build the guest agent: %w\n%s", err, msg)
	}
	return os.ReadFile(out.Name())
}

// ModuleRoot finds the napilab module root from the working directory up,
// else above the lab binary (bin/lab of a checkout run from elsewhere).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	starts := []string{dir}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, start := range starts {
		for d := start; ; d = filepath.Dir(d) {
			b, err := os.ReadFile(filepath.Join(d, "go.mod"))
			if err == nil && bytes.HasPrefix(b, []byte("module napilab\n")) {
				return d, nil
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return "", fmt.Errorf("napilab source not found above %s or the lab binary: run lab from the napilab checkout", dir)
}

func writeAtomic(path string, data []byte) error {
	return writeFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeFileAtomic writes path through a temp file beside it, renamed into
// place only when write and close succeeded.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), kernels.TempPattern(".tmp-"))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return kernels.SyncDir(filepath.Dir(path))
}
