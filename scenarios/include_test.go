package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests run in scenarios/, the shipped scenarios folder.
func init() { ShippedDir = "." }

// openWithin opens dir/main.yaml holding an include line and the base
// scenario, giving up (as a failure) when Open blocks.
func openWithin(t *testing.T, dir, include string) error {
	t.Helper()
	main := filepath.Join(dir, "main.yaml")
	if err := os.WriteFile(main, []byte("# a scenario\ninclude: ["+include+"]\n"+base), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Open(main, nil); done <- err }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("Open blocked on include %s", include)
		return nil
	}
}

// TestIncludeRefused: includes outside the scenario's folder and the
// shipped fragments, through symlinks, of FIFOs or of large files fail at
// the include's line, and a refused file's content never shows.
func TestIncludeRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.yaml")
	os.WriteFile(secret, []byte("topology: {nics: [{name: SECRET-CONTENT}]}\n"), 0o644)
	os.Symlink(secret, filepath.Join(dir, "link.yaml"))
	os.Symlink(filepath.Dir(secret), filepath.Join(dir, "linkdir"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	big, _ := os.Create(filepath.Join(dir, "big.yaml"))
	big.Truncate(MaxFileSize + 1)
	big.Close()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	tests := []struct{ include, want string }{
		{"/etc/passwd", "outside the scenario's folder"},
		{secret, "outside the scenario's folder"},
		{"../" + filepath.Base(filepath.Dir(secret)) + "/secret.yaml", "outside"},
		{"link.yaml", "outside"},
		{"linkdir/secret.yaml", "outside"},
		{"fifo.yaml", "not a regular file"},
		{"sub", "not a regular file"},
		{"big.yaml", "over the limit"},
		{"/dev/zero", "outside"},
		{"{a: b}", "want a file name"},
	}
	for _, tc := range tests {
		t.Run(tc.include, func(t *testing.T) {
			err := openWithin(t, dir, tc.include)
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, filepath.Join(dir, "main.yaml")+":2:") || !strings.Contains(msg, tc.want) {
				t.Errorf("error = %q, want main.yaml:2: ... %s", msg, tc.want)
			}
			if strings.Contains(msg, "SECRET") || strings.Contains(msg, "root:") {
				t.Errorf("error shows a refused file's content: %q", msg)
			}
		})
	}
}

// TestIncludeAllowed: fragments beside the scenario, in a subfolder, and
// the shipped fragments from anywhere.
func TestIncludeAllowed(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "frag"), 0o755)
	os.WriteFile(filepath.Join(dir, "frag", "seed.yaml"), []byte("seed: 7\n"), 0o644)
	shipped, _ := filepath.Abs("fragments/veth-peer.yaml")
	for _, inc := range []string{"frag/seed.yaml", shipped} {
		if err := openWithin(t, dir, inc); err != nil {
			t.Errorf("include %s: %v", inc, err)
		}
	}
}

// TestScenarioName: the name becomes a run folder, so it follows the
// kernel spec names' rule, reported at its line.
func TestScenarioName(t *testing.T) {
	for _, name := range []string{"../../../../tmp/x", "a/b", ".x", "a b"} {
		src := strings.Replace(base, "name: t\n", "# c\nname: "+name+"\n", 1)
		_, err := Parse("x.yaml", []byte(src), nil)
		if err == nil || !strings.Contains(err.Error(), "x.yaml:2:1: bad name") {
			t.Errorf("name %q: error = %v, want x.yaml:2:1: bad name", name, err)
		}
	}
}

// TestShippedDirFound: with no ShippedDir set, a scenario anywhere in a
// project tree (runner/testdata) may include the project's shipped
// scenarios, found upwards; a scenarios folder that is a link is not taken.
func TestShippedDirFound(t *testing.T) {
	saved := ShippedDir
	ShippedDir = ""
	defer func() { ShippedDir = saved }()
	proj := t.TempDir()
	for _, d := range []string{"scenarios/fragments", "runner/testdata"} {
		os.MkdirAll(filepath.Join(proj, d), 0o755)
	}
	os.WriteFile(filepath.Join(proj, "scenarios", "s.yaml"), []byte("seed: 7\n"), 0o644)
	main := filepath.Join(proj, "runner", "testdata", "x.yaml")
	if got, want := shippedDir(main), filepath.Join(proj, "scenarios"); got != want {
		t.Errorf("shippedDir = %s, want %s", got, want)
	}
	if err := openWithin(t, filepath.Dir(main), "../../scenarios/s.yaml"); err != nil {
		t.Errorf("include of a shipped scenario: %v", err)
	}
	evil := t.TempDir()
	os.Symlink(filepath.Join(proj, "scenarios"), filepath.Join(evil, "scenarios"))
	if got := shippedDir(filepath.Join(evil, "x.yaml")); got != "scenarios" {
		t.Errorf("shippedDir through a link = %s, want the working folder's scenarios", got)
	}
}
