package results

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// reportChromium returns the headless browser on PATH, or "".
func reportChromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// reportScreenshot renders page with headless chromium into a PNG of w x h
// and returns its bytes. The browser runs in its own process group, killed
// whole on timeout.
func reportScreenshot(t *testing.T, bin, page string, w, h int) []byte {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot,
		"--window-size="+strconv.Itoa(w)+","+strconv.Itoa(h), "file://"+page)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	b, readErr := os.ReadFile(shot)
	if err != nil || readErr != nil {
		t.Fatalf("chromium: %v; %v\n%s", err, readErr, out)
	}
	return b
}

// TestHTMLScreenshot renders a real run's page in headless chromium and
// checks the picture: a PNG of the window's size with many colours, the
// verdict's green among them. -update keeps it as testdata/report/screenshot.png.
func TestHTMLScreenshot(t *testing.T) {
	bin := reportChromium()
	if bin == "" {
		t.Skip("chromium is not on PATH: skipping the screenshot test (make test installs it; apt-get install chromium)")
	}
	r, samples := reportFixture(t, "load")
	page := filepath.Join(t.TempDir(), ReportFile)
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, r, samples); err != nil {
		t.Fatal(err)
	}
	f.Close()
	const w, h = 1200, 1600
	shot := reportScreenshot(t, bin, page, w, h)
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	colours := map[[3]uint32]bool{}
	green := false
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			// The PASS badge's #2e7d32, give or take colour management.
			if near(r>>8, 0x2e) && near(g>>8, 0x7d) && near(bl>>8, 0x32) {
				green = true
			}
		}
	}
	if len(colours) < 16 {
		t.Errorf("screenshot has %d colours: blank?", len(colours))
	}
	if !green {
		t.Errorf("no PASS green in the screenshot")
	}
	if reportUpdate() {
		if err := os.WriteFile(filepath.Join("testdata", "report", "screenshot.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func near(a, b uint32) bool { return a+12 >= b && b+12 >= a }
