package patches

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// seriesFile is the name of a quilt series file.
const seriesFile = "series"

// Load reads the patch series at path, detecting its layout: a quilt folder
// (or its series file), a folder of git format-patch files, an mbox or a
// single patch file. Errors name the file and say what was expected.
func Load(path string) (*Series, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("failed to load patch series: %w", err)
	}
	if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(path, seriesFile)); err == nil {
			return loadQuilt(path, filepath.Join(path, seriesFile))
		}
		return loadFolder(path)
	}
	if filepath.Base(path) == seriesFile {
		return loadQuilt(filepath.Dir(path), path)
	}
	data, err := readPatchFile(path)
	if err != nil {
		return nil, err
	}
	ps, format, err := parseFile(path, data)
	if err != nil {
		return nil, err
	}
	return newSeries(seriesName(path), path, format, ps)
}

// LoadAll loads each path and concatenates the series in order: a list of
// git format-patch files, or several folders applied one after the other.
func LoadAll(paths ...string) (*Series, error) {
	if len(paths) == 0 {
		return nil, errors.New("failed to load patch series: no paths given")
	}
	var all []*Series
	for _, p := range paths {
		s, err := Load(p)
		if err != nil {
			return nil, err
		}
		all = append(all, s)
	}
	out := Concat(all[0].Name, all...)
	out.Path = paths[0]
	return out, nil
}

// loadQuilt reads a quilt series file: one patch per line, relative to dir,
// an optional -pN after it, # starting a comment.
func loadQuilt(dir, seriesPath string) (*Series, error) {
	data, err := os.ReadFile(seriesPath)
	if err != nil {
		return nil, fmt.Errorf("failed to read series file: %w", err)
	}
	var ps []Patch
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		strip := 1
		for _, opt := range fields[1:] {
			n, err := strconv.Atoi(strings.TrimPrefix(opt, "-p"))
			if !strings.HasPrefix(opt, "-p") || err != nil || n < 0 {
				return nil, fmt.Errorf("%s:%d: unsupported option %q, want a patch file name and an optional -pN", seriesPath, line, opt)
			}
			strip = n
		}
		file := filepath.Join(dir, fields[0])
		data, err := readPatchFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", seriesPath, line, err)
		}
		got, _, err := parseFile(file, data)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", seriesPath, line, err)
		}
		if len(got) != 1 {
			return nil, fmt.Errorf("%s:%d: %s holds %d patches, want one patch per series line", seriesPath, line, file, len(got))
		}
		got[0].Strip = strip
		ps = append(ps, got[0])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", seriesPath, err)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("%s: the series file lists no patches", seriesPath)
	}
	return newSeries(filepath.Base(filepath.Clean(dir)), dir, FormatQuilt, ps)
}

// loadFolder reads a folder of git format-patch files in name order.
func loadFolder(dir string) (*Series, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to read patch folder: %w", err)
	}
	var ps []Patch
	for _, e := range entries { // ReadDir sorts by name
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		file := filepath.Join(dir, name)
		fi, err := os.Stat(file) // follows symlinks
		if err != nil {
			return nil, fmt.Errorf("failed to read patch folder: %w", err)
		}
		if !fi.Mode().IsRegular() || !(strings.HasSuffix(name, ".patch") || strings.HasSuffix(name, ".diff")) {
			return nil, fmt.Errorf("%s: unexpected %s in a patch folder: want a quilt %q file or only git format-patch files (*.patch, *.diff)",
				file, kind(fi.Mode()), seriesFile)
		}
		data, err := readPatchFile(file)
		if err != nil {
			return nil, err
		}
		got, _, err := parseFile(file, data)
		if errors.Is(err, errCoverLetter) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ps = append(ps, got...)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("%s: no patches: want a quilt %q file or git format-patch files (*.patch, *.diff)", dir, seriesFile)
	}
	return newSeries(filepath.Base(filepath.Clean(dir)), dir, FormatFolder, ps)
}

// errCoverLetter marks a file that holds only a 0/m cover letter.
var errCoverLetter = errors.New("only a cover letter")

// parseFile turns one file into patches: the mails of an mbox, or one patch.
func parseFile(file string, data []byte) ([]Patch, Format, error) {
	if mails := splitMbox(data); mails != nil {
		ps, err := patchesFromMails(file, mails)
		return ps, FormatMbox, err
	}
	p, err := parsePlain(file, data)
	if err != nil {
		return nil, "", err
	}
	return []Patch{p}, FormatDiff, nil
}

// readPatchFile reads a patch file, gunzipping it if needed (lore serves t.mbox.gz).
func readPatchFile(file string) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("patch file %s not found", file)
		}
		return nil, fmt.Errorf("failed to read patch file: %w", err)
	}
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("failed to gunzip %s: %w", file, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("failed to gunzip %s: %w", file, err)
	}
	return out, nil
}

// newSeries numbers the patches, fills in the default strip level and
// checks the file names each patch gives (Patch.Files): a series that
// names a file lab must not write is refused when it is loaded.
func newSeries(name, path string, format Format, ps []Patch) (*Series, error) {
	for i := range ps {
		ps[i].Index = i + 1
		if ps[i].Strip == 0 && format != FormatQuilt {
			ps[i].Strip = 1
		}
		if _, err := ps[i].Files(); err != nil {
			return nil, fmt.Errorf("failed to load patch series: %w", err)
		}
	}
	return &Series{Name: name, Path: path, Format: format, Patches: ps}, nil
}

// seriesName is a file's name without patch-ish extensions.
func seriesName(path string) string {
	name := filepath.Base(path)
	for _, ext := range []string{".gz", ".mbox", ".mbx", ".eml", ".patch", ".diff"} {
		name = strings.TrimSuffix(name, ext)
	}
	return name
}

// kind names a dir entry type for error messages.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "folder"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	}
	return "special file"
}
